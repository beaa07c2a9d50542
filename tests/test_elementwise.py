"""Elementwise ops: numpy's dtypes and TensorFlow's values and derivatives at the extremes
(float16 tails, ties and NaNs of maximum/minimum, derivatives at 0 and at poles), against
float64 closed forms. Every elementwise primitive's rules are checked from the registry in
test_rules.py; these are the points its generated inputs stay away from."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj


def test_sigmoid_of_integers_is_numpys_float_and_odd_numpy_errors_keep_their_message():
    got = pj.sigmoid(pj.constant(np.arange(3, dtype=np.int32)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), 1 / (1 + np.exp(-np.arange(3.0))))
    assert pj.function(pj.sigmoid)(np.arange(3, dtype=np.int8)).dtype == np.exp(np.int8(1)).dtype

    class Picky(TypeError):                                      # like numpy's casting errors
        def __init__(self, a, b):
            super().__init__(f"{a} {b}")
    from pforjac.testing import isolated_registries
    with isolated_registries():
        boom = pj.extend.defop("api_picky", lambda x: (_ for _ in ()).throw(Picky("no", "way")),
                               pj.extend.same_shape)
        with pytest.raises(TypeError, match=r"pforjac.api_picky: cannot apply .*no way"):
            boom(pj.constant([1.0]))


def test_float16_sigmoid_keeps_its_subnormals():
    """exp(-x) overflowed float16 below -11.1, so sigmoid gave 0 where TensorFlow gives
    the float16 subnormal (and log(sigmoid(-12)) was -inf)."""
    x = np.array([-16.0, -12.0, -11.5, -3.0, 0.0, 5.0], np.float16)
    want = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float16)
    got = pj.sigmoid(pj.constant(x)).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(pj.function(lambda t: pj.sigmoid(t) * 1)(x)), want)
    assert pj.log(pj.sigmoid(pj.constant(np.float16(-12.0)))).numpy() == np.float16(-12.0)


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
                np.diagonal(np.asarray(pj.jacobian(pj.expm1, x, vectorize=True, strategy="forward-mode")))):
        exact = want.astype(dtype)
        np.testing.assert_allclose(got, exact, rtol=2 * np.finfo(dtype).eps, atol=0)


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


def test_multiply_no_nan_is_tensorflows():
    x = pj.constant([np.inf, np.nan, 2.0, -3.0])
    y = pj.constant([0.0, 0.0, 3.0, -0.0])
    np.testing.assert_array_equal(pj.multiply_no_nan(x, y).numpy(), [0.0, 0.0, 6.0, 0.0])
    pj.testing.check_grads(pj.multiply_no_nan, [np.array([1.5, -2.0]), np.array([0.5, 3.0])])


# -- a zero cotangent through an infinite derivative is zero (TensorFlow's sqrt/reciprocal) ------
@pytest.mark.parametrize("use_pfor", [True, False])
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # numpy: sqrt(-1), 1/0
def test_safe_sqrt_and_sqrt_at_zero_have_zero_gradients_where_nothing_flows(use_pfor):
    x = pj.constant([-1.0, 0.0, 4.0])
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        safe = pj.where(x > 0, pj.sqrt(x), pj.zeros_like(x))
        root = pj.sqrt(x[1:])
    np.testing.assert_array_equal(tape.gradient(safe, x).numpy(), [0.0, 0.0, 0.25])
    jac = tape.jacobian(root, x, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(jac, [[0.0, np.inf, 0.0], [0.0, 0.0, 0.25]])


@pytest.mark.parametrize("use_pfor", [True, False])
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # numpy: sqrt(-1), 1/0
def test_reciprocal_of_a_tiny_value_has_exact_zeros_off_the_diagonal(use_pfor):
    x = pj.constant(np.array([1e-300, 1.0, 2.0]))
    xb = pj.constant(np.array([[1e-300, 1.0], [1.0, 2.0]]))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch([x, xb])
        y, yb = pj.reciprocal(x), pj.reciprocal(xb)
    jac = tape.jacobian(y, x, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(jac[1], [0.0, -1.0, 0.0])
    assert jac[0, 0] == -np.inf and not np.isnan(jac).any()
    bjac = tape.batch_jacobian(yb, xb, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(bjac[0, 1], [0.0, -1.0])
    assert bjac[0, 0, 0] == -np.inf and not np.isnan(bjac).any()
