"""HIPS autograd's scipy.special test cases (tests/test_scipy.py: its "Special" and
logsumexp checks), ported as cases: the same functions, argument ranges and differentiated
arguments, written with plain `scipy.special` (its ufuncs dispatch on Tensors) or, for
scipy's Python functions, `pforjac.scipy.special`; run through `pforjac.jacobian` and
`pforjac.hessian` (vectorized) and compared in float64 with central differences of scipy
itself to 1e-6 (relative to the derivative's scale)."""
import itertools

import numpy as np
import pytest
import scipy.special as sc

import pforjac as pj
import pforjac.scipy.special as psp

RNG = np.random.default_rng(1)


def R(*shape):
    return RNG.standard_normal(shape)


def U(lo, hi, shape=()):
    return RNG.uniform(lo, hi, shape)


def _fd_jacobian(f, x, h=1e-6):
    cols = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size).reshape(-1, *x.shape)]
    return np.stack([np.asarray(c, np.float64).ravel() for c in cols], axis=-1)


def _fd_hessian(f, x, h=1e-4):
    """Of sum(f(x)): the four-point mixed difference."""
    es = np.eye(x.size).reshape(-1, *x.shape) * h
    s = lambda z: float(np.sum(f(z)))          # noqa: E731
    return np.array([[(s(x + a + b) - s(x + a - b) - s(x - a + b) + s(x - a - b)) / (4 * h * h)
                      for b in es] for a in es])


def _close(got, want, rtol, atol=0.0):
    got = np.asarray(got.numpy(), np.float64).reshape(want.shape)
    assert np.abs(got - want).max() <= rtol * float(np.abs(want).max()) + atol, (got, want)


def check(pj_fn, sp_fn, x, hessian=True):
    """pforjac's Jacobian (and Hessian of the sum) of pj_fn at x against scipy's sp_fn's."""
    out = pj_fn(pj.constant(x))
    assert isinstance(out, pj.Tensor) and out.dtype == np.float64
    _close(pj.jacobian(pj_fn, pj.constant(x), vectorize=True), _fd_jacobian(sp_fn, x), 1e-6)
    if hessian:
        h = pj.hessian(lambda z: pj.sum(pj_fn(z)), pj.constant(x), vectorize=True)
        noise = 1e-7 * float(np.abs(np.sum(sp_fn(x))))     # roundoff / h^2 of the differences
        _close(h, _fd_hessian(sp_fn, x), 1e-5, noise)


# (name, function of the differentiated argument built from scipy's, that argument)
def _partial(fn, args, k):
    """fn with every argument but the k-th fixed."""
    return lambda z: fn(*args[:k], z, *args[k + 1:])


UNARY = [("psi", (0.3, 2.0)), ("digamma", (0.3, 2.0)), ("gamma", (0.3, 2.0)),
         ("gammaln", (0.3, 2.0)), ("gammasgn", (0.3, 2.0)), ("rgamma", (0.3, 2.0)),
         ("j0", (0.2, 20.0)), ("j1", (0.2, 20.0)), ("y0", (0.2, 20.0)), ("y1", (0.2, 20.0)),
         ("i0", (0.2, 20.0)), ("i1", (0.2, 20.0)), ("erf", (-3.0, 3.0)), ("erfc", (-3.0, 3.0)),
         ("erfinv", (-0.95, 0.95)), ("erfcinv", (0.05, 1.95)), ("logit", (0.1, 0.9)),
         ("expit", (-4.05, 4.95))]


@pytest.mark.parametrize("name,lims", UNARY, ids=[n for n, _ in UNARY])
def test_unary_ufunc(name, lims):
    fn = getattr(sc, name)
    check(fn, fn, U(*lims, (2, 3)))


CASES = {   # name: (scipy function, arguments, the differentiated ones)
    "beta": (sc.beta, [R(4) ** 2 + 1.1, R(4) ** 2 + 1.1], [0, 1]),
    "betaln": (sc.betaln, [R(4) ** 2 + 1.1, R(4) ** 2 + 1.1], [0, 1]),
    "betainc": (sc.betainc, [R(4) ** 2 + 1.1, R(4) ** 2 + 1.1, U(0.0, 1.0, 4)], [2]),
    "gammainc": (sc.gammainc, [1.0, R(4) ** 2 + 1.3], [1]),
    "gammaincc": (sc.gammaincc, [1.0, R(4) ** 2 + 1.3], [1]),
    "jn": (sc.jn, [2, R(4) ** 2 + 1.3], [1]),
    "yn": (sc.yn, [2, R(4) ** 2 + 1.3], [1]),
    "iv": (sc.iv, [U(1.0, 50.0, 4), R(4) ** 2 + 1.3], [1]),      # an array of orders
    "ive": (sc.ive, [U(1.0, 50.0, 4), R(4) ** 2 + 1.3], [1]),
}


@pytest.mark.parametrize("name,k", [(n, k) for n, c in CASES.items() for k in c[2]])
def test_special_in_each_argument(name, k):
    fn, args, _ = CASES[name]
    check(_partial(fn, args, k), _partial(fn, args, k), np.asarray(args[k], np.float64))


def test_polygamma():
    check(lambda z: psp.polygamma(0, z), lambda z: sc.polygamma(0, z), R(4) ** 2 + 1.3)


@pytest.mark.parametrize("a,d", list(itertools.product([U(4.0, 5.0), U(4.0, 5.0, (2, 3))],
                                                       [1, 2, 3])))
def test_multigammaln(a, d):
    check(lambda z: psp.multigammaln(z, d), lambda z: sc.multigammaln(z, d), np.asarray(a))


LOGSUMEXP = (
    [(x, dict(axis=axis, keepdims=kd)) for x in (np.array([1.1]), R(4), R(3, 4))
     for axis in (None, 0) for kd in (True, False)]
    + [(x, dict(axis=axis, keepdims=kd)) for x in (R(3, 4), R(4, 5, 6), R(1, 5))
       for axis in (None, 0, 1) for kd in (True, False)]
    + [(x, dict(b=np.exp(R(*x.shape)), axis=axis, keepdims=kd))
       for x, axes in ((R(4), (None, 0)), (R(3, 4), (None, 0, 1)), (R(2, 3, 4), (None, 0, 1)))
       for axis in axes for kd in (True, False)])


@pytest.mark.parametrize("case", range(len(LOGSUMEXP)))
def test_logsumexp(case):
    x, kw = LOGSUMEXP[case]
    check(lambda z: psp.logsumexp(z, **kw), lambda z: sc.logsumexp(z, **kw), x,
          hessian=x.size <= 24)


def test_logsumexp_gradient_of_its_gradient():
    x = R(1, 5)
    grad = lambda z: pj.jacobian(lambda w: psp.logsumexp(w, axis=1, keepdims=True), z,  # noqa
                                 create_graph=True, vectorize=True)[0, 0]
    softmax = lambda z: np.exp(z - sc.logsumexp(z, axis=1, keepdims=True))[0]        # noqa
    _close(grad(pj.constant(x)), softmax(x), 1e-12)
    _close(pj.jacobian(grad, pj.constant(x), vectorize=True), _fd_jacobian(softmax, x), 1e-6)
