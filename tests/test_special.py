"""pforjac.scipy.special: values against scipy, derivatives against closed forms (scipy's
own derivative functions, textbook formulas) and central differences, every Jacobian path,
and scipy.special's ufuncs dispatched on Tensors."""
import subprocess
import sys

import numpy as np
import pytest
import scipy.special as sc

import pforjac as pj
import pforjac.scipy.special as psp
from pforjac.testing import check_grads

RNG = np.random.default_rng(7)
X = RNG.uniform(0.3, 2.5, (2, 3))          # positive: in every function's domain
U = RNG.uniform(0.1, 0.9, (2, 3))          # in (0, 1)
R = RNG.uniform(-2.0, 2.0, (2, 3))         # real

# name -> (arguments in float64, the numpy-side call if not scipy's own of the same name)
VALUES = {
    "erf": (R,), "erfc": (R,), "erfinv": (U,), "erfcinv": (2 * U,), "ndtr": (R,),
    "log_ndtr": (R,), "ndtri": (U,), "expit": (R,), "logit": (U,), "log_expit": (R,),
    "gamma": (X,), "gammaln": (X,), "rgamma": (X,), "gammasgn": (X,), "digamma": (X,),
    "psi": (X,), "beta": (X, X[::-1]), "betaln": (X, X[0]), "gammainc": (X, X[::-1]),
    "gammaincc": (X, X[::-1]), "betainc": (X, X[::-1], U), "xlogy": (R, X), "xlog1py": (R, X),
    "entr": (X,), "rel_entr": (X, X[::-1]), "kl_div": (X, X[::-1]), "j0": (R,), "j1": (R,),
    "y0": (X,), "y1": (X,), "i0": (R,), "i1": (R,), "i0e": (R,), "i1e": (R,),
}
COMPOSED = {"expit", "log_expit"}     # of pforjac ops, not scipy's kernel
ORDERED = {"polygamma": (2, X), "multigammaln": (X + 1.0, 3), "jv": (2.5, X), "jn": (3, R),
           "yv": (1.5, X), "yn": (2, X), "iv": (0.5, X), "ive": (1.0, R)}


@pytest.mark.parametrize("name", sorted(VALUES) + sorted(ORDERED))
def test_values_match_scipy(name):
    args = VALUES.get(name) or ORDERED[name]
    got = getattr(psp, name)(*[pj.constant(a) if isinstance(a, np.ndarray) else a for a in args])
    want = getattr(sc, name)(*args)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_float32_stays_float32_and_float16_float16(name):
    for dtype in (np.float32, np.float16):
        args = [pj.constant(a.astype(dtype)) for a in VALUES[name]]
        got = getattr(psp, name)(*args)
        assert got.dtype == dtype, (name, dtype, got.dtype)
        want = getattr(sc, name)(*[a.astype(dtype).astype(np.float32) for a in VALUES[name]])
        if name in COMPOSED:
            np.testing.assert_allclose(got.numpy(), want, rtol=4e-3 if dtype == np.float16 else 1e-6)
        else:
            np.testing.assert_array_equal(got.numpy(), want.astype(dtype))   # scipy's, rounded


def test_logsumexp_matches_scipy_in_every_mode():
    a = RNG.normal(size=(3, 4))
    b = RNG.uniform(-1.0, 2.0, (3, 4))
    for kw in ({}, {"axis": 0}, {"axis": (0, 1)}, {"axis": -1, "keepdims": True},
               {"b": b}, {"b": b[0], "axis": 1, "return_sign": True},
               {"b": np.abs(b), "axis": 0, "keepdims": True, "return_sign": True}):
        got = psp.logsumexp(pj.constant(a), **kw)
        want = sc.logsumexp(a, **kw)
        for g, w in zip(got if kw.get("return_sign") else [got],
                        want if kw.get("return_sign") else [want]):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-13, err_msg=str(kw))


def test_logsumexp_is_stable_and_nan_for_a_negative_sum_without_sign():
    a = pj.constant(np.array([1000.0, 1000.0]))
    assert abs(float(psp.logsumexp(a).numpy()) - (1000.0 + np.log(2.0))) < 1e-12
    a, b = pj.constant(np.array([1.0, 2.0])), np.array([1.0, -1.0])
    assert np.isnan(psp.logsumexp(a, b=b).numpy())
    out, sign = psp.logsumexp(a, b=b, return_sign=True)
    assert sign.numpy() == -1.0 and abs(out.numpy() - np.log(np.e ** 2 - np.e)) < 1e-12


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_axis_none_is_over_every_axis_as_scipy(name):
    a = RNG.normal(size=(2, 3))
    for axis in (None, 0, 1):
        np.testing.assert_allclose(getattr(psp, name)(pj.constant(a), axis=axis).numpy(),
                                   getattr(sc, name)(a, axis=axis), rtol=1e-13)


