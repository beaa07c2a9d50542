"""Regression tests of the numpy-conformance defects: vector_norm over several axes,
Tensor methods with ndarray's meanings, Python floats and lists in float64 maths, rgamma's
derivative at its zeros, pad with per-side values, allclose under a trace, pforjac.dask's
forward mode with Variables, tuple inputs and a mismatched f, and integer inputs of
pforjac.sparse. Oracles: numpy's values, closed forms and central differences."""
import math

import numpy as np
import pytest

import pforjac as pj

X = np.array([[-2.0, 1.0, -1.0], [2.0, 0.0, 3.0]])


def _np(v):
    return v.numpy() if isinstance(v, pj.Tensor) else np.asarray(v)


def _central(f, x, h=1e-6):
    out = []
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = h
        out.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.moveaxis(np.array(out), 0, -1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.filterwarnings("ignore:divide by zero")       # (numpy's, for ord -1 at a 0)
@pytest.mark.parametrize("ord", [2, 1, np.inf, -np.inf, 0, 3, -1, 0.5])
@pytest.mark.parametrize("axis", [(0, 1), (-2, -1), (1, 0), None])
def test_vector_norm_over_several_axes_is_a_vector_norm(ord, axis):
    with np.errstate(divide="ignore"):
        want = np.linalg.vector_norm(X, ord=ord, axis=axis)
        got = np.linalg.vector_norm(pj.constant(X), ord=ord, axis=axis)
        keep = np.linalg.vector_norm(pj.constant(X), ord=ord, axis=axis, keepdims=True)
    np.testing.assert_allclose(_np(got), want, rtol=1e-13)
    assert keep.shape == np.linalg.vector_norm(X, ord=ord, axis=axis, keepdims=True).shape


def test_vector_norm_over_two_of_three_axes_and_its_gradient():
    x = np.random.default_rng(0).normal(size=(2, 3, 4))
    f = lambda v: np.linalg.vector_norm(v, ord=3, axis=(0, 2))     # noqa: E731
    np.testing.assert_allclose(_np(f(pj.constant(x))), f(x), rtol=1e-13)
    np.testing.assert_allclose(_np(pj.jacobian(f, x)), _central(f, x), rtol=1e-6, atol=1e-9)


def test_tensor_methods_mean_what_ndarrays_mean():
    a = np.arange(24.0).reshape(2, 3, 4)
    b = np.arange(24.0).reshape(3, 4, 2)
    t = pj.constant(a)
    np.testing.assert_array_equal(_np(t.take([-1, 1])), a.take([-1, 1]))        # flattened
    np.testing.assert_array_equal(_np(t.take([-1, 1], axis=1)), a.take([-1, 1], axis=1))
    assert t.dot(b).shape == a.dot(b).shape == (2, 3, 3, 2)                    # dot, not matmul
    np.testing.assert_array_equal(_np(t.dot(pj.constant(b), out=None)), a.dot(b))
    for order in ("C", "F", "A", "K"):
        np.testing.assert_array_equal(_np(t.flatten(order=order)), a.flatten(order=order))
        np.testing.assert_array_equal(_np(t.ravel(order)), a.ravel(order))
    np.testing.assert_array_equal(_np(t.reshape(4, 6, order="F")), a.reshape(4, 6, order="F"))
    np.testing.assert_array_equal(_np(np.reshape(t, (6, 4), order="F")), np.reshape(a, (6, 4), order="F"))
    assert hasattr(t, "real") and hasattr(t, "imag")
    with pytest.raises(TypeError, match="out"):
        t.dot(b, out=np.zeros((2, 3, 3, 2)))


def test_flatten_in_fortran_order_is_differentiable():
    f = lambda v: np.square(v).flatten("F")[:4]       # noqa: E731
    np.testing.assert_allclose(_np(pj.jacobian(f, X)), _central(f, X), rtol=1e-7, atol=1e-9)


THIRD = 1 / 3      # a float64 that float32 rounds (0.3333333432674408)
FLOAT64_MATHS = {
    "polyval": lambda x: np.polyval([0.1, 0.2, THIRD], x),
    "polyval_x": lambda p: np.polyval(p, THIRD),
    "interp": lambda x: np.interp(x, [0.1, 5.3], [0.7, THIRD]),
    "interp_left": lambda x: np.interp(x - 4, [0.1, 5.3], [0.7, 0.3], left=THIRD),
    "convolve": lambda x: np.convolve(x, [0.1, THIRD]),
    "correlate": lambda x: np.correlate(x, [0.1, THIRD]),
    "diff": lambda x: np.diff(x, prepend=THIRD, append=[0.1]),
    "ediff1d": lambda x: np.ediff1d(x, to_begin=THIRD, to_end=[0.1]),
    "float_power": lambda x: np.float_power(x, THIRD),
    "solve": lambda b: np.linalg.solve([[2.0, 0.1, 0.0], [THIRD, 1.7, 0.2], [0.0, 0.1, 1.1]], b),
    "lstsq": lambda b: np.linalg.lstsq([[2.0, 0.1, 0.0], [THIRD, 1.7, 0.2], [0.0, 0.1, 1.1]], b)[0],
    "multi_dot": lambda b: np.linalg.multi_dot([[0.1, THIRD, 0.3], [[1.0, THIRD], [0.2, 0.5],
                                                                    [0.3, 0.1]], np.stack([b[:2], b[1:]])]),
    "add_list": lambda x: np.add(x, [THIRD]),
    "outer_list": lambda x: np.outer(x, [THIRD, 0.1]),
}


@pytest.mark.parametrize("name", sorted(FLOAT64_MATHS))
def test_python_floats_and_lists_are_not_rounded_to_float32(name):
    f = FLOAT64_MATHS[name]
    x = np.array([1.0, 2.0, 3.5])
    got, want = f(pj.constant(x)), f(x)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_allclose(_np(got), want, rtol=2e-16 * 8, atol=1e-16)


def test_lists_are_float64_arrays_next_to_float32_tensors_as_numpy_reads_them():
    x = np.array([1.0, 2.0], np.float32)
    for f in (lambda v: np.add(v, [THIRD]), lambda v: np.polyval([0.1, THIRD], v),
              lambda v: np.maximum(v, [THIRD, 0.0])):
        got, want = f(pj.constant(x)), f(x)
        assert got.dtype == want.dtype == np.float64
        np.testing.assert_allclose(_np(got), want, rtol=1e-15)
    assert (pj.constant(x) * THIRD).dtype == np.float32        # a Python scalar stays weak


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7])
def test_rgamma_derivative_at_its_zeros_is_signed_factorial(n):
    import pforjac.scipy.special as ps
    d = pj.grad(ps.rgamma)(np.float64(-n))
    assert float(_np(d)) == pytest.approx((-1) ** n * math.factorial(n), rel=1e-12)


