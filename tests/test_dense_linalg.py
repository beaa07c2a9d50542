"""Dense linear algebra (pforjac/ops/dense_linalg.py, matrix_functions.py, numpy/_linalg.py,
scipy/linalg.py): values against numpy and scipy, first and second derivatives against
central differences (pforjac.testing.check_grads) and against JAX's (recorded in
tests/data/linalg_jax.json), batched inputs, pfor and while-loop Jacobians, compiled
functions, numpy's own names on Tensors, and the errors bad inputs raise."""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
import scipy.linalg

import pforjac as pj
from pforjac.scipy import linalg as psl
from pforjac.testing import check_grads

from helpers import no_fallback, pfor_and_loop_jacobians

RNG = np.random.default_rng(2026)


def _spd(*shape):
    x = RNG.normal(size=shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def _square(*shape):
    return RNG.normal(size=shape) + 3 * np.eye(shape[-1])


A, A_BATCH, SPD, SPD_BATCH = _square(4, 4), _square(2, 3, 4, 4), _spd(4, 4), _spd(3, 4, 4)
TALL, WIDE, B_VEC, B_MAT = RNG.normal(size=(5, 3)), RNG.normal(size=(3, 5)), RNG.normal(size=4), \
    RNG.normal(size=(4, 2))


def _same(got, want, rtol=1e-10, atol=1e-12):
    got = got.numpy() if isinstance(got, pj.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# -- values against numpy ----------------------------------------------------------------------
VALUE_CASES = {
    "solve_vector": (lambda m: m.linalg.solve(A, B_VEC)),
    "solve_matrix": (lambda m: m.linalg.solve(A, B_MAT)),
    "solve_batched_broadcast": (lambda m: m.linalg.solve(A_BATCH, RNG_B)),
    "inv": (lambda m: m.linalg.inv(A_BATCH)),
    "det": (lambda m: m.linalg.det(A_BATCH)),
    "slogdet_sign": (lambda m: m.linalg.slogdet(A_BATCH - 3 * np.eye(4))[0]),
    "slogdet_log": (lambda m: m.linalg.slogdet(A_BATCH - 3 * np.eye(4))[1]),
    "cholesky": (lambda m: m.linalg.cholesky(SPD_BATCH)),
    "cholesky_upper": (lambda m: m.linalg.cholesky(SPD_BATCH, upper=True)),
    "eigvalsh_L": (lambda m: m.linalg.eigvalsh(A_BATCH)),
    "eigvalsh_U": (lambda m: m.linalg.eigvalsh(A_BATCH, UPLO="U")),
    "svdvals_tall": (lambda m: m.linalg.svd(TALL, compute_uv=False)),
    "svdvals_batched": (lambda m: m.linalg.svd(A_BATCH, compute_uv=False)),
    "qr_r_abs": (lambda m: abs(m.linalg.qr(TALL, mode="r"))),
    "pinv_tall": (lambda m: m.linalg.pinv(TALL)),
    "pinv_wide_batched": (lambda m: m.linalg.pinv(np.stack([WIDE, 2 * WIDE]))),
    "pinv_rank_deficient": (lambda m: m.linalg.pinv(np.outer(B_VEC, B_VEC), rcond=1e-10)),
    "matrix_power_0": (lambda m: m.linalg.matrix_power(A, 0)),
    "matrix_power_5": (lambda m: m.linalg.matrix_power(A_BATCH, 5)),
    "matrix_power_-3": (lambda m: m.linalg.matrix_power(A, -3)),
    "lstsq_x": (lambda m: m.linalg.lstsq(TALL, RNG_T)[0]),
    "lstsq_residuals": (lambda m: m.linalg.lstsq(TALL, RNG_T)[1]),
    "lstsq_s": (lambda m: m.linalg.lstsq(TALL, RNG_T)[3]),
    "lstsq_wide_x": (lambda m: m.linalg.lstsq(WIDE, B_VEC[:3])[0]),
    "matrix_rank": (lambda m: m.linalg.matrix_rank(np.stack([A, np.outer(B_VEC, B_VEC)]))),
    "multi_dot_vectors": (lambda m: m.linalg.multi_dot([B_VEC, A, A.T, B_MAT])),
    "multi_dot_chain": (lambda m: m.linalg.multi_dot([TALL, WIDE, TALL, WIDE, TALL])),
}
RNG_B, RNG_T = RNG.normal(size=(4, 3)), RNG.normal(size=(5, 2))


class _PJ:
    """`m.linalg.f` on Tensors: numpy's functions, dispatched to pforjac."""
    class linalg:
        pass


for _name in ("solve", "inv", "det", "slogdet", "cholesky", "eigvalsh", "svd", "qr", "pinv",
              "matrix_power", "lstsq", "matrix_rank", "multi_dot", "norm"):
    setattr(_PJ.linalg, _name, staticmethod(
        (lambda f: lambda *a, **k: f(*[_tensors(x) for x in a], **k))(getattr(np.linalg, _name))))


def _tensors(x):
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return pj.constant(x)
    if isinstance(x, list):
        return [_tensors(v) for v in x]
    return x


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_numpy(name):
    want = VALUE_CASES[name](np)
    got = VALUE_CASES[name](_PJ)
    assert isinstance(got, pj.Tensor), f"np.linalg on Tensors returned {type(got)}"
    _same(got, want, rtol=1e-9, atol=1e-10)


NORM_CASES = [(None, None), (2, None), (1, 0), (np.inf, 1), (-np.inf, -1), (0, 1), (3, 0),
              (0.5, 1), ("fro", None), ("nuc", (0, 1)), (2, (1, 0)), (-2, (0, 1)),
              (1, (0, 1)), (-1, (1, 0)), (np.inf, (0, 1)), (-np.inf, (1, 0))]


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("ord,axis", NORM_CASES)
def test_norm_matches_numpy(ord, axis, keepdims):
    x = RNG.normal(size=(3, 4))
    x[0, 1] = 0.0                                   # ord 0 counts nonzeros
    _same(pj.norm(x, ord, axis, keepdims), np.linalg.norm(x, ord, axis, keepdims))
    if axis is not None:                            # the same behind a leading batch axis
        shifted = tuple(a % 2 + 1 for a in axis) if isinstance(axis, tuple) else axis % 2 + 1
        x3 = RNG.normal(size=(2, 3, 4))
        _same(pj.norm(x3, ord, shifted, keepdims), np.linalg.norm(x3, ord, shifted, keepdims))


@pytest.mark.parametrize("ord", [None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, -1.5])
def test_vector_norms_of_a_vector_match_numpy(ord):
    x = np.array([0.5, -2.0, 0.0 if ord == 0 else 0.3, 1.25])
    _same(pj.norm(x, ord), np.linalg.norm(x, ord))
    _same(np.linalg.vector_norm(pj.constant(x), ord=2 if ord is None else ord),
          np.linalg.vector_norm(x, ord=2 if ord is None else ord))


def test_decompositions_reconstruct_and_match_numpy_up_to_signs():
    w, v = pj.eigh(SPD_BATCH)
    _same(w, np.linalg.eigh(SPD_BATCH)[0])
    _same(v @ (pj.expand_dims(w, -1) * pj.swapaxes(v, -1, -2)), SPD_BATCH, rtol=1e-9)
    u, s, vh = pj.svd(TALL, full_matrices=False)
    nu, ns, nvh = np.linalg.svd(TALL, full_matrices=False)
    _same(s, ns)
    _same(abs(u * nu).sum(0), np.ones(3))            # the same columns up to sign
    _same((u * s) @ vh, TALL)
    q, r = pj.qr(A_BATCH)
    _same(q @ r, A_BATCH, rtol=1e-9)
    _same(abs(r), abs(np.linalg.qr(A_BATCH)[1]))
    L = pj.cholesky(SPD)
    _same(L, np.linalg.cholesky(SPD))
    _same(np.triu(L.numpy(), 1), np.zeros((4, 4)))


def test_float32_stays_float32_and_ints_become_float64():
    a32 = SPD.astype(np.float32)
    for fn in (pj.inv, pj.det, pj.cholesky, lambda a: pj.eigh(a)[1], lambda a: pj.svd(a)[0],
               lambda a: pj.qr(a)[1], lambda a: pj.slogdet(a)[1], pj.pinv, pj.norm,
               lambda a: pj.solve(a, a[0]), lambda a: pj.matrix_power(a, 3)):
        assert fn(pj.constant(a32)).dtype == np.float32
    _same(pj.solve(pj.constant(a32), a32[0]), np.linalg.solve(a32, a32[0]), rtol=1e-5)
    ints = np.array([[2, 1], [1, 3]])
    assert pj.inv(ints).dtype == np.float64
    _same(pj.inv(ints), np.linalg.inv(ints))
    assert pj.cholesky(pj.constant(SPD.astype(np.float16))).dtype == np.float16


def test_scipy_linalg_matches_scipy():
    for lower in (False, True):
        for trans in (0, 1, "T"):
            for unit in (False, True):
                _same(psl.solve_triangular(A, B_MAT, trans=trans, lower=lower, unit_diagonal=unit),
                      scipy.linalg.solve_triangular(A, B_MAT, trans=trans, lower=lower,
                                                    unit_diagonal=unit), rtol=1e-9)
        _same(psl.cholesky(SPD, lower=lower), scipy.linalg.cholesky(SPD, lower=lower))
        _same(psl.cho_solve(psl.cho_factor(SPD, lower=lower), B_VEC),
              scipy.linalg.cho_solve(scipy.linalg.cho_factor(SPD, lower=lower), B_VEC), rtol=1e-9)
    with pytest.raises(ValueError, match="infs or NaNs"):
        psl.cholesky(np.full((2, 2), np.nan))


def test_triangular_solve_of_stacks_and_without_scipy_matches_scipy(monkeypatch):
    from pforjac.ops import triangular
    stack, rhs = A_BATCH[0], RNG.normal(size=(3, 4, 2))
    want = np.stack([scipy.linalg.solve_triangular(m, r, trans=1, lower=True)
                     for m, r in zip(stack, rhs)])
    _same(pj.solve_triangular(stack, rhs, trans=1, lower=True), want, rtol=1e-10)   # numpy's LU
    monkeypatch.setattr(triangular, "_scipy_solver", lambda: None)
    _same(pj.solve_triangular(stack[0], rhs[0], trans=1, lower=True), want[0], rtol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match="[Ss]ingular"):
        pj.solve_triangular(np.triu(np.ones((3, 3)), 1), np.ones(3))


# -- derivatives: central differences, to second order -----------------------------------------
def _sym_outer(v, w):
    return v * v * w


GRAD_CASES = {
    "solve_a": (lambda a: pj.solve(a, B_MAT), [A]),
    "solve_both_batched": (lambda a, b: pj.solve(a, b), [A_BATCH[0, :1], RNG.normal(size=(2, 4, 2))]),
    "solve_vector": (lambda a, b: pj.solve(a, b), [A, B_VEC]),
    "inv_batched": (pj.inv, [A_BATCH[:, 0]]),
    "det": (pj.det, [A_BATCH[0]]),
    "slogdet_negative": (lambda a: pj.slogdet(a)[1], [A - 6 * np.eye(4)]),
    "cholesky_batched": (pj.cholesky, [SPD_BATCH]),
    "cholesky_upper": (lambda a: pj.cholesky(a, upper=True), [SPD]),
    "eigh_values": (lambda a: pj.eigh(a)[0], [A_BATCH[0]]),
    "eigh_vectors_gauge_free": (lambda a: _sym_outer(*reversed(pj.eigh(a, "U"))), [A]),
    "eigvalsh": (pj.eigvalsh, [SPD]),
    "svd_values_wide": (lambda a: pj.svd(a, compute_uv=False), [WIDE]),
    "svd_vectors_tall": (lambda a: (lambda u, s, vh: (u * u * s) @ (vh * vh))(
        *pj.svd(a, full_matrices=False)), [TALL]),
    "svd_vectors_wide": (lambda a: (lambda u, s, vh: (u * u * s) @ (vh * vh))(
        *pj.svd(a, full_matrices=False)), [WIDE]),
    "qr_tall": (lambda a: (lambda q, r: q * q @ (r * r))(*pj.qr(a)), [TALL]),
    "qr_r_batched": (lambda a: pj.qr(a, "r") ** 2, [A_BATCH[0]]),
    "pinv_wide": (pj.pinv, [WIDE]),
    "lstsq": (lambda a, b: pj.lstsq(a, b)[0], [TALL, RNG_T]),
    "lstsq_residuals": (lambda a, b: pj.lstsq(a, b)[1], [TALL, RNG_T]),
    "matrix_power_neg": (lambda a: pj.matrix_power(a, -2), [A]),
    "matrix_power_7": (lambda a: pj.matrix_power(a / 4, 7), [A]),
    "multi_dot": (lambda a, b, c: pj.multi_dot([a, b, c]), [B_VEC, A, B_MAT]),
    "solve_triangular": (lambda a, b: psl.solve_triangular(a, b, trans=1, lower=True), [A, B_MAT]),
    "solve_triangular_unit": (lambda a, b: psl.solve_triangular(a, b, unit_diagonal=True),
                              [A / 3, B_VEC]),
    "cho_solve": (lambda a, b: psl.cho_solve(psl.cho_factor(a), b), [SPD, B_MAT]),
}
for _ord, _axis in NORM_CASES:
    if _ord not in (0, np.inf, -np.inf, 1, -1) or isinstance(_axis, int):  # no ties, no kinks
        GRAD_CASES[f"norm_{_ord}_{_axis}"] = (
            (lambda o, ax: lambda x: pj.norm(x, o, ax))(_ord, _axis), [RNG.normal(size=(3, 4))])


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_derivatives_to_second_order_against_central_differences(name):
    f, inputs = GRAD_CASES[name]
    check_grads(f, tuple(inputs), order=2, rtol=1e-5, atol=1e-6)


JAX = json.loads((pathlib.Path(__file__).parent / "data" / "linalg_jax.json").read_text())["cases"]
A0 = np.array([[2.0, 0.5, 0.1], [0.3, 1.5, -0.2], [0.1, -0.4, 1.8]])
E = np.array([[[1.0, 0, 0], [0, 0, 0.5], [0, 0, 0]], [[0, 1.0, 0], [1.0, 0, 0], [0, 0, -1.0]],
              [[0, 0, 0], [0, 0.3, 1.0], [0, 1.0, 0.5]]])
C = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1], [2.0, 0.1, 0.4]])
b0 = np.array([1.0, -2.0, 0.5])