# -- derivatives: closed forms -------------------------------------------------------------------
def _diag_derivatives(f, x):
    """f' and f'' of an elementwise f at x, from pforjac's jacobian and hessian."""
    jac = pj.jacobian(f, pj.constant(x), vectorize=True).numpy().reshape(x.size, x.size)
    hess = pj.hessian(lambda z: pj.sum(f(z)), pj.constant(x), vectorize=True).numpy()
    return np.diag(jac).reshape(x.shape), np.diag(hess.reshape(x.size, x.size)).reshape(x.shape)


SQRT_PI = np.sqrt(np.pi)
CLOSED = {   # name: (f, x, f', f'')
    "erf": (psp.erf, R, 2 / SQRT_PI * np.exp(-R ** 2), -4 * R / SQRT_PI * np.exp(-R ** 2)),
    "erfc": (psp.erfc, R, -2 / SQRT_PI * np.exp(-R ** 2), 4 * R / SQRT_PI * np.exp(-R ** 2)),
    "erfinv": (psp.erfinv, U, SQRT_PI / 2 * np.exp(sc.erfinv(U) ** 2),
               np.pi / 2 * sc.erfinv(U) * np.exp(2 * sc.erfinv(U) ** 2)),
    "ndtr": (psp.ndtr, R, np.exp(-R ** 2 / 2) / np.sqrt(2 * np.pi),
             -R * np.exp(-R ** 2 / 2) / np.sqrt(2 * np.pi)),
    "ndtri": (psp.ndtri, U, np.sqrt(2 * np.pi) * np.exp(sc.ndtri(U) ** 2 / 2),
              2 * np.pi * sc.ndtri(U) * np.exp(sc.ndtri(U) ** 2)),
    "gammaln": (psp.gammaln, X, sc.digamma(X), sc.polygamma(1, X)),
    "digamma": (psp.digamma, X, sc.polygamma(1, X), sc.polygamma(2, X)),
    "polygamma3": (lambda z: psp.polygamma(3, z), X, sc.polygamma(4, X), sc.polygamma(5, X)),
    "gamma": (psp.gamma, X, sc.gamma(X) * sc.digamma(X),
              sc.gamma(X) * (sc.digamma(X) ** 2 + sc.polygamma(1, X))),
    "logit": (psp.logit, U, 1 / (U * (1 - U)), (2 * U - 1) / (U * (1 - U)) ** 2),
    "entr": (psp.entr, X, -np.log(X) - 1, -1 / X),
    "jv2.5": (lambda z: psp.jv(2.5, z), X, sc.jvp(2.5, X), sc.jvp(2.5, X, 2)),
    "jn3": (lambda z: psp.jn(3, z), R, sc.jvp(3, R), sc.jvp(3, R, 2)),
    "j0": (psp.j0, R, sc.jvp(0, R), sc.jvp(0, R, 2)),
    "j1": (psp.j1, R, sc.jvp(1, R), sc.jvp(1, R, 2)),
    "y0": (psp.y0, X, sc.yvp(0, X), sc.yvp(0, X, 2)),
    "y1": (psp.y1, X, sc.yvp(1, X), sc.yvp(1, X, 2)),
    "yn2": (lambda z: psp.yn(2, z), X, sc.yvp(2, X), sc.yvp(2, X, 2)),
    "yv1.5": (lambda z: psp.yv(1.5, z), X, sc.yvp(1.5, X), sc.yvp(1.5, X, 2)),
    "i0": (psp.i0, R, sc.ivp(0, R), sc.ivp(0, R, 2)),
    "i1": (psp.i1, R, sc.ivp(1, R), sc.ivp(1, R, 2)),
    "iv0.5": (lambda z: psp.iv(0.5, z), X, sc.ivp(0.5, X), sc.ivp(0.5, X, 2)),
    "i0e": (psp.i0e, X, sc.ivp(0, X) * np.exp(-X) - sc.i0e(X),
            np.exp(-X) * (sc.ivp(0, X, 2) - 2 * sc.ivp(0, X)) + sc.i0e(X)),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_first_and_second_derivatives_match_closed_forms(name):
    f, x, d1, d2 = CLOSED[name]
    got1, got2 = _diag_derivatives(f, x)
    np.testing.assert_allclose(got1, d1, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got2, d2, rtol=1e-8, atol=1e-10)


def test_binary_partial_derivatives_match_closed_forms():
    a, b = X, X[::-1]
    ga, gb = pj.vjp(lambda p, q: psp.betaln(p, q), (pj.constant(a), pj.constant(b)),
                    pj.constant(np.ones_like(a)))[1]
    np.testing.assert_allclose(ga.numpy(), sc.digamma(a) - sc.digamma(a + b), rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), sc.digamma(b) - sc.digamma(a + b), rtol=1e-12)
    gx, gy = pj.vjp(psp.xlogy, (pj.constant(R), pj.constant(X)), pj.constant(np.ones_like(R)))[1]
    np.testing.assert_allclose(gx.numpy(), np.log(X), rtol=1e-13)
    np.testing.assert_allclose(gy.numpy(), R / X, rtol=1e-13)
    dx = pj.vjp(lambda z: psp.gammainc(2.5, z), pj.constant(X), pj.constant(np.ones_like(X)))[1]
    np.testing.assert_allclose(dx.numpy(), X ** 1.5 * np.exp(-X) / sc.gamma(2.5), rtol=1e-12)


