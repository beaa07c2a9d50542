"""Values and derivatives at extreme inputs, found by a hunt against JAX (float64),
TensorFlow and closed forms (2026-11-30). Each test failed before its fix."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj


@pytest.mark.parametrize("dtype, row, want", [
    # want: log_softmax in float64 closed form, (x - max) - log(sum(exp(x - max)))
    (np.float32, [1000.0, 1001.0, 0.0], None),
    (np.float32, [88.0, 89.0, 0.0], None),
    (np.float32, [3e38, 3e38, -3e38], [-np.log(2), -np.log(2), -np.inf]),
    (np.float64, [1e300, 1e300, 1e300], [-np.log(3)] * 3),
    (np.float64, [20.0, -20.0, 40.0], None),
    (np.float16, [60000.0, 60000.0, 0.0], [-np.log(2), -np.log(2), -60000.0]),
])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_log_softmax_subtracts_the_max_before_the_log_of_the_sum(dtype, row, want):
    """x - logsumexp(x) let a large max absorb log(sum): 250 float32 ulps lost at
    [1000, 1001, 0], everything at [1e300] * 3 (zeros instead of -log 3)."""
    x = np.array(row, dtype)
    if want is None:
        x64 = x.astype(np.float64)
        shifted = x64 - x64.max()
        want = shifted - np.log(np.exp(shifted).sum())
    got = pj.log_softmax(pj.constant(x)).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2 * np.finfo(dtype).eps, atol=0)
    compiled = pj.function(lambda t: pj.log_softmax(t))(x).numpy()
    np.testing.assert_array_equal(compiled, got)


def test_log_softmax_gradient_is_identity_minus_softmax():
    x = np.array([[1000.0, 1001.0, 0.0], [1.0, 2.0, 3.0]])
    J = pj.jacobian(lambda t: pj.log_softmax(t), x, vectorize=True).numpy()
    for b in range(2):
        s = np.exp(x[b] - x[b].max())
        s /= s.sum()
        np.testing.assert_allclose(J[b, :, b, :], np.eye(3) - s[None, :], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_expm1_derivative_is_exp_not_ans_plus_one(dtype):
    """ans + 1 cancels for negative x: 0 at -40 (float32, float64) where exp(-40) = 4.2e-18,
    8 digits at -20. TensorFlow's rule is exp(x)."""
    x = np.array([-40.0, -20.0, -12.0, -1e-3, 0.0, 2.0], dtype)
    want = np.exp(x.astype(np.float64))
    t = pj.constant(x)
    with pj.GradientTape() as g:
        g.watch(t)
        y = pj.sum(pj.expm1(t))
    for got in (g.gradient(y, t).numpy(),
                np.diagonal(pj.jacobian(pj.expm1, x, vectorize=True, strategy="forward-mode").numpy())):
        exact = want.astype(dtype)
        np.testing.assert_allclose(got, exact, rtol=2 * np.finfo(dtype).eps, atol=0)


def test_float16_sigmoid_keeps_its_subnormals():
    """exp(-x) overflowed float16 below -11.1, so sigmoid gave 0 where TensorFlow gives
    the float16 subnormal (and log(sigmoid(-12)) was -inf)."""
    x = np.array([-16.0, -12.0, -11.5, -3.0, 0.0, 5.0], np.float16)
    want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float16)
    got = pj.sigmoid(pj.constant(x)).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(pj.function(lambda t: pj.sigmoid(t) * 1)(x).numpy(), want)
    assert pj.log(pj.sigmoid(pj.constant(np.float16(-12.0)))).numpy() == np.float16(-12.0)


@pytest.mark.parametrize("op, xmask, ymask", [
    (pj.maximum, [0, 0, 1, 1], [1, 1, 0, 0]),
    (pj.minimum, [0, 0, 1, 0], [1, 1, 0, 1]),
])
def test_maximum_and_minimum_give_y_what_x_does_not_take(op, xmask, ymask):
    """As TensorFlow: a tie goes to x and y gets every other element, a NaN's too (before,
    neither operand got a NaN element's gradient)."""
    x = pj.constant(np.array([np.nan, 1.0, 2.0, 3.0], np.float32))
    y = pj.constant(np.array([1.0, np.nan, 2.0, 1.0], np.float32))
    with pj.GradientTape() as g:
        g.watch([x, y])
        s = pj.sum(op(x, y))
    gx, gy = g.gradient(s, [x, y])
    np.testing.assert_array_equal(gx.numpy(), xmask)
    np.testing.assert_array_equal(gy.numpy(), ymask)


def test_jvp_strict_refuses_an_input_no_output_depends_on():
    """As torch.autograd.functional.jvp: strict=True raised only when an output depended on
    no input at all, not when one input was unused (or used only under stop_gradient)."""
    x = np.array([1.0, 2.0])
    for f, want in ((lambda a, b: a * 2, 2 * x), (lambda a, b: a * pj.stop_gradient(b), x * x)):
        with pytest.raises(RuntimeError, match="independent of input 1"):
            pj.jvp(f, (x, x), (x, x), strict=True)
        np.testing.assert_array_equal(pj.jvp(f, (x, x), (x, x))[1].numpy(), want)   # not strict
    np.testing.assert_array_equal(pj.jvp(lambda a, b: a * b, (x, x), (x, x), strict=True)[1].numpy(), 2 * x * x)
