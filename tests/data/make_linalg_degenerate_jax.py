"""Computes tests/data/linalg_degenerate_jax.json with JAX float64 (the oracle)."""
import json, numpy as np, jax, jax.numpy as jnp, jax.scipy.linalg as jsl
jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(30)
q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
tied = (q * np.array([1.0, 1.0, 2.5])) @ q.T
W = rng.standard_normal((3, 3))
A = rng.standard_normal((3, 3))
ill = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9 + 1e-8]])
out = {
    "tied": tied.tolist(), "W": W.tolist(), "A": A.tolist(),
    "expm_jacobian_tied": np.asarray(jax.jacobian(jsl.expm)(jnp.asarray(tied))).tolist(),
    "expm_hessian_identity": np.asarray(jax.hessian(lambda s: jnp.sum(jsl.expm(s) * W))(jnp.eye(3))).tolist(),
    "det_hessian_ill": np.asarray(jax.hessian(jnp.linalg.det)(jnp.asarray(ill))).tolist(),
    "nuclear_hessian": np.asarray(jax.hessian(lambda a: jnp.linalg.norm(a, "nuc"))(jnp.asarray(A))).tolist(),
    "spectral_grad_rank_deficient": np.asarray(jax.grad(lambda t: jnp.linalg.norm(t, 2))(
        jnp.array([[1.0, 0], [0, 0], [0, 0]]))).tolist(),
}
json.dump(out, open(__file__.replace("make_linalg_degenerate_jax.py", "linalg_degenerate_jax.json"), "w"))
print({k: np.asarray(v).shape for k, v in out.items()})