def _m(x):
    return A0 + pj.einsum("i,ijk->jk", x, E)


def _gram(x):
    return _m(x) @ pj.transpose(_m(x)) + np.eye(3)


JAX_CASES = {
    "solve": lambda x: pj.sum(pj.solve(_m(x), b0) ** 2),
    "inv": lambda x: pj.sum(pj.inv(_m(x)) * C),
    "slogdet": lambda x: pj.slogdet(_m(x))[1],
    "det": lambda x: pj.det(_m(x)),
    "cholesky": lambda x: pj.sum(pj.cholesky(_gram(x)) * C),
    "eigh": lambda x: (lambda w, v: pj.sum(w * b0) + pj.sum(v * v * C))(*pj.eigh(_gram(x))),
    "svd": lambda x: (lambda u, s, vh: pj.sum(s ** 3) + pj.sum(u * u * C[:2, :2])
                      + pj.sum(vh * vh * C[:2]))(
        *pj.svd(pj.transpose(_m(x)[:, :2]) @ _m(x), full_matrices=False)),
    "qr": lambda x: (lambda q, r: pj.sum(r * r * C[:2, :2]) + pj.sum(q * q * C[:, :2]))(
        *pj.qr(_m(x)[:, :2])),
    "pinv": lambda x: pj.sum(pj.pinv(_m(x)[:, :2]) * C[:2]),
    "norm_nuc": lambda x: pj.norm(_m(x), "nuc"),
    "norm_2": lambda x: pj.norm(_m(x), 2),
    "matrix_power": lambda x: pj.sum(pj.matrix_power(_m(x), 3) * C),
    "lstsq": lambda x: pj.sum(pj.lstsq(_m(x)[:, :2], b0)[0] ** 2),
}


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_gradients_and_hessians_match_jax(name):
    f, want = JAX_CASES[name], JAX[name]
    x = pj.constant(np.array([0.3, -0.2, 0.5]))
    _same(f(x), want["value"], rtol=1e-12)
    _same(pj.jacobian(f, x, vectorize=True), np.array(want["grad"]), rtol=1e-10)
    _same(pj.hessian(f, x, vectorize=True), np.array(want["hessian"]), rtol=1e-9, atol=1e-11)


