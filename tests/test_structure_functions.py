"""numpy's product and array-structure functions on Tensors (pforjac/ops/products.py,
arrays.py, statistics.py; registered in pforjac/numpy/_structure.py): values against numpy's
own call on arrays, gradients and second derivatives against central differences in float64,
jacobians by pfor and by the while-loop, batch_jacobian, pforjac.function, and mixed
Tensor / ndarray arguments under a tape."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac.testing import check_grads

from helpers import no_fallback, pfor_and_loop_jacobians

RNG = np.random.default_rng(23)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4, 2))
C = RNG.normal(size=(2, 3, 4))
S = RNG.normal(size=(4, 4))
V, W = RNG.normal(size=3), RNG.normal(size=3)
MASK_HI, MASK_LO = RNG.random((3, 4)) > 0.6, RNG.random((3, 4)) > 0.5

# name -> (function of its differentiable arguments, written with numpy, and those arguments)
CASES = {
    "outer": (lambda a, b: np.outer(a, b), (A, V)),
    "inner": (lambda a, b: np.inner(a, b), (A, C)),
    "inner_scalar": (lambda a, b: np.inner(a, b), (A, np.array(1.5))),
    "tensordot_int": (lambda a, b: np.tensordot(a, b, 2), (C, RNG.normal(size=(3, 4, 2)))),
    "tensordot_pairs": (lambda a, b: np.tensordot(a, b, axes=([2, 1], [0, 1])),
                        (C, RNG.normal(size=(4, 3)))),
    "tensordot_0": (lambda a, b: np.tensordot(a, b, 0), (V, B)),
    "kron": (lambda a, b: np.kron(a, b), (A, B)),
    "kron_ranks": (lambda a, b: np.kron(a, b), (V, C)),
    "vdot": (lambda a, b: np.vdot(a, b), (A, A.T.copy().T * 0.5)),
    "cross": (lambda a, b: np.cross(a, b), (A[:, :3], W)),
    "cross_axes": (lambda a, b: np.cross(a, b, axisa=0, axisb=1, axisc=0), (A[:, :2], S[:2, :3])),
    "cross_2_and_3": (lambda a, b: np.cross(a, b), (V[:2], W)),
    "cross_2d": (lambda a, b: np.cross(a, b), (A[:, :2], W[:2])),
    "trace": (lambda a: np.trace(a), (S,)),
    "trace_offset_axes": (lambda a: np.trace(a, -1, 2, 1), (C,)),
    "diag_vector": (lambda v: np.diag(v, -2), (V,)),
    "diag_matrix": (lambda a: np.diag(a, 1), (A,)),
    "diagonal": (lambda a: np.diagonal(a, 1, 2, 0), (C,)),
    "diagonal_square": (lambda a: np.diagonal(a, 0, 0, 2), (RNG.normal(size=(3, 2, 3)),)),
    "diagflat": (lambda a: np.diagflat(a, 1), (B[:2],)),
    "tril": (lambda a: np.tril(a, -1), (C,)),
    "triu": (lambda a: np.triu(a, 2), (A,)),
    "meshgrid_xy": (lambda a, b: np.meshgrid(a, b), (V, A[0])),
    "meshgrid_ij_sparse": (lambda a, b, c: np.meshgrid(a, b, c, indexing="ij", sparse=True),
                           (V, B[:, 0], W)),
    "atleast_1d": (lambda a, b: np.atleast_1d(a, b), (np.array(0.7), V)),
    "atleast_2d": (lambda a: np.atleast_2d(a), (V,)),
    "atleast_3d": (lambda a, b: np.atleast_3d(a, b), (V, A)),
    "squeeze_tuple": (lambda a: np.squeeze(a, axis=(0, 2)), (C[:1, :, None],)),
    "expand_dims_tuple": (lambda a: np.expand_dims(a, (0, -1)), (A,)),
    "vstack": (lambda a, b: np.vstack([a, b]), (V, W)),
    "hstack": (lambda a, b: np.hstack((a, b)), (A, A[:, :1])),
    "dstack": (lambda a, b: np.dstack([a, b]), (A, A[::-1])),
    "column_stack": (lambda a, b: np.column_stack([a, b]), (V, A)),
    "vstack_of_a_tensor": (lambda a: np.vstack(a), (A,)),
    "array_split": (lambda a: np.array_split(a, 3, axis=1), (A,)),
    "array_split_at": (lambda a: np.array_split(a, [1, 5]), (V,)),
    "vsplit": (lambda a: np.vsplit(a, 2), (S,)),
    "hsplit": (lambda a: np.hsplit(a, [1, 3]), (A,)),
    "dsplit": (lambda a: np.dsplit(a, 2), (C,)),
    "repeat_int": (lambda a: np.repeat(a, 2, axis=1), (A,)),
    "repeat_counts": (lambda a: np.repeat(a, [1, 0, 3], axis=0), (A,)),
    "repeat_flat": (lambda a: np.repeat(a, 3), (B,)),
    "fliplr": (lambda a: np.fliplr(a), (A,)),
    "flipud": (lambda a: np.flipud(a), (A,)),
    "rot90": (lambda a: np.rot90(a), (A,)),
    "rot90_axes": (lambda a: np.rot90(a, 3, (2, 0)), (C,)),
    "rot90_half": (lambda a: np.rot90(a, -2), (A,)),
    "rollaxis": (lambda a: np.rollaxis(a, 2), (C,)),
    "rollaxis_start": (lambda a: np.rollaxis(a, 0, 3), (C,)),
    "append_flat": (lambda a, b: np.append(a, b), (A, V)),
    "append_axis": (lambda a, b: np.append(a, b, axis=0), (A, B.T)),
    "unstack": (lambda a: np.unstack(a, axis=1), (C,)),
    "delete_indices": (lambda a: np.delete(a, [0, 2], axis=1), (A,)),
    "delete_mask_flat": (lambda a: np.delete(a, np.arange(12) % 5 == 0), (A,)),
    "delete_slice": (lambda a: np.delete(a, slice(1, None, 2), axis=-1), (C,)),
    "resize": (lambda a: np.resize(a, (5, 3)), (B[:2],)),
    "block": (lambda a, b: np.block([[a, b[:3]], [np.ones((1, 4)), b[3:]]]), (A, B)),
    "block_flat": (lambda a, b: np.block([a, 2.0, b]), (V, W)),
    "select": (lambda a, b: np.select([MASK_HI, MASK_LO], [a, b * 2], default=-1.0), (A, A ** 2)),
    "broadcast_arrays": (lambda a, b: np.broadcast_arrays(a, b), (A, V[:, None])),
    "linalg_outer": (lambda a, b: np.linalg.outer(a, b), (V, A[0])),
    "linalg_trace": (lambda a: np.linalg.trace(a, offset=1), (C,)),
    "linalg_diagonal": (lambda a: np.linalg.diagonal(a, offset=-1), (C,)),
    "linalg_cross": (lambda a, b: np.linalg.cross(a, b, axis=0), (A[:, :2], S[1:, :2])),
    "linalg_tensordot": (lambda a, b: np.linalg.tensordot(a, b, axes=1), (A, B)),
    "linalg_vecdot": (lambda a, b: np.linalg.vecdot(a, b, axis=0), (A, A[::-1])),
    "vecdot": (lambda a, b: np.vecdot(a, b), (C, A)),
    "real": (lambda a: np.real(a), (A,)),
    "conj": (lambda a: np.conj(a), (A,)),
    "real_if_close": (lambda a: np.real_if_close(a), (A,)),
    "average": (lambda a: np.average(a, axis=(0, 1)), (C,)),
    "average_weights": (lambda a, w: np.average(a, axis=1, weights=w, returned=True),
                        (A, A[0] ** 2 + 1)),
    "average_full_weights": (lambda a, w: np.average(a, weights=w, keepdims=True),
                             (A, A ** 2 + 0.5)),
    "cov": (lambda a: np.cov(a), (A,)),
    "cov_y_ddof": (lambda a, b: np.cov(a, b, rowvar=False, ddof=0), (B, B[:, ::-1] ** 2)),
    "cov_weights": (lambda a, w: np.cov(a, fweights=[1, 2, 1, 3], aweights=w),
                    (A, np.abs(A[0]) + 0.5)),
    "cov_bias_vector": (lambda a: np.cov(a, bias=True), (V,)),
    "corrcoef": (lambda a: np.corrcoef(a), (A,)),
    "corrcoef_y": (lambda a, b: np.corrcoef(a, b), (V, W ** 2)),
    "ptp": (lambda a: np.ptp(a, axis=0), (A,)),
    "ptp_all": (lambda a: np.ptp(a), (C,)),
}
# no derivative: values only
VALUE_CASES = {
    "imag": (lambda a: np.imag(a), (A,)),
    "angle": (lambda a: np.angle(a, deg=True), (V,)),
    "count_nonzero": (lambda a: np.count_nonzero(np.tril(a)), (A,)),
    "count_nonzero_axis": (lambda a: np.count_nonzero(np.triu(a), axis=(0,)), (A,)),
    "allclose": (lambda a, b: np.allclose(a, b), (A, A + 1e-9)),
    "not_allclose": (lambda a, b: np.allclose(a, b), (A, A + 1e-3)),
    "array_equal": (lambda a, b: np.array_equal(a, b), (A, A.copy())),
    "not_array_equal": (lambda a, b: np.array_equal(a, b), (A, A[:2])),
}
# f of (batch, ...) whose row b depends only on x[b]
BATCHED = {
    "trace": lambda x: np.trace(x, axis1=1, axis2=2)[:, None],
    "diagonal": lambda x: np.diagonal(x, -1, 1, 2),
    "tril": lambda x: np.tril(x),
    "cross": lambda x: np.cross(x[:, 0], x[:, 1]),
    "rot90_transposed": lambda x: np.einsum("bij->bji", np.rot90(x, 1, (1, 2))),
    "repeat": lambda x: np.repeat(x, [2, 0, 1], axis=2),
    "inner": lambda x: np.inner(x, W),
    "average": lambda x: np.average(x, axis=(1, 2), weights=X3 ** 2, keepdims=True),
    "ptp": lambda x: np.ptp(x, axis=2),
}
X3 = RNG.normal(size=(4, 3, 3))


def _quiet(f, *args):
    with warnings.catch_warnings():     # np.cross of 2-vectors is deprecated in numpy 2
        warnings.simplefilter("ignore", DeprecationWarning)
        return f(*args)


def _leaves(r):
    return [x for v in r for x in _leaves(v)] if isinstance(r, (list, tuple)) else [r]


def _flat(r) -> np.ndarray:
    return np.concatenate([np.ravel(v.numpy() if isinstance(v, pj.Tensor) else v)
                           for v in _leaves(r)])


def _assert_same(got, want, name):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        value = g.numpy() if isinstance(g, pj.Tensor) else g
        assert np.shape(value) == np.shape(w), (name, np.shape(value), np.shape(w))
        np.testing.assert_allclose(value, w, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES) + sorted(VALUE_CASES))
def test_values_match_numpy(name):
    f, args = {**CASES, **VALUE_CASES}[name]
    want = _quiet(f, *args)
    got = _quiet(f, *(pj.constant(a) for a in args))
    _assert_same(got, want, name)
    for g in _leaves(got):
        assert isinstance(g, pj.Tensor) or name in VALUE_CASES, name
        if isinstance(g, pj.Tensor) and name in CASES:
            assert g.dtype == np.float64, (name, g.dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_to_second_order(name):
    f, args = CASES[name]
    _quiet(check_grads, f, tuple(args), 2)


def _numerical_jacobian(f, x, eps=1e-6):
    cols = []
    for k in range(x.size):
        up, down = x.copy().ravel(), x.copy().ravel()
        up[k] += eps
        down[k] -= eps
        cols.append((_flat(f(up.reshape(x.shape))) - _flat(f(down.reshape(x.shape)))) / (2 * eps))
    return np.stack(cols, axis=-1)


def _flattened(f, rest):
    """f of its first argument, the others as numpy arrays (mixed arguments), outputs joined."""
    def g(x):
        out = _leaves(_quiet(f, x, *rest))
        return pj.concat([pj.reshape(o, (-1,)) for o in out], 0) if isinstance(x, pj.Tensor) \
            else _flat(out)
    return g


@no_fallback
@pytest.mark.parametrize("name", sorted(CASES))
def test_jacobian_by_pfor_and_by_the_loop_with_ndarray_arguments(name):
    f, (x, *rest) = CASES[name]
    g = _flattened(f, rest)
    by_pfor, by_loop = pfor_and_loop_jacobians(g, x)
    want = _numerical_jacobian(g, x).reshape(by_pfor.shape)
    np.testing.assert_allclose(by_pfor, want, rtol=1e-6, atol=1e-7, err_msg=name)
    np.testing.assert_allclose(by_loop, by_pfor, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_in_a_compiled_function(name):
    f, args = CASES[name]
    compiled = pj.function(lambda *xs: _quiet(f, *xs))
    for _ in range(2):
        _assert_same(compiled(*(pj.constant(a) for a in args)), _quiet(f, *args), name)


@pytest.mark.parametrize("name", ["cross", "trace", "diagonal", "diag_vector", "tril", "kron",
                                  "cov_weights", "repeat_counts", "corrcoef", "meshgrid_xy"])
def test_jacobian_inside_a_compiled_function(name):
    f, (x, *rest) = CASES[name]
    g = _flattened(f, rest)

    def jac(v):
        with pj.GradientTape() as tape:
            tape.watch(v)
            y = g(v)
        return tape.jacobian(y, v)
    compiled = pj.function(jac)
    want = _numerical_jacobian(g, x)
    for _ in range(2):
        got = compiled(pj.constant(x)).numpy()
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-7,
                                   err_msg=name)


@pytest.mark.parametrize("name", ["cross", "diag_vector", "repeat_counts", "delete_indices",
                                  "cov", "diagonal"])
def test_repeated_eager_jacobians_stay_right_through_the_loop_cache(name):
    f, (x, *rest) = CASES[name]
    g = _flattened(f, rest)
    want = _numerical_jacobian(g, x)
    for k in range(5):           # the loop cache compiles the backward pass after a few
        by_pfor, _ = pfor_and_loop_jacobians(g, x + k)
        np.testing.assert_allclose(by_pfor.reshape(want.shape), _numerical_jacobian(g, x + k),
                                   rtol=1e-6, atol=1e-7, err_msg=f"{name}, call {k}")


@no_fallback
@pytest.mark.parametrize("name", sorted(BATCHED))
@pytest.mark.parametrize("use_pfor", [True, False])
def test_batch_jacobian(name, use_pfor):
    f = BATCHED[name]
    x = pj.constant(X3)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _quiet(f, x)
    got = tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor).numpy()
    for b in range(X3.shape[0]):
        row = _numerical_jacobian(lambda r: _quiet(f, np.concatenate(
            [X3[:b], r[None], X3[b + 1:]]))[b], X3[b])
        np.testing.assert_allclose(got[b].reshape(row.shape), row, rtol=1e-6, atol=1e-7,
                                   err_msg=name)


def _weighted_square(f, rest, u):
    """x -> sum(u * f(x, *rest)^2) over every output entry: a scalar with a Hessian."""
    g = _flattened(f, rest)
    return lambda x: pj.sum(u * pj.square(g(x)))


@no_fallback
@pytest.mark.parametrize("name", sorted(CASES))
def test_hessian_by_pfor_against_differences_of_the_gradient(name):
    f, (x, *rest) = CASES[name]
    u = RNG.normal(size=_flat(_quiet(f, x, *rest)).shape)
    s = _weighted_square(f, rest, u)
    hess = pj.hessian(s, pj.constant(x), vectorize=True).numpy().reshape(x.size, x.size)

    def gradient(v):
        return pj.vjp(s, pj.constant(v))[1].numpy()
    np.testing.assert_allclose(hess, _numerical_jacobian(gradient, x).T, rtol=1e-6, atol=1e-6,
                               err_msg=name)


def test_hessians_against_closed_forms():
    """d2/dx2 trace(x x) = the swap tensor (2 delta_il delta_jk); the Hessian of
    sum(cross(x, w)^2) = 2 (|w|^2 I - w w^T)."""
    x = pj.constant(S[:3, :3])
    hess = pj.hessian(lambda m: np.trace(m @ m), x).numpy()
    eye = np.eye(3)
    np.testing.assert_allclose(hess, 2 * np.einsum("il,jk->ijkl", eye, eye), atol=1e-12)
    hess = pj.hessian(lambda v: np.sum(np.cross(v, W) ** 2), pj.constant(V)).numpy()
    np.testing.assert_allclose(hess, 2 * (W @ W * eye - np.outer(W, W)), atol=1e-12)


def test_mixed_tensor_and_ndarray_arguments_under_a_tape():
    x = pj.constant(A)
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.kron(B, x) * np.kron(B, A)) + np.trace(np.tensordot(S, x, ([0], [1])))
    # d/dx of sum(kron(B, x) kron(B, A)) = sum(B^2) A; of trace(S^T x^T)... = S[:3]^T rows
    want = np.sum(B ** 2) * A + S[:, :3].T
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_select_takes_the_choices_dtype_with_a_python_default(dtype):
    """A Python number default is weak, as numpy's: float16 choices give float16 (the
    fuzzer found float32, from the default made a tensor first)."""
    x = A.astype(dtype)
    want = np.select([x > 0.5, x < -0.5], [x * 2.0, x * x], 2.0)
    with pj.GradientTape() as tape:
        t = pj.constant(x)
        tape.watch(t)
        got = np.select([t > 0.5, t < -0.5], [t * 2.0, t * t], 2.0)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)
    assert tape.gradient(got, t).dtype == dtype


@pytest.mark.parametrize("shapes", [((3, 3), (3,)), ((4, 2), (3,)), ((3,), (2,)), ((2,), (2,)),
                                    ((2, 1, 3), (4, 3))])
def test_cross_at_infinities_is_numpys(shapes):
    """numpy's component formulas: an infinity meets no zero (of a 2-vector's missing third
    component, or of a Levi-Civita symbol), so no 0 * inf = NaN where numpy has inf."""
    a, b = (RNG.normal(size=s) for s in shapes)
    a.reshape(-1)[0], b.reshape(-1)[-1] = -np.inf, np.inf
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)      # (numpy's 2-vectors)
        want = np.cross(a, b)
        got = np.cross(pj.constant(a), pj.constant(b)).numpy()
    assert np.isinf(want).any()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_diag_keeps_negative_zeros(k):
    v = np.array([-0.0, 1.5, -0.0])
    for fn in (np.diag, np.diagflat):
        got, want = fn(pj.constant(v), k).numpy(), fn(v, k)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_repeat_of_an_empty_axis_takes_empty_repeats():
    x = pj.constant(np.ones((2, 0)))
    assert np.repeat(x, [], axis=1).shape == np.repeat(np.ones((2, 0)), [], axis=1).shape


def test_pforjac_level_functions_exist_with_numpy_defaults():
    x = pj.constant(C)
    np.testing.assert_allclose(pj.trace(x).numpy(), np.trace(C))
    np.testing.assert_allclose(pj.diagonal(x).numpy(), np.diagonal(C))
    np.testing.assert_allclose(pj.tensordot(x, pj.constant(A)).numpy(), np.tensordot(C, A))
    assert [t.shape for t in pj.meshgrid(pj.constant(V), pj.constant(B[:, 0]))] == \
        [m.shape for m in np.meshgrid(V, B[:, 0])]
    assert pj.count_nonzero(pj.constant(np.tril(S))).numpy() == np.count_nonzero(np.tril(S))


def test_value_only_functions_read_watched_tensors_without_a_derivative():
    x = pj.constant(A)
    with pj.GradientTape() as tape:
        tape.watch(x)
        assert np.allclose(x, A) and np.array_equal(x, x)
        count = np.count_nonzero(np.tril(x))
        y = np.sum(np.imag(x) + x)
    assert count == np.count_nonzero(np.tril(A))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.ones_like(A))


@pytest.mark.parametrize("call, message", [
    (lambda x: np.diag(x[None]), "1-D or 2-D"),
    (lambda x: np.cross(x, x[:, :1] * np.ones((1, 4))), "2 or 3"),
    (lambda x: np.tensordot(x, x, axes=([0, 1], [0])), "pair 2 axes of a with 1"),
    (lambda x: np.tensordot(x, x, 3), "at least 3 axes"),
    (lambda x: np.repeat(x, [1, 2], axis=0), "2 repeats for an axis of length 3"),
    (lambda x: np.repeat(x, 1.5), "non-negative integers"),
    (lambda x: np.select([x > 0], [x, x]), "1 conditions for 2 choices"),
    (lambda x: np.trace(x, out=np.zeros(())), "does not take out"),
    (lambda x: pj.vstack([]), "at least one tensor"),
    (lambda x: np.vsplit(x[0], 2), "rank 2 or more"),
    (lambda x: np.logaddexp(x * 1j, x), "complex operands"),
    (lambda x: np.meshgrid(x, indexing="yx"), "'xy' or 'ij'"),
    (lambda x: np.block([[x], x]), "different depths"),
    (lambda x: np.block([x, []]), "empty"),
    (lambda x: np.resize(x, (2, -1)), "negative length"),
    (lambda x: np.average(x, weights=x[0]), "1-D along one given axis"),
    (lambda x: np.trace(x, axis1=2, axis2=1), r"trace \(axis1\): axis 2 is out of range"),
    (lambda x: np.cov(x, fweights=[1, 2, 3.5]), "fweights are frequencies"),
    (lambda x: np.cov(x, aweights=[1.0, -1.0, 1.0]), "aweights cannot be negative"),
    (lambda x: np.cov(x, fweights=[1, 2]), "one weight for each of the 3 observations"),
    (lambda x: np.linalg.vecdot(x, x[:, :1]), "lengths 3 and 1"),
    (lambda x: np.linalg.cross(x, x, axis=4), "cross: axis 4 is out of range"),
])
def test_errors_name_the_function_and_the_argument(call, message):
    x = pj.constant(A[:, :3])
    with pytest.raises((ValueError, TypeError), match=message):
        _quiet(call, x)


def test_cov_with_no_degrees_of_freedom_left_is_inf_as_numpy():
    """N - ddof <= 0 (also with weights) divides by 0 as numpy does, not by a negative
    count (cov of 3 observations with ddof=4 was -4.67 in every entry)."""
    m = np.array([[1.0, 2.0, 4.0], [0.0, 1.0, 3.0]])
    for kw in (dict(ddof=3), dict(ddof=4), dict(aweights=[1.0, 1.0, 1.0], ddof=4),
               dict(fweights=[1, 1, 1], ddof=5), dict(ddof=2)):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            np.testing.assert_array_equal(np.cov(pj.constant(m), **kw).numpy(), np.cov(m, **kw))


@pytest.mark.parametrize("call", [
    lambda a, m: np.average(a, weights=[0.1, 0.2, 0.7]),
    lambda a, m: np.average(m, axis=0, weights=[0.1, 0.3]),
    lambda a, m: np.cov(m, aweights=[0.1, 0.2, 0.3]),
    lambda a, m: np.cov(a, [0.1, 0.2, 0.3]),
    lambda a, m: np.corrcoef(a, [0.1, 0.2, 0.35]),
    lambda a, m: np.select([a > 1], [a], 0.1),
    lambda a, m: np.select([a > 1, a > 3], [a, 0.1], [0.3, 0.7, 0.9]),
])
def test_python_numbers_in_weights_y_and_choices_are_read_in_the_data_dtype(call):
    """Python floats next to float64 data were rounded to float32 first (average's weights
    [0.1, 0.2, 0.7] gave 3.2999999598 for 3.3; select's default 0.1 gave 0.10000000149)."""
    a, m = np.array([1.0, 2.0, 4.0]), np.array([[1.0, 2.0, 4.0], [0.0, 1.0, 3.0]])
    got = call(pj.constant(a), pj.constant(m)).numpy()
    want = call(a, m)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("shapes, axis", [(((3,), (2, 3)), -1), (((2,), (2, 4)), 0),
                                          (((4, 1, 3), (2, 3)), -1), (((3, 2), (3, 1)), 0)])
def test_vecdot_takes_each_operands_own_axis_as_numpy(shapes, axis):
    """np.linalg.vecdot's `axis` is each operand's own (a gufunc's core axis): multiplying
    the broadcast operands and summing over `axis` paired x1[j] with x2[i, j] for a 1-D x1
    and axis=0, a silently wrong result."""
    a, b = (RNG.normal(size=s) for s in shapes)
    got = np.linalg.vecdot(pj.constant(a), pj.constant(b), axis=axis)
    np.testing.assert_allclose(got.numpy(), np.linalg.vecdot(a, b, axis=axis), rtol=1e-12)


def test_keepdims_given_as_a_truthy_non_bool_keeps_the_axes():
    """`keepdims=1` was read as False by average and ptp (`keepdims is True`)."""
    for f in (np.average, np.ptp):
        assert f(pj.constant(A), axis=1, keepdims=1).shape == f(A, axis=1, keepdims=1).shape


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_angle_of_a_real_tensor_is_numpys_including_minus_zero_and_nan(dtype):
    """np.angle is arctan2(0, z): pi at -0.0 and NaN at NaN, where a `z < 0` mask gave 0."""
    z = {"f": np.array([-1.0, -0.0, 0.0, np.nan, 2.0, -np.inf]), "i": np.array([-2, 0, 3]),
         "b": np.array([True, False])}[np.dtype(dtype).kind].astype(dtype)
    for deg in (False, True):
        got, want = np.angle(pj.constant(z), deg=deg).numpy(), np.angle(z, deg=deg)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    x = pj.constant(np.array([-1.0, 0.0, 2.0]))
    np.testing.assert_array_equal(pj.jacobian(np.angle, x).numpy(), np.zeros((3, 3)))