def test_xlogy_at_zero_has_a_zero_y_derivative():
    x, y = pj.constant(np.array([0.0, 2.0])), pj.constant(np.array([0.0, 4.0]))
    with np.errstate(divide="ignore"):          # the x-derivative log(0) = -inf
        _, (gx, gy) = pj.vjp(psp.xlogy, (x, y), pj.ones_like(x))
    assert gy.numpy().tolist() == [0.0, 0.5] and gx.numpy().tolist() == [-np.inf, np.log(4.0)]


# -- derivatives: central differences (to second order) of the composites ------------------------
COMPOSITES = {
    "logsumexp": lambda a: psp.logsumexp(a, axis=1),
    "logsumexp_b": lambda a: psp.logsumexp(a, b=np.array([0.5, 2.0, 1.0]), axis=-1, keepdims=True),
    "logsumexp_b_tensor": lambda a: psp.logsumexp(a[0], b=pj.exp(a[1])),
    "logsumexp_sign": lambda a: psp.logsumexp(a, b=np.array([1.0, -3.0, 0.5]), axis=1,
                                              return_sign=True)[0],
    "softmax": lambda a: psp.softmax(a), "log_softmax": lambda a: psp.log_softmax(a, axis=0),
    "multigammaln": lambda a: psp.multigammaln(a * a + 2.0, 3),
    "kl_div": lambda a: psp.kl_div(a * a + 0.5, 1.5 - 0.2 * a),
    "log_expit": psp.log_expit, "expit": psp.expit,
    "betainc": lambda a: psp.betainc(2.0, 3.0, 0.5 + 0.2 * a),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_gradients_and_hessians_match_central_differences(name):
    check_grads(COMPOSITES[name], RNG.uniform(-1.0, 1.0, (2, 3)), order=2)


# -- every Jacobian path ---------------------------------------------------------------------------
def _body(x):
    return psp.erf(x) * psp.gammaln(x + 1.0) + psp.jv(1, x) + psp.logsumexp(x, axis=-1,
                                                                           keepdims=True)


def _tape_jacobians(x, **kw):
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _body(x)
    return tape.jacobian(y, x, **kw).numpy(), tape.batch_jacobian(y, x, **kw).numpy()


def test_jacobian_and_batch_jacobian_agree_on_pfor_while_loop_and_function():
    x = pj.constant(X)
    pfor_j, pfor_b = _tape_jacobians(x)
    loop_j, loop_b = _tape_jacobians(x, experimental_use_pfor=False)
    np.testing.assert_allclose(pfor_j, loop_j, rtol=1e-13)
    np.testing.assert_allclose(pfor_b, loop_b, rtol=1e-13)
    eps = 1e-6
    fd = np.stack([(_body(pj.constant(X + eps * e)).numpy() - _body(pj.constant(X - eps * e)).numpy())
                   / (2 * eps) for e in np.eye(X.size).reshape(X.size, *X.shape)], axis=-1)
    np.testing.assert_allclose(pfor_j, fd.reshape(pfor_j.shape), rtol=1e-6, atol=1e-8)


def test_compiled_function_gives_the_eager_jacobian():
    def jac(z):
        with pj.GradientTape() as tape:
            tape.watch(z)
            y = _body(z)
        return tape.batch_jacobian(y, z)
    compiled = pj.function(jac)
    x = pj.constant(X)
    for _ in range(2):
        np.testing.assert_allclose(compiled(x).numpy(), jac(x).numpy(), rtol=1e-13)


# -- scipy.special's ufuncs on Tensors --------------------------------------------------------
def test_scipy_ufuncs_on_tensors_run_pforjac_ops_under_a_tape():
    x = pj.constant(X)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = sc.erf(x)
        z = sc.xlogy(np.full(X.shape, 2.0), x)       # mixed ndarray and Tensor
        w = sc.jv(2, x) + sc.gammaln(x)
    assert isinstance(y, pj.Tensor) and isinstance(z, pj.Tensor)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 / SQRT_PI * np.exp(-X ** 2))
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), 2.0 / X)
    np.testing.assert_allclose(tape.gradient(w, x).numpy(), sc.jvp(2, X) + sc.digamma(X))