# -- Jacobians: pfor (numpy's batching, no fallback) and the while-loop agree --------------------
def _logdet_gp(x):
    """A Gaussian-process-like objective of x (3, 2): points -> kernel -> log|K| and a solve."""
    d = pj.expand_dims(x, 0) - pj.expand_dims(x, 1)
    k = pj.exp(-pj.sum(d * d, axis=-1)) + 0.5 * np.eye(3)
    L = pj.cholesky(k)
    alpha = pj.solve(k, np.array([1.0, -1.0, 0.5]))
    return pj.stack([pj.sum(pj.log(pj.sum(L * np.eye(3), axis=-1))), pj.sum(alpha)])


JACOBIAN_CASES = {
    "gp": (_logdet_gp, RNG.normal(size=(3, 2))),
    "eigh": (lambda a: pj.eigh(a @ pj.transpose(a))[0], RNG.normal(size=(3, 3))),
    "svd": (lambda a: pj.svd(a, compute_uv=False), TALL),
    "qr": (lambda a: pj.qr(a, "r") ** 2, TALL),
    "slogdet_inv": (lambda a: pj.slogdet(a)[1] + pj.sum(pj.inv(a)), A),
    "pinv_norm": (lambda a: pj.norm(pj.pinv(a), axis=0), WIDE),
    "solve_triangular": (lambda a: psl.solve_triangular(a, B_MAT, lower=True), A),
}


