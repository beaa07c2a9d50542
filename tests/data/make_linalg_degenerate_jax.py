"""Writes linalg_degenerate_jax.json next to this file with JAX float64 (the oracle, never a
dependency): python make_linalg_degenerate_jax.py with an interpreter that has jax."""
import json
import pathlib

import numpy as np


def main():
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(30)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    tied = (q * np.array([1.0, 1.0, 2.5])) @ q.T
    w, a = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    ill = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9 + 1e-8]])
    rank_deficient = jnp.array([[1.0, 0], [0, 0], [0, 0]])
    out = {
        "tied": tied, "W": w, "A": a,
        "expm_jacobian_tied": jax.jacobian(jsl.expm)(jnp.asarray(tied)),
        "expm_hessian_identity": jax.hessian(lambda s: jnp.sum(jsl.expm(s) * w))(jnp.eye(3)),
        "det_hessian_ill": jax.hessian(jnp.linalg.det)(jnp.asarray(ill)),
        "nuclear_hessian": jax.hessian(lambda x: jnp.linalg.norm(x, "nuc"))(jnp.asarray(a)),
        "spectral_grad_rank_deficient": jax.grad(lambda t: jnp.linalg.norm(t, 2))(rank_deficient),
    }
    path = pathlib.Path(__file__).with_name("linalg_degenerate_jax.json")
    path.write_text(json.dumps({k: np.asarray(v).tolist() for k, v in out.items()}))


if __name__ == "__main__":
    main()
