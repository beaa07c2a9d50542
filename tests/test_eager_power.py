"""The power rule's eager shortcut (ops/elementwise.py `_pow_dx`): a constant integer
exponent no tape tracks gives k x**(k-1) in two ops instead of four, with the same bits;
an exponent a tape tracks, or a traced one, keeps the general rule, so second derivatives
through the exponent stay right."""
import numpy as np
import pytest

import pforjac as pj
from pforjac import core

pnp = pj.numpy
X = np.array([-1.5, -0.25, 0.0, 0.5, 2.0, 3.0])


def _ops(fn, *args) -> list[str]:
    """The primitives `fn(*args)` binds eagerly."""
    names = []
    real = core._bind_eager

    def spy(prim, a, params):
        names.append(prim.name)
        return real(prim, a, params)
    core._bind_eager = spy
    try:
        fn(*args)
    finally:
        core._bind_eager = real
    return names


@pytest.mark.parametrize("k", [2, 3, -1, 5])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_integer_exponents_give_k_x_to_the_k_minus_1_bit_for_bit(k, dtype):
    x = X.astype(dtype) if k > 0 else X[X != 0].astype(dtype)
    got = pj.grad(lambda v: pnp.sum(v ** k))(x)
    with np.errstate(divide="ignore"):
        want = np.multiply(np.power(x, dtype(k - 1)), dtype(k))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    ops = _ops(pj.grad(lambda v: pnp.sum(v ** k)), x)
    assert "multiply_no_nan" in ops and ops.count("power") == (1 if k == 2 else 2)
    assert "subtract" not in ops


def test_a_fractional_exponent_keeps_the_general_rule():
    x = np.array([0.5, 2.0, 4.0])
    got = pj.grad(lambda v: pnp.sum(v ** 0.5))(x)
    np.testing.assert_allclose(got, 0.5 / np.sqrt(x), rtol=1e-15)
    assert "subtract" in _ops(pj.grad(lambda v: pnp.sum(v ** 0.5)), x)


def test_second_derivatives_through_a_constant_and_a_tracked_exponent():
    x = np.array([0.5, 2.0, 3.0])
    np.testing.assert_allclose(pj.hessian(lambda v: pnp.sum(v ** 3))(x), np.diag(6 * x),
                               rtol=1e-15)
    xs, ys = pj.constant(np.array(2.0)), pj.constant(np.array(3.0))
    with pj.GradientTape() as outer:
        outer.watch(ys)
        with pj.GradientTape() as inner:
            inner.watch(xs)
            z = xs ** ys
        dzdx = inner.gradient(z, xs)               # y x**(y-1): it depends on y
    mixed = outer.gradient(dzdx, ys).numpy()
    assert mixed == pytest.approx(2.0 ** 2 * (1 + 3 * np.log(2.0)), rel=1e-14)


def test_inside_a_compiled_function_the_gradient_is_the_same():
    f = pj.function(pj.grad(lambda v: pnp.sum(v ** 3)))
    x = np.array([0.5, -2.0, 3.0])
    np.testing.assert_array_equal(f(x), np.multiply(np.power(x, 2.0), 3.0))