@no_fallback
@pytest.mark.parametrize("name", sorted(JACOBIAN_CASES))
def test_pfor_and_while_loop_jacobians_agree_with_central_differences(name):
    f, x = JACOBIAN_CASES[name]
    vectorized, looped = pfor_and_loop_jacobians(f, x)
    np.testing.assert_allclose(vectorized, looped, rtol=1e-12, atol=1e-12)
    flat = lambda z: np.asarray(f(pj.constant(z)).numpy()).ravel()
    eps, numeric = 1e-6, np.zeros((flat(x).size,) + x.shape)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        numeric[(slice(None),) + k] = (flat(up) - flat(down)) / (2 * eps)
    np.testing.assert_allclose(vectorized.reshape(numeric.shape), numeric, rtol=1e-6, atol=1e-7)


@no_fallback
@pytest.mark.filterwarnings("error:batch_jacobian:RuntimeWarning")   # the row check follows
@pytest.mark.parametrize("use_pfor", [True, False])
def test_batch_jacobian_over_stacked_matrices(use_pfor):
    x = pj.constant(SPD_BATCH)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.reshape(pj.cholesky(x), (3, 16)) + pj.expand_dims(pj.slogdet(x)[1], -1)
    got = tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor).numpy()
    for k in range(3):
        with pj.GradientTape() as tape:
            xk = pj.constant(SPD_BATCH[k])
            tape.watch(xk)
            yk = pj.reshape(pj.cholesky(xk), (16,)) + pj.slogdet(xk)[1]
        np.testing.assert_allclose(got[k], tape.jacobian(yk, xk).numpy(), rtol=1e-12, atol=1e-13)


