"""The gradient the scipy helpers hand BFGS and L-BFGS-B for a cheap numpy value: the
compiled code's specialized entry itself, run once at the starting point (no layer of the
helper's own around it), or the eager gradient with numpy results where the function
cannot be traced; the same numbers either way."""
import warnings

import numpy as np
import pytest

import pforjac as pj
import pforjac.scipy.optimize as po
from pforjac.scipy._solving import Derivatives


def _rosen(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _branching(x):
    if x[0] > 0:                         # a Python branch on a value: not traceable
        return np.sum((x - 1.0) ** 2)
    return np.sum((x - 1.0) ** 2) + 0.0 * x[0]


def test_the_gradient_is_the_specialized_entry():
    x0 = np.linspace(-1.0, 1.0, 7)
    fun, jac = po._value_and_gradient(_rosen, x0, (), Derivatives("test", "numpy"))
    assert fun is _rosen and jac.backend == "numpy"          # (what specialize returns)
    x = np.linspace(0.3, 1.7, 7)
    np.testing.assert_array_equal(jac(x), pj.grad(_rosen)(x))
    assert type(jac(x)) is np.ndarray and jac(x).flags.writeable
    np.testing.assert_array_equal(jac(x[:5]), pj.grad(_rosen)(x[:5]))   # another shape too


def test_extra_arguments_are_in_the_traced_function():
    def f(x, a):
        return np.sum((x - a) ** 2)
    a = np.arange(3.0)
    fun, jac = po._value_and_gradient(f, np.zeros(3), (a,), Derivatives("test", "numpy"))
    np.testing.assert_array_equal(jac(np.ones(3), a), 2 * (np.ones(3) - a))


def test_an_untraceable_function_gives_eager_numpy_gradients_after_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fun, jac = po._value_and_gradient(_branching, np.full(3, 0.5), (),
                                          Derivatives("test", "numpy"))
        g = jac(np.full(3, 2.0))
    assert sum("could not be compiled" in str(w.message) for w in caught) == 1
    assert type(g) is np.ndarray
    np.testing.assert_array_equal(g, [2.0, 2.0, 2.0])


@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B"])
def test_the_solve_counts_and_result_are_scipys_with_its_gradient(method):
    import scipy.optimize as so
    x0 = np.array([-1.2, 1.0, -1.2, 1.0, -1.2, 1.0])
    mine = po.minimize(_rosen, x0, method=method)
    theirs = so.minimize(_rosen, x0, method=method, jac=so.rosen_der)
    assert mine.success and type(mine.x) is np.ndarray
    np.testing.assert_allclose(mine.x, np.ones(6), atol=1e-4)
    assert abs(mine.nit - theirs.nit) <= 3 and mine.njev == mine.nfev