def test_scipy_python_functions_on_a_tracked_tensor_raise_not_drop():
    x = pj.constant(X)
    with pj.GradientTape() as tape:
        tape.watch(x)
        for fn in (sc.logsumexp, sc.softmax, sc.log_softmax, lambda t: sc.polygamma(1, t),
                   lambda t: sc.multigammaln(t + 2.0, 2)):
            with pytest.raises(TypeError, match="drop it from the derivative"):
                fn(x)
        with pytest.raises(TypeError, match="scipy.special.hyp2f1"):
            sc.hyp2f1(1.0, 1.0, 1.5, x)          # a ufunc pforjac lacks, named as scipy's
    assert np.allclose(sc.logsumexp(x), sc.logsumexp(X))    # outside a tape: numpy's values


def test_shape_parameters_without_a_derivative_raise_naming_the_op():
    a = pj.constant(X)
    with pj.GradientTape() as tape:
        tape.watch(a)
        y = psp.gammainc(a, 1.5)
    with pytest.raises(NotImplementedError, match="gammainc: no derivative with respect to "
                                                  "argument 0"):
        tape.gradient(y, a)


def test_constant_orders_and_arrays_of_orders():
    with pytest.raises(TypeError, match="polygamma: n"):
        psp.polygamma(1.5, pj.constant(X))
    with pytest.raises(ValueError, match=r"multigammaln: every a must be > \(d - 1\) / 2"):
        psp.multigammaln(pj.constant(X), 4)
    v = np.array([0.5, 1.0, 2.5])                      # broadcast against x, as scipy's
    np.testing.assert_allclose(psp.jv(v, pj.constant(X)).numpy(), sc.jv(v, X), rtol=1e-13)
    jac = pj.jacobian(lambda z: sc.iv(v, z), pj.constant(X), vectorize=True).numpy()
    np.testing.assert_allclose(np.diag(jac.reshape(X.size, X.size)), sc.ivp(v, X).ravel(),
                               rtol=1e-10)
    order = pj.constant(v)
    with pj.GradientTape() as tape:
        tape.watch(order)
        y = sc.jv(order, X)
    with pytest.raises(NotImplementedError, match="jv: no derivative with respect to argument 0"):
        tape.gradient(y, order)


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=str(pj.__file__).rsplit("/pforjac/", 1)[0]).stdout


def test_import_pforjac_does_not_import_scipy_and_registers_on_first_use():
    out = _run("import sys, numpy as np, pforjac as pj\n"
               "print('scipy' in sys.modules)\n"
               "import scipy.special as sc\n"
               "x = pj.constant([0.5])\n"
               "with pj.GradientTape() as t:\n"
               "    t.watch(x)\n"
               "    y = sc.erf(x)\n"
               "print(type(y).__name__, round(float(t.gradient(y, x).numpy()[0]), 6))\n")
    assert out.split() == ["False", "Tensor", str(round(2 / SQRT_PI * np.exp(-0.25), 6))]


def test_without_scipy_pforjac_imports_and_the_functions_say_how_to_install_it():
    out = _run("import sys\nsys.modules['scipy'] = None\n"
               "import pforjac as pj, pforjac.scipy.special as psp\n"
               "print(float(psp.logsumexp(pj.zeros([2], 'float64')).numpy()))\n"
               "try:\n    psp.erf(pj.constant([0.5]))\n"
               "except ImportError as e:\n    print(e)\n")
    assert str(np.log(2.0)) in out and "pip install pforjac[scipy]" in out


def test_scipy_ufuncs_in_traced_code_compiled_and_vectorized():
    def f(z):
        return sc.erf(z) * sc.gammaln(z) + sc.jv(1, z)
    x = pj.constant(X)
    want = sc.erf(X) * sc.gammaln(X) + sc.jv(1, X)
    np.testing.assert_allclose(pj.function(f)(x).numpy(), want, rtol=1e-13)
    jac = pj.jacobian(f, x, vectorize=True).numpy().reshape(X.size, X.size)
    d = 2 / SQRT_PI * np.exp(-X ** 2) * sc.gammaln(X) + sc.erf(X) * sc.digamma(X) + sc.jvp(1, X)
    np.testing.assert_allclose(np.diag(jac), d.ravel(), rtol=1e-10)
    np.testing.assert_allclose(jac - np.diag(np.diag(jac)), 0.0, atol=0.0)