@no_fallback
def test_vectorized_map_batches_through_numpy_not_a_loop():
    stack = pj.constant(A_BATCH[0])
    got = pj.vectorized_map(lambda m: pj.solve(m, B_VEC) + pj.eigh(m)[0], stack)
    want = np.linalg.solve(A_BATCH[0], B_VEC) + np.linalg.eigh(A_BATCH[0])[0]
    _same(got, want, rtol=1e-12)


def test_inside_a_compiled_function():
    @pj.function
    def grad_and_hessian(x):
        with pj.GradientTape() as outer:
            outer.watch(x)
            with pj.GradientTape() as inner:
                inner.watch(x)
                y = JAX_CASES["eigh"](x) + JAX_CASES["solve"](x)
            g = inner.gradient(y, x)
        return g, outer.jacobian(g, x)
    x = pj.constant(np.array([0.3, -0.2, 0.5]))
    for _ in range(2):          # traced, then cached
        g, h = grad_and_hessian(x)
        _same(g, np.add(JAX["eigh"]["grad"], JAX["solve"]["grad"]), rtol=1e-10)
        _same(h, np.add(JAX["eigh"]["hessian"], JAX["solve"]["hessian"]), rtol=1e-9, atol=1e-11)


# -- numpy's names on Tensors, under a tape -----------------------------------------------------
def test_numpy_linalg_on_tensors_records_the_gradient():
    def energy(x):                # plain numpy code
        sign, logdet = np.linalg.slogdet(x @ x.T + np.eye(3))
        return logdet + np.linalg.norm(np.linalg.solve(x, np.ones(3))) + np.trace(x) * 0.0
    x0 = A[:3, :3]
    x = pj.constant(x0)
    with pj.GradientTape() as tape:
        tape.watch(x)
        sign, logdet = np.linalg.slogdet(x @ pj.transpose(x) + np.eye(3))
        y = logdet + np.linalg.norm(np.linalg.solve(x, np.ones(3)))
    got = tape.gradient(y, x).numpy()
    want = np.zeros_like(x0)
    for k in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[k] += 1e-6
        down[k] -= 1e-6
        want[k] = (energy(up) - energy(down)) / 2e-6
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    for fn in (np.linalg.inv, np.linalg.det, np.linalg.pinv, np.linalg.eigvalsh,
               np.linalg.svdvals, np.linalg.matrix_norm, lambda t: np.linalg.cholesky(
                   t @ pj.transpose(t), upper=True), lambda t: np.linalg.eigh(t).eigenvalues,
               lambda t: np.linalg.qr(t).R, lambda t: np.linalg.svd(t).S):
        with pj.GradientTape() as tape:
            tape.watch(x)
            out = fn(x)
            total = pj.sum(out)
        assert isinstance(out, pj.Tensor) and tape.gradient(total, x) is not None


