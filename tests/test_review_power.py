"""The eager power rule's shortcut for a constant integer exponent (ops/elementwise.py
`_known_integer`, `_pow_dx`) against the general rule y x**(y-1): an exponent that is not
finite still differentiates, and higher derivatives on nested tapes stay connected."""
import warnings

import numpy as np
import pytest

import pforjac as pj


@pytest.mark.parametrize("k", [np.inf, -np.inf, np.nan, 1e300])
def test_a_non_finite_or_huge_exponent_differentiates_by_the_general_rule(k):
    x = np.array([0.5, 1.0, 2.0])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        xt = pj.constant(x)
        with pj.GradientTape() as g:
            g.watch(xt)
            y = xt ** k
        got = g.gradient(y, xt).numpy()
        want = np.where(k == 0, 0.0, k * np.power(x, k - 1.0))     # y x**(y-1)
        value = np.power(x, k)
    np.testing.assert_array_equal(np.asarray(y), value)
    np.testing.assert_array_equal(got, want)


def test_a_float16_exponent_that_overflows_to_inf_differentiates():
    x = np.array([0.5, 2.0], np.float16)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        got = pj.grad(lambda v: pj.numpy.sum(v ** 2 ** 30))(x)
        k = np.float16(2 ** 30)                                     # inf in float16
        want = k * np.power(x, k - np.float16(1))                  # inf * 0 is NaN at 0.5
    assert got.dtype == np.float16 and np.isinf(k)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("k, third", [(2, lambda x: 0 * x), (3, lambda x: 6 + 0 * x)])
def test_third_derivative_on_nested_tapes_is_connected(k, third):
    """d3/dx3 x**2 is 0 (and of x**3, 6): a number, as before the shortcut, not None."""
    x = pj.constant(np.array([0.5, 1.5, -2.0]))
    with pj.GradientTape() as g3:
        g3.watch(x)
        with pj.GradientTape() as g2:
            g2.watch(x)
            with pj.GradientTape() as g1:
                g1.watch(x)
                y = x ** k
            d1 = g1.gradient(y, x)
        d2 = g2.gradient(d1, x)
    d3 = g3.gradient(d2, x)
    assert d3 is not None
    np.testing.assert_array_equal(d3.numpy(), third(x.numpy()))
    np.testing.assert_array_equal(d2.numpy(), k * (k - 1) * x.numpy() ** (k - 2))
