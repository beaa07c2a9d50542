"""Lists and tuples of Tensors where numpy takes array-likes, and the conversion errors that
name what asked for the conversion (np.array of a list, a numpy or scipy function) and
pforjac's counterpart."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj
import pforjac.numpy as pnp

from helpers import central_differences

X0 = np.array([0.5, -1.25, 2.0])


def _check_grad(f, x0=X0):
    got = np.asarray(pj.grad(f)(x0))
    np.testing.assert_allclose(got, central_differences(lambda v: float(np.asarray(f(v))), x0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", [
    lambda x: np.sum(np.stack([x[0] * x[1], x[2] ** 2]) ** 2),
    lambda x: np.sum(np.concatenate((x, [x[0] ** 3])) * np.arange(4.0)),
    lambda x: np.sum(np.block([[x[:2]], [x[1:] ** 2]]) * np.array([[1.0, 2.0], [3.0, 4.0]])),
    lambda x: np.sum(pnp.stack([[x[0], x[1]], [x[2], x[0] * x[2]]]) ** 2),
    lambda x: np.sum(pnp.array([[x[0], 1.0], [x[1], x[2] * x[0]]]) ** 3),
    lambda x: pnp.mean([x[0], x[1] ** 2]) + pnp.std((x[0], x[2])) + pnp.var([x[1], x[2]]),
    lambda x: pnp.linalg.norm([x[0], x[2], 1.0]) + pnp.sum([x, x ** 2]),
    lambda x: np.sum(pnp.r_[x, 0.5, x[:2] ** 2] * np.arange(6.0)),
    lambda x: np.sum(pnp.c_[x, x ** 2] * np.arange(6.0).reshape(3, 2)),
], ids=["stack", "concatenate", "block", "nested stack", "pnp.array", "pnp mean/std/var",
        "pnp norm/sum", "r_", "c_"])
def test_lists_of_tensors_differentiate(f):
    _check_grad(f)


@pytest.mark.parametrize("make", [
    lambda m, a, b: m.r_[a, b], lambda m, a, b: m.r_[a, 0.5, 1:4], lambda m, a, b: m.c_[a, b],
    lambda m, a, b: m.c_[np.outer(a, b), a], lambda m, a, b: m.r_["0,2", a, b],
    lambda m, a, b: m.r_["0,2,0", a, b], lambda m, a, b: m.r_["1,2", a, b],
    lambda m, a, b: m.r_[0:1:5j, a], lambda m, a, b: m.r_[3, a],
])
def test_r_and_c_match_numpy(make):
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 4.0])
    want, got = make(np, a, b), make(pnp, pj.constant(a), b).numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _refusal(f) -> str:
    x = pj.constant(X0)
    with pj.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError) as info:
            f(x)
    return str(info.value)


def test_np_array_of_a_list_names_np_stack_and_pnp_array():
    message = _refusal(lambda x: np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]]))
    assert message.startswith("np.array([...]) of Tensors")
    assert "np.stack([...])" in message and "pforjac.numpy.array" in message
    assert "0-d" not in message


@pytest.mark.parametrize("f, name, fix", [
    (lambda x: np.mean([x[0], x[1]]), "numpy.mean", "pforjac.numpy.mean"),
    (lambda x: np.std([x[0], x[1]]), "numpy.std", "pforjac.numpy.std"),
    (lambda x: np.linalg.norm([x[0], x[1]]), "numpy.linalg.norm", "pforjac.numpy.linalg.norm"),
    (lambda x: np.r_[x, x], "numpy.r_", "pforjac.numpy.r_"),
    (lambda x: np.stack([[x[0], x[1]], [x[2], x[0]]]), "numpy.stack", "pforjac.numpy.stack"),
])
def test_numpy_functions_given_lists_name_the_fix(f, name, fix):
    message = _refusal(f)
    assert message.startswith(name) and fix in message


def test_scipy_functions_name_their_pforjac_counterpart():
    special = pytest.importorskip("scipy.special")
    message = _refusal(lambda x: special.logsumexp(x))
    assert message.startswith("scipy.special.logsumexp converts its arguments")
    assert "call pforjac.scipy.special.logsumexp instead" in message
    optimize = pytest.importorskip("scipy.optimize")
    message = _refusal(lambda x: optimize.rosen(x))
    assert message.startswith("scipy.optimize.rosen converts its arguments")
    assert "call pforjac.scipy.optimize.rosen instead" in message


def test_the_counterpart_table_comes_from_what_pforjac_provides():
    from pforjac.conversion import counterpart
    assert counterpart("scipy.special.gammaln") == "pforjac.scipy.special.gammaln"
    assert counterpart("numpy.linalg.solve") == "pforjac.numpy.linalg.solve"
    assert counterpart("scipy.special.no_such_function") is None
    assert counterpart("numpy.no_such_function") is None
