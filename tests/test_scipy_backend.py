"""The scipy helpers honour the backend choice (`backend=`, else `pforjac.config.backend`),
and after the first call run the compiled code directly (`Function.specialize`), with
the results of the full `pforjac.function` call."""
from __future__ import annotations

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.integrate as si  # noqa: E402
import scipy.optimize as so  # noqa: E402

import pforjac as pj  # noqa: E402
import pforjac.scipy.integrate as pi  # noqa: E402
import pforjac.scipy.optimize as po  # noqa: E402
from pforjac.config import config  # noqa: E402
from pforjac.scipy._solving import Derivatives  # noqa: E402
from odes import robertson, robertson_jac  # noqa: E402


def _spy(monkeypatch, module, name):
    seen, real = {}, getattr(module, name)

    def spy(*args, **kwargs):
        seen["args"], seen["kwargs"] = args, kwargs
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, spy)
    return seen


# -- the backend choice ---------------------------------------------------------------------------
def test_the_backend_comes_from_the_argument_else_from_pforjac_config(monkeypatch):
    assert Derivatives("who", "numba").backend == "numba"
    monkeypatch.setattr(config, "_backend", "numba")
    assert Derivatives("who").backend == "numba"
    assert Derivatives("who", "numpy").backend == "numpy"
    monkeypatch.setattr(config, "_backend", "numpy")
    assert Derivatives("who").backend == "numpy"


@pytest.mark.parametrize("call", [
    lambda: po.minimize(lambda x: np.sum(x ** 2), np.ones(2), method="BFGS", backend="jax"),
    lambda: po.minimize(lambda x: np.sum(x ** 2), np.ones(2), method="Nelder-Mead",
                        backend="jax"),
    lambda: po.least_squares(lambda x: x - 1.0, np.ones(2), backend="jax"),
    lambda: po.root(lambda x: x - 1.0, np.ones(2), backend="jax"),
    lambda: po.curve_fit(lambda t, a: a * t, np.ones(3), np.ones(3), backend="jax"),
    lambda: pi.solve_ivp(lambda t, y: -y, (0, 1), np.ones(2), method="BDF", backend="jax"),
])
def test_an_unknown_backend_is_refused_naming_the_helper_and_the_choices(call):
    with pytest.raises(ValueError, match=r"pforjac.scipy.*backend.*'jax'.*numpy.*numba"):
        call()


# -- the direct call after the first -------------------------------------------------------------
def _wavy(x):
    return np.sum(np.sin(x) * x[::-1]) + np.sum(x ** 4)


def test_the_direct_call_gives_the_full_calls_results_and_falls_back_on_another_signature():
    f = pj.function(pj.value_and_grad(_wavy), backend="numpy")
    x = np.linspace(-1.0, 1.0, 5)
    f(x)
    call = f.specialize(x)
    for k in range(3):
        y = x + 0.1 * k
        value, g = call(y)
        want_value, want_g = f(y)
        assert value == want_value and np.array_equal(g, want_g)
        assert not g.flags.writeable          # as pforjac.function hands its results out
        assert f.specialize(x, writable=True)(y)[1].flags.writeable      # (made afresh)
    wider = np.linspace(-1.0, 1.0, 7)
    value, g = call(wider)                    # another shape: the full call, a new trace
    assert g.shape == (7,) and np.array_equal(g, f(wider)[1])
    np.testing.assert_array_equal(call(x[::-1].copy())[1], f(x[::-1].copy())[1])
    assert np.array_equal(call(x[::2])[1], f(np.ascontiguousarray(x[::2]))[1])  # strided
    assert f.trace_count == 3


def test_a_float_time_is_traced_once_as_an_input_not_once_per_value():
    jac = pi._jacobian(robertson, 0.0, np.array([1.0, 0.0, 0.0]), (), "Radau", False,
                       Derivatives("who", "numpy"))
    y = np.array([0.9, 2e-5, 0.1])
    for t in (0.0, 0.5, np.float64(3.0), 7):            # (an int: the full call)
        np.testing.assert_allclose(jac(t, y), robertson_jac(t, y), rtol=1e-14)


