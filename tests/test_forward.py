"""Forward mode (jvp, forward-mode Jacobians) agrees with reverse mode, at the points where
derivatives stop existing too (JAX's conventions), and jvp checks its arguments as PyTorch's.
The jvp rules themselves are checked against finite differences in test_jvp_rules.py."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

from helpers import central_differences


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # numpy: sqrt(-1), 1/0
def test_forward_mode_sqrt_at_zero_is_nan_as_in_jax():
    """sqrt is not differentiable at 0: any tangent there gives NaN or inf, as JAX's jvp does,
    so std or a norm at zero is NaN in forward mode as in reverse mode (a zero tangent gave
    0); a zero tangent elsewhere stays 0."""
    _, tangent = pj.jvp(pj.sqrt, np.array([0.0, 4.0]), np.array([0.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(tangent), [np.nan, 0.25])
    _, tangent = pj.jvp(pj.sqrt, np.array([1.0, 4.0]), np.array([0.0, 1.0]))
    np.testing.assert_array_equal(np.asarray(tangent), [0.0, 0.25])


@pytest.mark.parametrize("x, expected", [([np.inf, 1.0, 2.0], [1.0, 0.0, 0.0]),
                                         ([np.inf, np.inf, 0.0], [0.5, 0.5, 0.0]),
                                         ([-np.inf, -np.inf, -np.inf], [1 / 3] * 3)])
def test_forward_mode_of_max_at_an_infinite_maximum_matches_reverse(x, expected):
    x = np.array(x)
    forward = np.asarray(pj.jacobian(pj.max, x, vectorize=True, strategy="forward-mode"))
    reverse = np.asarray(pj.jacobian(pj.max, x))
    np.testing.assert_allclose(forward, expected, rtol=1e-15)
    np.testing.assert_array_equal(forward, reverse)
    np.testing.assert_array_equal(np.asarray(pj.jacobian(lambda a: pj.min(-a), x, vectorize=True,
                                              strategy="forward-mode")), -forward)


# -- std and norms at zero are NaN in both modes; var's derivative is 0 in both --------------
def _both_modes(f, x):
    rev = pj.jacobian(f, pj.constant(x)).numpy()
    fwd = pj.jacobian(f, pj.constant(x), strategy="forward-mode", vectorize=True).numpy()
    loop = pj.jacobian(f, pj.constant(x), vectorize=False).numpy()
    np.testing.assert_array_equal(loop, rev)
    return rev, fwd


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@pytest.mark.parametrize("name, f", [("std", lambda x: pj.std(x, axis=1)),
                                     ("norm", lambda x: pj.sqrt(pj.sum(x * x, axis=1)))])
def test_std_and_norm_at_zero_are_nan_in_both_modes(name, f):
    """JAX's convention: the derivative of sqrt at 0 times the zero derivative of a variance
    (or a sum of squares) at its minimum is NaN, in both modes (forward mode gave 0)."""
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]]) if name == "std" else \
        np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 4.0]])
    rev, fwd = _both_modes(f, x)
    np.testing.assert_array_equal(rev[0, 1], 0.0)      # nothing flows back to row 1 (TF's rule)
    assert np.isnan(fwd[0, 1]).all()                   # every tangent through sqrt(0), as jacfwd
    for got in (rev, fwd):
        assert np.isnan(got[0, 0]).all(), (name, got[0])
        want = central_differences(lambda a: (np.std(a, axis=1) if name == "std"
                                              else np.linalg.norm(a, axis=1))[1], x)
        np.testing.assert_allclose(got[1, 1], want[1], rtol=1e-6)
        assert not np.isnan(got[1]).any()
    _, t = pj.jvp(f, x, np.ones_like(x) * [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    assert np.isnan(np.asarray(t)[0])


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
def test_var_at_zero_variance_has_the_same_zero_derivative_in_both_modes():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]])
    rev, fwd = _both_modes(lambda t: pj.var(t, axis=1), x)
    np.testing.assert_allclose(rev, fwd, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(rev[0], np.zeros((2, 3)))
    np.testing.assert_array_equal(fwd[0], np.zeros((2, 3)))
    want = central_differences(lambda a: np.var(a, axis=1)[1], x)
    np.testing.assert_allclose(rev[1, 1], want[1], rtol=1e-6)


# -- jvp's arguments -----------------------------------------------------------------------
def test_jvp_strict_refuses_an_input_no_output_depends_on():
    """As torch.autograd.functional.jvp: strict=True raised only when an output depended on
    no input at all, not when one input was unused (or used only under stop_gradient)."""
    x = np.array([1.0, 2.0])
    for f, want in ((lambda a, b: a * 2, 2 * x), (lambda a, b: a * pj.stop_gradient(b), x * x)):
        with pytest.raises(RuntimeError, match="independent of input 1"):
            pj.jvp(f, (x, x), (x, x), strict=True)
        np.testing.assert_array_equal(np.asarray(pj.jvp(f, (x, x), (x, x))[1]), want)   # not strict
    np.testing.assert_array_equal(np.asarray(pj.jvp(lambda a, b: a * b, (x, x), (x, x), strict=True)[1]), 2 * x * x)