# -- bad input --------------------------------------------------------------------------------
def test_singular_and_indefinite_matrices_raise_numpys_linalg_error():
    singular = np.ones((3, 3))
    with pytest.raises(np.linalg.LinAlgError, match="[Ss]ingular"):
        pj.solve(singular, B_VEC[:3])
    with pytest.raises(np.linalg.LinAlgError, match="[Ss]ingular"):
        pj.inv(singular)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        pj.cholesky(-np.eye(3))
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        np.linalg.cholesky(pj.constant(-np.eye(3)))


@pytest.mark.parametrize("call,match", [
    (lambda: pj.solve(np.ones((3, 4)), np.ones(3)), r"solve: needs a square matrix.*\(3, 4\)"),
    (lambda: pj.solve(np.eye(3), np.ones(4)), r"solve: b of shape \(4,\).*\(3, 3\)"),
    (lambda: pj.solve(np.eye(3), np.ones((2, 3))), r"solve: b must have shape \(\.\.\., 3, k\)"),
    (lambda: pj.inv(np.ones(3)), r"inv: needs a square matrix.*\(3,\)"),
    (lambda: pj.cholesky(np.ones((2, 3))), r"cholesky: needs a square matrix.*\(2, 3\)"),
    (lambda: pj.svd(np.ones((2, 3))), r"svd: full_matrices=True on a 2x3"),
    (lambda: pj.eigh(np.eye(2), UPLO="X"), r"eigh: UPLO must be"),
    (lambda: pj.qr(np.ones((3, 2)), "raw"), r"qr: mode='raw'"),
    (lambda: pj.norm(np.ones((2, 2)), "nuc", 0), r"invalid norm order 'nuc' for vectors"),
    (lambda: pj.norm(np.ones((2, 2, 2)), 2), r"norm: axis must be"),
    (lambda: pj.det(np.eye(2) * 1j), r"complex matrices are not supported"),
    (lambda: pj.multi_dot([np.ones(2)]), r"multi_dot: needs at least two"),
    (lambda: np.linalg.multi_dot([pj.constant(np.eye(2))] * 2, out=np.eye(2)), r"out"),
])
def test_wrong_shapes_and_options_raise_naming_the_op(call, match):
    with pytest.raises((ValueError, TypeError, NotImplementedError), match=match):
        call()


