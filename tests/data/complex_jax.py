"""Records tests/data/complex_jax.json with JAX (float64/complex128), the oracle of
tests/test_complex_numpy.py: for each expression of REAL and COMPLEX in `xp` (numpy's names;
jax.numpy here, numpy dispatch on pforjac Tensors there) of a complex array z: the value;
jax.grad and jax.jvp (tangent T) for real results; jax.vjp (cotangent CT) and jax.jvp for
complex ones. Run with the oracle's Python: /work/oracle/bin/python tests/data/complex_jax.py
"""
import json
import pathlib

import numpy as np

Z = [[1 + 2j, -0.5 + 0.3j, 0.7 - 1.1j], [0.2 - 0.4j, -1.3 - 0.6j, 0.9 + 0.8j]]
W = [[0.3 - 0.7j, 1.1 + 0.2j, -0.4 + 0.5j], [0.6 + 0.1j, -0.2 - 0.9j, 0.5 - 0.3j]]
T = [[0.3 + 1.0j, -0.2 + 0.1j, 0.5 - 0.4j], [1.0 + 0.0j, 0.0 + 1.0j, -0.7 + 0.2j]]

REAL = {   # real-valued functions of complex z: value and gradient (JAX's convention)
    "norm": "xp.linalg.norm(z)",
    "norm_fro": "xp.linalg.norm(z, 'fro')",
    "norm_axis1_ord3": "xp.sum(xp.linalg.norm(z, 3, axis=1))",
    "norm_inf": "xp.sum(xp.linalg.norm(z, xp.inf, axis=0))",
    "vector_norm_both_axes_ord1": "xp.linalg.vector_norm(z, ord=1, axis=(0, 1))",
    "matrix_norm_fro": "xp.linalg.matrix_norm(z)",
    "var": "xp.var(z)",
    "std_axis0": "xp.sum(xp.std(z, axis=0))",
    "var_ddof1": "xp.var(z, ddof=1)",
    "nanvar": "xp.nanvar(z)",
    "nanstd_axis1": "xp.sum(xp.nanstd(z, axis=1))",
    "abs_vdot": "xp.abs(xp.vdot(z, w))",
    "real_vdot_self": "xp.real(xp.vdot(z, z))",
    "real_cov": "xp.sum(xp.real(xp.cov(z)) + 2 * xp.imag(xp.cov(z)))",
    "abs_corrcoef": "xp.sum(xp.abs(xp.corrcoef(z, w)))",
    "angle": "xp.sum(xp.angle(z))",
    "angle_deg": "xp.sum(xp.angle(z, deg=True) * xp.real(w))",
    "real_times_imag": "xp.sum(xp.real(z) * xp.imag(z))",
    "conj_product": "xp.real(xp.sum(xp.conj(z) * w))",
    "imag_of_square": "xp.imag(xp.sum(z * z))",
    "abs_squared": "xp.sum(xp.abs(z) ** 2)",
    "real_property": "xp.sum(z.real ** 2 - z.imag)",
    "conj_method": "xp.real(xp.sum(z.conj() * z * w))",
    "vecdot": "xp.real(xp.sum(xp.vecdot(z, w)))",
    "real_and_imag_rejoined": "xp.real(xp.sum((xp.real(z) + 1j * xp.imag(z)) * w))",
    "real_times_complex": "xp.imag(xp.sum(xp.real(z) * w + xp.imag(z) ** 2 * (2 - 1j)))",
}
COMPLEX = {   # complex-valued: value, vjp with CT = conj(W), jvp with tangent T
    "conj": "xp.conj(z) * w",
    "real_part": "xp.real(z) * w",
    "imag_part": "xp.imag(z) * w",
    "vdot": "xp.vdot(z, w) * xp.ones(2)",
    "cov": "xp.cov(z)",
    "exp_conj": "xp.exp(xp.conj(z))",
}


def pair(a):
    a = np.asarray(a)
    return {"re": np.real(a).tolist(), "im": np.imag(a).tolist()}


def record():
    import jax                   # (here: the test suite imports this module, without JAX)
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    z, w, t = (jnp.asarray(np.array(v)) for v in (Z, W, T))
    cases = {}
    for name, expr in REAL.items():
        f = lambda z: eval(expr, {"xp": jnp, "w": w, "z": z})   # noqa: E731
        cases[name] = {"expr": expr, "value": float(f(z)), "grad": pair(jax.grad(f)(z)),
                       "jvp": float(jax.jvp(f, (z,), (t,))[1])}
    for name, expr in COMPLEX.items():
        f = lambda z: eval(expr, {"xp": jnp, "w": w, "z": z})   # noqa: E731
        value, pullback = jax.vjp(f, z)
        ct = jnp.conj(jnp.broadcast_to(w, value.shape) if value.shape == w.shape
                      else jnp.ones(value.shape) * (0.4 - 0.9j))
        _, tangent = jax.jvp(f, (z,), (t,))
        cases[name] = {"expr": expr, "value": pair(value), "cotangent": pair(ct),
                       "vjp": pair(pullback(ct)[0]), "jvp": pair(tangent)}
    return {"_recorded_with": f"JAX {jax.__version__}, jax_enable_x64: tests/data/complex_jax.py",
            "z": pair(Z), "w": pair(W), "t": pair(T), "cases": cases}


if __name__ == "__main__":
    out = pathlib.Path(__file__).with_suffix(".json")
    out.write_text(json.dumps(record(), indent=1))
    print(f"wrote {out}")
