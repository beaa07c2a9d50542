"""Complex tensors through numpy's functions, right everywhere: values against numpy, and
derivatives against JAX (complex128, tests/data/complex_jax.json, recorded by
tests/data/complex_jax.py) in pforjac's convention, JAX's (docs/numpy.md, "Complex numbers"):
the gradient of a real f at z = x + iy is df/dx - i df/dy, a vjp takes no conjugate. Every
path: pj.grad, a tape's pfor and while-loop Jacobians, forward mode, pj.function."""
import json
import pathlib

import numpy as np
import pytest

import pforjac as pj

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "complex_jax.json").read_text())


def _c(pair):
    return np.array(pair["re"]) + 1j * np.array(pair["im"])


Z, W, T = _c(DATA["z"]), _c(DATA["w"]), _c(DATA["t"])
REAL = {k: v for k, v in DATA["cases"].items() if "grad" in v}
COMPLEX = {k: v for k, v in DATA["cases"].items() if "vjp" in v}


def _fn(expr):
    return lambda z: eval(expr, {"xp": np, "w": W, "z": z})


def _np(v):
    return v.numpy() if isinstance(v, pj.Tensor) else np.asarray(v)


def _tape_gradient(f, z, pfor):
    x = pj.constant(z)
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = f(x)
    return g.jacobian(y, x, experimental_use_pfor=pfor)


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_functions_of_complex_tensors_match_jax(name):
    case = REAL[name]
    f = _fn(case["expr"])
    assert np.isclose(_np(f(pj.constant(Z))), case["value"], rtol=1e-12)
    assert np.isclose(f(Z), case["value"], rtol=1e-12)          # numpy's own value too
    want = _c(case["grad"])
    paths = {"grad": pj.grad(f)(Z), "pfor": _tape_gradient(f, Z, True),
             "while_loop": _tape_gradient(f, Z, False), "function": pj.function(pj.grad(f))(Z)}
    for path, got in paths.items():
        np.testing.assert_allclose(_np(got), want, rtol=1e-10, atol=1e-12, err_msg=path)
    _, tangent = pj.jvp(f, pj.constant(Z), pj.constant(T))
    np.testing.assert_allclose(_np(tangent), case["jvp"], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_functions_of_complex_tensors_match_jax_vjp_and_jvp(name):
    case = COMPLEX[name]
    f = _fn(case["expr"])
    np.testing.assert_allclose(_np(f(pj.constant(Z))), _c(case["value"]), rtol=1e-12)
    _, pullback = pj.vjp(f, pj.constant(Z), pj.constant(_c(case["cotangent"])))
    np.testing.assert_allclose(_np(pullback), _c(case["vjp"]), rtol=1e-10, atol=1e-12)
    _, tangent = pj.jvp(f, pj.constant(Z), pj.constant(T))
    np.testing.assert_allclose(_np(tangent), _c(case["jvp"]), rtol=1e-10, atol=1e-12)


def test_the_convention_against_central_differences():
    # df/dx - i df/dy of |z|^2 + angle(z), by differences in x and in y separately
    f = _fn("xp.sum(xp.abs(z) ** 2 + xp.angle(z))")
    h, want = 1e-6, np.zeros_like(Z)
    for k in np.ndindex(Z.shape):
        e = np.zeros_like(Z)
        e[k] = h
        dx = (f(Z + e) - f(Z - e)) / (2 * h)
        dy = (f(Z + 1j * e) - f(Z - 1j * e)) / (2 * h)
        want[k] = dx - 1j * dy
    np.testing.assert_allclose(_np(pj.grad(f)(Z)), want, rtol=1e-7)


def test_parts_of_complex_tensors_are_numpys():
    z = pj.constant(Z.astype(np.complex64))
    for fn in (np.real, np.imag, np.conj, np.conjugate, np.angle, lambda v: np.angle(v, True),
               lambda v: v.real, lambda v: v.imag, lambda v: v.conj(), np.abs):
        got, want = fn(z), fn(Z.astype(np.complex64))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(_np(got), want, rtol=1e-6)
    assert hasattr(z, "real") and hasattr(pj.constant(1.0), "imag")
    assert np.real_if_close(pj.constant(np.array([1 + 1e-17j]))).dtype == np.float64


def test_norms_variances_and_products_of_complex_tensors_are_numpys():
    z = pj.constant(Z)
    for fn in (np.linalg.norm, lambda v: np.linalg.norm(v, 1, axis=0), np.var, np.std,
               np.nanvar, np.nanstd, np.cov, np.corrcoef, lambda v: np.vdot(v, W),
               lambda v: np.linalg.vector_norm(v, ord=3, axis=(0, 1)), np.linalg.matrix_norm,
               lambda v: np.vecdot(v, W), lambda v: np.linalg.norm(v, "fro")):
        got, want = fn(z), fn(Z)
        assert got.dtype == np.asarray(want).dtype
        np.testing.assert_allclose(_np(got), want, rtol=1e-12)


def test_functions_numpy_refuses_for_complex_are_refused_by_name():
    z = pj.constant(Z)
    for fn, name in [(lambda v: np.logaddexp(v, v), "logaddexp"),
                     (lambda v: np.logaddexp(v, 1.0), "logaddexp"),
                     (np.isposinf, "isposinf"), (lambda v: np.interp(v, [0.0, 1.0], [1.0, 2.0]), "interp"),
                     (lambda v: np.concatenate([v, v], dtype=np.float64), "concatenate")]:
        with pytest.raises(TypeError, match=name):
            fn(z)
        with pytest.raises(TypeError):
            fn(Z)
    # numpy's var of complex data in a real dtype drops the imaginary parts of the mean alone
    # (with a ComplexWarning): pforjac refuses that cast
    with pytest.raises(TypeError, match="var"):
        np.var(z, dtype=np.float64)