def test_code_with_structure_guards_gives_the_full_calls_results():
    f = pj.function(pj.jacrev(lambda x: np.sqrt(x) * 2.0), backend="numpy")
    x = np.array([1.0, 4.0])
    f(x)
    call = f.specialize(x, writable=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        for y in (x, np.array([0.0, 4.0]), np.array([-1.0, np.inf])):
            np.testing.assert_array_equal(call(y), f(y))


def test_the_helpers_call_the_direct_path_after_the_first_call(monkeypatch):
    made = []
    real = pj.compiled.Function.specialize

    def spy(function, *args, **kwargs):
        made.append(real(function, *args, **kwargs))
        return made[-1]
    monkeypatch.setattr(pj.compiled.Function, "specialize", spy)
    res = po.minimize(po.rosen, np.zeros(4), method="BFGS", backend="numpy")
    want = so.minimize(so.rosen, np.zeros(4), method="BFGS", jac=so.rosen_der)
    assert res.success and len(made) == 1 and made[0] is not None
    np.testing.assert_allclose(res.x, want.x, rtol=1e-6)


# -- the numba backend ----------------------------------------------------------------------------
def test_bfgs_on_numba_takes_value_and_gradient_from_one_native_call():
    pytest.importorskip("numba")
    f = pj.function(pj.value_and_grad(po.rosen), backend="numba")
    x = np.linspace(-1.0, 1.5, 6)
    f(x)
    call = f.specialize(x, writable=True)
    assert call.backend == "numba"
    value, g = call(x + 0.25)
    np.testing.assert_allclose(g, so.rosen_der(x + 0.25), rtol=1e-13)
    assert value == pytest.approx(so.rosen(x + 0.25), rel=1e-14) and g.flags.writeable
    res = po.minimize(po.rosen, np.zeros(6), method="BFGS", backend="numba")
    want = so.minimize(so.rosen, np.zeros(6), method="BFGS", jac=so.rosen_der)
    assert res.success and type(res.x) is np.ndarray and res.njev == res.nfev
    assert type(res.fun) is type(want.fun) is np.float64       # (numpy out: a numpy scalar)
    assert abs(res.nit - want.nit) <= 3
    np.testing.assert_allclose(res.x, want.x, rtol=1e-5)


def test_radau_on_numba_compiles_the_right_hand_side_too_with_the_same_values(monkeypatch):
    pytest.importorskip("numba")
    seen = _spy(monkeypatch, si, "solve_ivp")
    kw = dict(method="Radau", rtol=1e-8, atol=1e-12)
    y0 = np.array([1.0, 0.0, 0.0])
    got = pi.solve_ivp(robertson, (0, 1e3), y0, backend="numba", **kw)
    rhs = seen["args"][0]
    assert rhs.__name__ == "compiled_rhs"
    want = si.solve_ivp(robertson, (0, 1e3), y0, jac=robertson_jac, **kw)
    assert got.success and (got.nfev, got.njev, got.nlu) == (want.nfev, want.njev, want.nlu)
    np.testing.assert_allclose(got.y[:, -1], want.y[:, -1], rtol=1e-10, atol=1e-16)
    ys = np.random.default_rng(0).random((200, 3)) * [1.0, 1e-4, 1.0]
    for t, y in zip(np.linspace(0.0, 10.0, 200), ys):   # numba folds y ** 2.0 to y * y,
        np.testing.assert_array_max_ulp(rhs(t, y), robertson(t, y), maxulp=1)   # 1 ulp
        np.testing.assert_allclose(seen["kwargs"]["jac"](t, y), robertson_jac(t, y),
                                   rtol=1e-15)


def test_an_untraceable_right_hand_side_stays_the_users_on_numba(monkeypatch):
    pytest.importorskip("numba")
    seen = _spy(monkeypatch, si, "solve_ivp")

    def branching(t, y):
        return -y if y[0] > 0 else y
    with pytest.warns(RuntimeWarning, match="could not be compiled"):
        got = pi.solve_ivp(branching, (0, 1), np.ones(2), method="BDF", backend="numba")
    assert got.success and seen["args"][0].__name__ == "rhs"
    np.testing.assert_allclose(got.y[:, -1], np.exp(-1.0), rtol=1e-2)


@pytest.mark.parametrize("helper", ["least_squares", "minimize", "solve_ivp"])
def test_the_sparse_paths_prepare_for_the_helpers_backend(monkeypatch, helper):
    import pforjac.sparse as ps
    monkeypatch.setattr(config, "_backend", "numba")     # the argument, not the config, wins
    n, x0 = 120, np.full(120, 2.0)
    if helper == "least_squares":
        seen = _spy(monkeypatch, ps, "prepare_jacobian")
        res = po.least_squares(lambda x: x ** 2 - 1.0, x0, sparse=True, backend="numpy")
        np.testing.assert_allclose(res.x, np.ones(n), rtol=1e-6)
    elif helper == "minimize":
        seen = _spy(monkeypatch, ps, "prepare_hessian")
        res = po.minimize(lambda x: np.sum((x - 1.0) ** 4 + (x - 1.0) ** 2), x0,
                          method="Newton-CG", sparse=True, backend="numpy")
        np.testing.assert_allclose(res.x, np.ones(n), atol=1e-4)
    else:
        seen = _spy(monkeypatch, ps, "prepare_ode_jacobian")
        res = pi.solve_ivp(lambda t, y: -y, (0.0, 1.0), x0, method="BDF", sparse=True,
                           backend="numpy")
        np.testing.assert_allclose(res.y[:, -1], x0 * np.exp(-1.0), rtol=1e-2)
    assert seen["kwargs"]["backend"] == "numpy"