def test_rgamma_first_and_second_derivatives_match_central_differences():
    import scipy.special as sp
    import pforjac.scipy.special as ps
    x = np.array([-3.0, -2.5, -1.0, -0.3, 0.0, 0.2, 0.5, 1.5, 4.0])
    d1 = _np(pj.grad(lambda v: np.sum(ps.rgamma(v)))(x))
    np.testing.assert_allclose(d1, np.diag(_central(sp.rgamma, x)), rtol=1e-7, atol=1e-9)
    d2 = np.diag(_np(pj.hessian(lambda v: np.sum(ps.rgamma(v)), x)))
    h = 1e-4
    want = (sp.rgamma(x + h) - 2 * sp.rgamma(x) + sp.rgamma(x - h)) / h ** 2
    np.testing.assert_allclose(d2, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("values", [(1.0, 2.0), ((1.0, 2.0), (3.0, 4.0)), 2.5, [[0.5, 1.5]]])
def test_pad_with_before_and_after_values(values):
    widths = ((1, 2), (2, 1))
    got = np.pad(pj.constant(X), widths, constant_values=values)
    np.testing.assert_array_equal(_np(got), np.pad(X, widths, constant_values=values))
    f = lambda v: np.pad(v * v, widths, constant_values=values)    # noqa: E731
    np.testing.assert_allclose(_np(pj.jacobian(f, X)), _central(f, X), rtol=1e-7, atol=1e-9)


def test_allclose_and_array_equal_eagerly_under_a_tape_and_on_constants_in_a_trace():
    f = lambda x: x * (1.0 if np.allclose(x, 2 * x) else 2.0)      # noqa: E731
    np.testing.assert_array_equal(_np(pj.jacobian(f, X)).reshape(6, 6), 2 * np.eye(6))
    c = pj.constant(X)
    g = pj.function(lambda x: x * (1.0 if np.array_equal(c, X) else 2.0))
    np.testing.assert_array_equal(_np(g(X)), X)


@pytest.mark.parametrize("name", ["allclose", "array_equal"])
def test_allclose_and_array_equal_on_traced_values_refuse_by_name(name):
    fn = getattr(np, name)
    f = lambda x: x * (1.0 if fn(x, 2 * x) else 2.0)     # noqa: E731
    for call in (lambda: pj.function(f)(X),
                 lambda: pj.jacobian(f, X, strategy="forward-mode", vectorize=True)):
        with pytest.raises(TypeError, match=f"numpy.{name}.*traced value.*pforjac.where"):
            call()


def test_dask_forward_mode_reads_variables_when_the_plan_is_built():
    import pforjac.dask as pjd
    v = pj.Variable(np.array([1.0, 2.0, 3.0]))
    f = lambda x: pj.sin(x) * v       # noqa: E731
    x = np.array([0.1, 0.2, 0.3])
    want = np.diag(np.cos(x) * [1.0, 2.0, 3.0])
    for mode in ("forward", "reverse"):
        J = pjd.jacobian(f, x, chunk_size=2, mode=mode)
        v.assign([5.0, 5.0, 5.0])      # after the graph is built: both modes read it before
        np.testing.assert_allclose(J.compute(scheduler="sync"), want, rtol=1e-15)
        v.assign([1.0, 2.0, 3.0])


def test_dask_jacobian_refuses_a_tuple_of_inputs():
    import pforjac.dask as pjd
    for mode in ("forward", "reverse"):
        with pytest.raises(TypeError, match="one input array x, got a tuple of 2 arrays"):
            pjd.jacobian(lambda x: x * 2, (np.ones(2), np.ones(2)), mode=mode)
    J = pjd.jacobian(lambda x: x * 2, [1.0, 2.0])           # a list of numbers is one array
    np.testing.assert_array_equal(J.compute(scheduler="sync"), 2 * np.eye(2))


def test_dask_sparse_jacobian_refuses_an_f_outside_the_prepared_pattern():
    import pforjac.dask as pjd
    import pforjac.sparse as pjs
    f = lambda x: x[1:] * x[:-1]       # noqa: E731
    p = pjs.prepare_jacobian(f, np.ones(6))
    x = np.arange(6.0)
    with pytest.raises(ValueError, match="outside the prepared pattern.*prepare this f"):
        pjd.sparse_jacobian(p, x, lambda v: v[1:] * v[0])
    same_pattern = lambda v: 3 * v[1:] * v[:-1]     # noqa: E731  (its colouring holds)
    np.testing.assert_allclose(pjd.sparse_jacobian(p, x, same_pattern).toarray(),
                               3 * p(x).toarray(), rtol=1e-15)


@pytest.mark.parametrize("x", [np.arange(4), np.array([True, False, True, True]), [1, 2, 3, 4]])
def test_sparse_refuses_integer_and_bool_inputs_as_jacobian_does(x):
    import pforjac.dask as pjd
    import pforjac.sparse as pjs
    f = lambda v: v[1:] * v[:-1]        # noqa: E731
    message = "has dtype (int|bool).*, but derivatives are taken with respect to floating-point"
    for call in (lambda: pjs.jacobian(f, x), lambda: pjs.prepare_jacobian(f, x),
                 lambda: pjs.hessian(lambda v: np.sum(v * v), x), lambda: pj.jacobian(f, np.asarray(x)),
                 lambda: pjd.jacobian(f, x)):
        with pytest.raises(TypeError, match=message):
            call()
