"""pforjac.autograd: small programs in autograd's style (tests/autograd_examples) give
autograd's own values (tests/data/autograd_examples.json, computed by running the same
files with `import autograd`: tests/data/make_autograd_examples.py), and autograd's
conventions hold: numpy values out at top level, argnum, primitive/defvjp."""
import importlib
import json
import pathlib

import numpy as np
import pytest

import pforjac as pj
from pforjac.autograd import defvjp, elementwise_grad, grad, primitive
from tests.autograd_examples import EXAMPLES

AUTOGRAD = json.loads((pathlib.Path(__file__).parent / "data" / "autograd_examples.json").read_text())


def _want(value):
    if isinstance(value, dict):
        return np.asarray(value["real"]) + 1j * np.asarray(value["imag"])
    return np.asarray(value)


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_gives_autograds_values(name):
    got = importlib.import_module(f"tests.autograd_examples.{name}").main()
    assert sorted(got) == sorted(AUTOGRAD[name])
    for key, want in AUTOGRAD[name].items():
        value = got[key]
        assert not isinstance(value, pj.Tensor), f"{name}.{key} came back as a Tensor"
        np.testing.assert_allclose(np.asarray(value), _want(want), rtol=1e-8, atol=1e-10,
                                   err_msg=f"{name}: {key}")


def test_top_level_results_are_numpy_and_nested_ones_differentiate():
    f = lambda x: np.sum(np.sin(x) ** 2)               # noqa: E731
    g = grad(f)(np.array([0.3, 1.2]))
    assert type(g) is np.ndarray
    h = elementwise_grad(grad(f))(np.array([0.3, 1.2]))
    np.testing.assert_allclose(h, 2 * np.cos(2 * np.array([0.3, 1.2])), rtol=1e-12)


def test_primitive_without_a_vjp_for_an_argument_refuses_as_autograd_does():
    @primitive
    def times(x, y):
        return x * y

    defvjp(times, lambda ans, x, y: lambda g: g * y)
    np.testing.assert_allclose(grad(lambda a: np.sum(times(a, np.ones(2))))(np.ones(2)), 1.0)
    with pytest.raises(NotImplementedError, match="VJP of times wrt argnum 1 not defined"):
        grad(lambda b: np.sum(times(np.ones(2), b)))(np.ones(2))


def test_primitive_with_numpy_forward_vectorizes_its_rule_in_a_jacobian():
    @primitive
    def cube(x):
        return np.asarray(x) ** 3        # plain numpy: pforjac never sees inside

    defvjp(cube, lambda ans, x: lambda g: 3.0 * x ** 2 * g)
    x = np.array([1.0, 2.0, -1.0])
    with pj.fallback_report() as report:
        jac = pj.jacrev(cube)(x)
    assert len(report) == 0
    np.testing.assert_allclose(jac, np.diag(3 * x ** 2))


def test_stats_imported_by_name_return_numpy_and_differentiate():
    # `from ...stats import norm` (autograd's examples) gives the wrapping module
    import scipy.stats as ss
    from pforjac.autograd.numpy import _wrap
    from pforjac.autograd.scipy.stats import norm, t
    value = norm.logpdf(np.array([0.3, -1.2]), 0.5, 2.0)
    assert type(value) is np.ndarray
    np.testing.assert_allclose(value, ss.norm.logpdf([0.3, -1.2], 0.5, 2.0), rtol=1e-13)
    assert type(t.logpdf(0.4, 3.0)) is np.float64
    np.testing.assert_allclose(grad(lambda x: norm.logpdf(x, 1.0, 2.0))(0.0), 0.25, rtol=1e-13)
    size = len(_wrap._cache)
    for _ in range(5):
        norm.cdf(0.0)                      # a bound method per access: one cache entry
    assert len(_wrap._cache) <= size + 1