def test_qr_derivative_of_a_wide_matrix_raises_naming_the_fix():
    x = pj.constant(WIDE)
    with pj.GradientTape() as tape:
        tape.watch(x)
        total = pj.sum(pj.qr(x, "r"))
    with pytest.raises(NotImplementedError, match="qr: its derivative needs at least as many rows"):
        tape.gradient(total, x)


def _central_jacobian(f, a, h=1e-6):
    cols = []
    for i in range(a.size):
        e = np.zeros(a.size)
        e[i] = h
        cols.append((f(a + e.reshape(a.shape)) - f(a - e.reshape(a.shape))) / (2 * h))
    return np.stack(cols, -1).reshape(np.shape(f(a)) + a.shape)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_pinv_and_lstsq_at_repeated_singular_values(shape):
    """A multiple of an orthonormal matrix has every singular value equal: the svd's rule
    drops the tied terms, and pinv/lstsq differentiated through it were silently wrong
    (the fuzzer's long run: gradient off by 0.108 of 0.256). The pinv primitive's
    constant-rank formula holds there: against central differences, forward mode, and for a
    square matrix inv's derivative (solve's rules: another path)."""
    q, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((max(shape), max(shape))))
    a = 2.0 * q[:shape[0], :shape[1]] if shape[0] >= shape[1] else 2.0 * q[:shape[1], :shape[0]].T
    assert np.ptp(np.linalg.svd(a, compute_uv=False)) < 1e-12
    want = _central_jacobian(np.linalg.pinv, a)
    for strategy in ("reverse-mode", "forward-mode"):
        got = pj.jacobian(np.linalg.pinv, pj.constant(a), strategy=strategy).numpy()
        np.testing.assert_allclose(got, want, atol=1e-8)
    if shape[0] == shape[1]:
        np.testing.assert_allclose(pj.jacobian(np.linalg.pinv, pj.constant(a)).numpy(),
                                   pj.jacobian(np.linalg.inv, pj.constant(a)).numpy(), atol=1e-13)
    b = np.arange(1.0, shape[0] + 1)
    x_of = lambda m: np.linalg.lstsq(m, b, rcond=None)[0]
    np.testing.assert_allclose(pj.jacobian(x_of, pj.constant(a)).numpy(),
                               _central_jacobian(x_of, a), atol=1e-8)
