"""pforjac.scipy.stats: values equal scipy.stats's on a grid reaching into the tails, and
derivatives in the data and the parameters equal central differences of scipy's own
functions in float64."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

ss = pytest.importorskip("scipy.stats")
pst = pytest.importorskip("pforjac.scipy.stats")

X = np.array([-40.0, -5.0, -1.5, -0.3, 0.0, 0.2, 0.5, 0.999, 1.0, 2.5, 10.0, 60.0])
K = np.array([-1.0, 0.0, 1.0, 2.0, 3.5, 5.0, 10.0, 30.0])
CONTINUOUS = [("norm", ()), ("norm", (0.3, 2.0)), ("t", (3.5,)), ("t", (1.5, 0.2, 0.7)),
              ("gamma", (2.5,)), ("gamma", (0.7, 0.1, 2.0)), ("chi2", (3.0,)),
              ("chi2", (1.5, -0.2, 0.5)), ("beta", (2.0, 3.5)),
              ("beta", (0.5, 0.8)), ("expon", ()), ("expon", (0.1, 3.0)),
              ("laplace", (0.2, 1.5)), ("cauchy", (0.0, 2.0)), ("lognorm", (0.8,)),
              ("lognorm", (1.2, 0.0, 2.0)), ("logistic", (0.5, 2.0)), ("uniform", (-1.0, 3.0))]
DISCRETE = [("poisson", (3.2,)), ("poisson", (2.0, 1)), ("binom", (10, 0.3)),
            ("bernoulli", (0.3,)), ("nbinom", (4, 0.4)), ("geom", (0.3,))]
DENSITY = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
MASS = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]
# formulas through the shape parameters of gammainc/betainc: no derivative in those
NO_SHAPE_DERIVATIVE = {"t", "gamma", "chi2", "beta"}
INSIDE = {"beta": np.array([0.15, 0.4, 0.85]), "uniform": np.array([-0.5, 0.7, 1.9])}


def _ids(cases):
    return [f"{name}{args}" for name, args in cases]


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15, equal_nan=True)


@pytest.mark.parametrize("name, args", CONTINUOUS, ids=_ids(CONTINUOUS))
def test_continuous_values_equal_scipys(name, args):
    for method in DENSITY:
        want = getattr(getattr(ss, name), method)(X, *args)
        _close(getattr(getattr(pst, name), method)(X, *args).numpy(), want)


@pytest.mark.parametrize("name, args", DISCRETE, ids=_ids(DISCRETE))
def test_discrete_values_equal_scipys(name, args):
    for method in MASS:
        want = getattr(getattr(ss, name), method)(K, *args)
        _close(getattr(getattr(pst, name), method)(K, *args).numpy(), want)


def _central(f, v, eps=1e-6):
    out = np.zeros_like(v)
    for i in range(v.size):
        up, down = v.copy(), v.copy()
        up[i] += eps
        down[i] -= eps
        out[i] = (f(up) - f(down)) / (2 * eps)
    return out


def _check(ours, theirs, v):
    got = np.asarray(pj.grad(lambda v: pj.sum(ours(v)))(v))
    want = _central(lambda v: np.sum(theirs(v)), v)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-8)


def _split(v, n):
    return v[:n], [v[n + i] for i in range(len(v) - n)]


@pytest.mark.parametrize("name, args", CONTINUOUS, ids=_ids(CONTINUOUS))
def test_continuous_derivatives_in_data_and_parameters(name, args):
    x = INSIDE.get(name, np.array([0.3, 1.1, 2.7]))
    shapes = len(getattr(pst, name).shapes)
    full = np.concatenate([x, np.asarray(args, float), [0.05, 1.3][len(args) - shapes:]])
    for method in DENSITY:
        ours, theirs = getattr(getattr(pst, name), method), getattr(getattr(ss, name), method)
        if name in NO_SHAPE_DERIVATIVE and method not in ("logpdf", "pdf"):
            fixed = full[len(x):len(x) + shapes].tolist()

            def restricted(f, v, fixed=fixed):
                data, rest = _split(v, len(x))
                return f(data, *fixed, *rest)
            v = np.concatenate([x, full[len(x) + shapes:]])
            _check(lambda v: restricted(ours, v), lambda v: restricted(theirs, v), v)
            continue
        _check(lambda v: ours(*_with(v, len(x))), lambda v: theirs(*_with(v, len(x))), full)


def _with(v, n):
    data, rest = _split(v, n)
    return (data, *rest)


@pytest.mark.parametrize("name, args", DISCRETE, ids=_ids(DISCRETE))
def test_discrete_derivatives_in_the_rate_or_probability(name, args):
    k = np.array([0.0, 1.0, 3.0]) + (name == "geom")
    k = k[:1] if name == "bernoulli" else k     # (k = 1: its sf is 0, logsf -inf)
    counts, rate = list(args[:-1]) if name in ("binom", "nbinom") else [], args[-1]
    if name == "poisson" and len(args) == 2:
        counts, rate = [], args[0]
    for method in MASS:
        ours, theirs = getattr(getattr(pst, name), method), getattr(getattr(ss, name), method)
        _check(lambda v: ours(k, *counts, v[0]), lambda v: theirs(k, *counts, v[0]),
               np.array([rate], float))


def test_multivariate_normal_values_and_derivatives():
    rng = np.random.default_rng(0)
    a, mu, x = rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=(4, 3))
    cov = a @ a.T + np.eye(3)
    for args in [(x, mu, cov), (x[0], mu, cov), (x, None, np.eye(3)),
                 (x, mu, np.array([1.0, 2.0, 3.0])), (np.array([0.1, 0.5]), 0.2, 1.5)]:
        _close(pst.multivariate_normal.logpdf(*args).numpy(), ss.multivariate_normal.logpdf(*args))
        _close(pst.multivariate_normal.pdf(*args).numpy(), ss.multivariate_normal.pdf(*args))

    def unpack(v):
        return v[:12].reshape(4, 3), v[12:15], v[15:].reshape(3, 3)

    def theirs(v):
        x, mu, a = unpack(v)
        return ss.multivariate_normal.logpdf(x, mu, a @ a.T + np.eye(3))

    def ours(v):
        x, mu, a = pj.reshape(v[:12], (4, 3)), v[12:15], pj.reshape(v[15:], (3, 3))
        return pst.multivariate_normal.logpdf(x, mu, a @ pj.swapaxes(a, 0, 1) + np.eye(3))
    _check(ours, theirs, np.concatenate([x.ravel(), mu, a.ravel()]))
    _close(pst.multivariate_normal.entropy(mu, cov).numpy(), ss.multivariate_normal.entropy(mu, cov))
    def square(v):
        return pj.reshape(v, (3, 3)) @ pj.swapaxes(pj.reshape(v, (3, 3)), 0, 1) + np.eye(3)
    _check(lambda v: pst.multivariate_normal.entropy(cov=square(v)),
           lambda v: ss.multivariate_normal.entropy(cov=v.reshape(3, 3) @ v.reshape(3, 3).T
                                                    + np.eye(3)), a.ravel())


def test_multivariate_normal_allow_singular():
    mu = np.array([0.5, -0.2, 1.0])
    cov = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    x = np.array([[1.0, 1.0, 0.5], [1.0, 2.0, 0.5], [0.3, 0.3, -1.0]]) + mu
    want = ss.multivariate_normal.logpdf(x, mu, cov, allow_singular=True)
    assert np.isinf(want[1]) and np.isfinite(want[0])
    _close(pst.multivariate_normal.logpdf(x, mu, cov, allow_singular=True).numpy(), want)
    # the density is 0 off the support: derivatives along the support's directions only
    support, directions = x[[0, 2]], np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    _check(lambda v: pst.multivariate_normal.logpdf(support, mu + v @ directions, cov,
                                                    allow_singular=True),
           lambda v: ss.multivariate_normal.logpdf(support, mu + v @ directions, cov,
                                                   allow_singular=True), np.zeros(2))


def test_dirichlet_values_and_derivatives():
    alpha = np.array([1.5, 2.0, 0.7])
    p = np.random.default_rng(1).dirichlet(alpha, size=4).T
    for x in (p, p[:, 0], p[:2]):
        _close(pst.dirichlet.logpdf(x, alpha).numpy(), ss.dirichlet.logpdf(x, alpha))
        _close(pst.dirichlet.pdf(x, alpha).numpy(), ss.dirichlet.pdf(x, alpha))
    _check(lambda v: pst.dirichlet.logpdf(p, v), lambda v: ss.dirichlet.logpdf(p, v), alpha)
    _check(lambda v: pst.dirichlet.logpdf(pj.reshape(v, (2, 4)), alpha),
           lambda v: ss.dirichlet.logpdf(v.reshape(2, 4), alpha), p[:2].ravel())


def test_scipy_signatures_frozen_keywords_invalid_parameters():
    np.testing.assert_allclose(pst.norm(1.0, 2.0).logpdf(X).numpy(), ss.norm(1.0, 2.0).logpdf(X))
    np.testing.assert_allclose(pst.t.logpdf(X, df=3.0, scale=2.0).numpy(),
                               ss.t.logpdf(X, df=3.0, scale=2.0))
    assert np.isnan(pst.norm.logpdf(X, scale=-1.0).numpy()).all()
    assert np.isnan(pst.binom.pmf(K, 10, 1.5).numpy()).all()
    with pytest.raises(TypeError, match=r"pforjac.scipy.stats.t: missing shape parameter.*df"):
        pst.t.logpdf(X)
    with pytest.raises(TypeError, match=r"unexpected or repeated parameter 'sigma'"):
        pst.norm.logpdf(X, sigma=2.0)


def test_a_likelihood_on_every_path():
    data = np.array([0.3, -1.2, 2.2, 0.8])

    def nll(theta):
        return -pj.sum(pst.norm.logpdf(data, theta[0], pj.exp(theta[1])))
    theta = np.array([0.4, -0.1])
    want = _central(lambda v: -np.sum(ss.norm.logpdf(data, v[0], np.exp(v[1]))), theta)
    np.testing.assert_allclose(np.asarray(pj.grad(nll)(theta)), want, rtol=1e-7)
    np.testing.assert_allclose(np.asarray(pj.function(pj.grad(nll))(theta)), want, rtol=1e-7)
    hess = np.asarray(pj.hessian(nll, theta))
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12)
    rows = pj.vectorized_map(lambda th: nll(th), pj.constant(np.stack([theta, theta + 0.1])))
    np.testing.assert_allclose(rows.numpy()[0], float(np.asarray(nll(theta))), rtol=1e-12)


def test_scipys_own_function_names_the_counterpart():
    x = pj.constant(X)
    with pj.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError) as info:
            ss.norm.logpdf(x)
    assert str(info.value).startswith("scipy.stats.norm.logpdf converts its arguments")
    assert "call pforjac.scipy.stats.norm.logpdf instead" in str(info.value)


_ARRAY_API_SCRIPT = r'''
import os, sys
os.environ["SCIPY_ARRAY_API"] = "1"
import numpy as np, scipy.special as sp, scipy.stats as st, scipy.optimize as so
import scipy.integrate as si
import pforjac as pj
x0 = np.array([0.3, 1.2, 2.2, 0.8])
cases = {
    "special.softmax": lambda x: sp.softmax(x)[0], "special.xlogy": lambda x: sp.xlogy(x, x + 1).sum(),
    "special.entr": lambda x: sp.entr(x).sum(), "special.erf": lambda x: sp.erf(x).sum(),
    "special.gammaln": lambda x: sp.gammaln(x).sum(), "stats.moment": lambda x: st.moment(x, 3),
    "stats.skew": st.skew, "stats.kurtosis": st.kurtosis, "stats.variation": st.variation,
    "stats.sem": st.sem, "stats.tmean": st.tmean, "stats.gmean": st.gmean, "stats.hmean": st.hmean,
    "stats.pmean": lambda x: st.pmean(x, 2.0), "stats.entropy": st.entropy,
    "integrate.trapezoid": si.trapezoid, "optimize.rosen": so.rosen,
    "special.logsumexp": sp.logsumexp, "special.log_softmax": lambda x: sp.log_softmax(x)[1],
    "stats.zscore": lambda x: st.zscore(x)[0], "optimize.rosen_der": lambda x: so.rosen_der(x)[2],
}
failed = []
for name, f in cases.items():
    got = np.asarray(pj.grad(f)(x0))
    value = lambda v: float(np.asarray(f(pj.constant(v))))
    want = np.array([(value(x0 + 1e-6 * e) - value(x0 - 1e-6 * e)) / 2e-6 for e in np.eye(4)])
    if not np.allclose(got, want, rtol=1e-5, atol=1e-8):
        failed.append(name)
print("FAILED", failed) if failed else print("ALL", len(cases))
'''


def test_scipys_array_api_mode_runs_on_pforjac_numpy():
    """SCIPY_ARRAY_API is read when scipy is imported: a fresh interpreter (docs/stats.md)."""
    import os
    import pathlib
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", _ARRAY_API_SCRIPT], capture_output=True,
                          text=True, env=env, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ALL 21", done.stdout


@pytest.mark.parametrize("method", ["cdf", "sf", "logcdf", "logsf"])
def test_laplace_cdf_family_is_smooth_at_its_location(method):
    """The Laplace cdf has slope 1/2 at its location; written with |z| its derivative there
    came out 0. Far out the masked side must not overflow into the gradient."""
    ref = getattr(ss.laplace, method)
    for x in [0.0, -1e-9, 1e-9, -3.0, 2.5, 30.0, -30.0]:
        g = float(pj.grad(lambda t: getattr(pst.laplace, method)(t, 0.0, 1.0))(x))
        fd = (ref(x + 1e-6) - ref(x - 1e-6)) / 2e-6
        assert g == pytest.approx(fd, rel=1e-5, abs=1e-12), x
    for x in [800.0, -800.0]:
        assert np.isfinite(float(pj.grad(getattr(pst.laplace, method))(x)))


# -- t's cdf family near its location ----------------------------------------------------------
_Z = np.concatenate([[0.0], np.logspace(-12, 3, 31)])
_Z = np.concatenate([-_Z[::-1], _Z[1:]])
_CLOSED_CDF = {1.0: lambda z: 0.5 + np.arctan(z) / np.pi,           # Cauchy
               2.0: lambda z: 0.5 + z / (2.0 * np.sqrt(2.0 + z * z))}


def _t_reference(method, z, df):
    """scipy's values; for df 1 and 2 their closed forms (scipy's cdf cancels near the
    center there: 0.5 exactly at z = 3e-9 with df = 1)."""
    if df not in _CLOSED_CDF:
        return getattr(ss.t, method)(z, df)
    cdf, sf = _CLOSED_CDF[df](z), _CLOSED_CDF[df](-z)
    return {"cdf": cdf, "sf": sf, "logcdf": np.log(cdf), "logsf": np.log(sf)}[method]


@pytest.mark.parametrize("method", ["cdf", "sf", "logcdf", "logsf"])
def test_t_cdf_family_and_its_gradient_near_the_location_and_in_the_tails(method):
    """betainc's argument df / (df + z^2) cancels against 1 near the center: the gradient
    was 34% off at 1e-7 from loc and inf/NaN below 1e-9. Values and gradients against
    closed forms / scipy on |z| from 1e-12 to 1e3, both tails, df from 0.5 to 1e6."""
    loc, scale = 0.3, 1.7
    x = loc + scale * _Z
    sign = 1.0 if method in ("cdf", "logcdf") else -1.0
    for df in [0.5, 1.0, 2.0, 3.0, 30.0, 1e3, 1e6]:
        f = lambda t: getattr(pst.t, method)(t, df, loc, scale)
        want = _t_reference(method, _Z, df)
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-10, atol=1e-300)
        grad = np.asarray(pj.vmap(pj.grad(f))(x))
        density = ss.t.pdf(_Z, df) / scale
        slope = sign * density / (1.0 if method in ("cdf", "sf") else np.exp(want))
        finite = np.isfinite(slope)             # (log of an underflowed tail: both NaN)
        assert finite.sum() > 0.9 * finite.size and np.isfinite(grad[finite]).all()
        np.testing.assert_allclose(grad[finite], slope[finite], rtol=1e-9, atol=1e-300)


def test_t_cdf_gradient_equals_central_differences_at_the_location():
    for df in [0.5, 4.0, 1e5]:
        for z in [0.0, 1e-12, -1e-9, 1e-7, -0.3, 0.999, 1.0, 1.001, -3.0]:
            g = float(pj.grad(lambda t: pst.t.cdf(t, df, 0.3, 1.7))(0.3 + 1.7 * z))
            h = 1e-5
            fd = (ss.t.cdf(z + h, df) - ss.t.cdf(z - h, df)) / (2 * h * 1.7)
            assert g == pytest.approx(fd, rel=1e-7), (df, z)
