"""Writes review10_jax.json next to this file with JAX float64 (the oracle, never a
dependency): python make_review10_jax.py with an interpreter that has jax."""
import json
import pathlib

import numpy as np

X = [0.3, -0.7, 1.5, 0.2]


def main():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)

    def sign_squared(x):      # numpy 2's complex sign z / |z|, through a non-holomorphic chain
        z = x[:2] + 1j * x[2:]
        return jnp.sum(jnp.imag(jnp.sign(z) ** 2 * (2 - 1j)) + jnp.real(jnp.sign(z) * z * z))

    x = jnp.asarray(X)
    out = {"x": X, "sign_grad": jax.grad(sign_squared)(x),
           "sign_hessian": jax.hessian(sign_squared)(x)}
    path = pathlib.Path(__file__).with_name("review10_jax.json")
    path.write_text(json.dumps({k: np.asarray(v).tolist() for k, v in out.items()}))


if __name__ == "__main__":
    main()
