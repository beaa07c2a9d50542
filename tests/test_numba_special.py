"""The numba backend's scalar kernels (pforjac/compiled/numba_special.py) against scipy.special
and numpy, on grids that include their poles, signed zeros, infinities, NaN and both tails:
float64 to a few ulps, except in the tails of the normal cdf, whose argument x / sqrt(2) is
rounded before the C library's erfc sees it (an error of about x^2 ulps in the result, which
scipy's own evaluation avoids: ndtr and log_ndtr get 8 + x^2 ulps) and the far tail of erfc
itself, where scipy's is off by up to 40 ulps and the C library's, which the kernel calls,
is within an ulp of a 60-digit evaluation (checked below); and gammaln near its zeros at 1
and 2, where scipy's is off by up to 21 ulps and the kernel's within an ulp of 50 digits
(checked below); and digamma at negative arguments, where the reflection formula cancels
(both scipy's and the kernel's), 32 ulps; float32 results rounded from
float64 (as scipy's float32 loops compute) to an ulp. All kernels run in two numba functions
(one unary, one binary), each compiled for float64 and float32."""
import numpy as np
import pytest

numba = pytest.importorskip("numba")
special = pytest.importorskip("scipy.special")

from pforjac.compiled import numba_kernels as K  # noqa: E402
from pforjac.ops.elementwise import _sigmoid_impl, _softplus_impl  # noqa: E402

# name: (reference, float64 ulps); ulps are of the larger of |value| and the tiny
UNARY = {"sigmoid": (_sigmoid_impl, 4), "softplus": (_softplus_impl, 4), "sinc": (np.sinc, 4),
         "erf": (special.erf, 4), "erfc": (special.erfc, 64), "ndtr": (special.ndtr, "x^2"),
         "log_ndtr": (special.log_ndtr, "x^2"), "logit": (special.logit, 4),
         "gamma": (special.gamma, 16), "gammaln": (special.gammaln, 32),
         "gammasgn": (special.gammasgn, 0), "rgamma": (special.rgamma, 16),
         "digamma": (special.digamma, 32), "entr": (special.entr, 4),
         "ndtri": (special.ndtri, 4), "erfinv": (special.erfinv, 4), "erfcinv": (special.erfcinv, 4)}
BINARY = {"xlogy": (special.xlogy, 4), "xlog1py": (special.xlog1py, 4),
          "rel_entr": (special.rel_entr, 4), "kl_div": (special.kl_div, 4),
          "heaviside": (np.heaviside, 0)}


def _apply(names, arity):
    """One numba function returning every kernel of `names` applied to its argument(s)."""
    params = ", ".join("xy"[:arity])
    calls = ", ".join(f"K.{n}({params})" for n in names)
    namespace = {"K": K}
    exec(f"def apply({params}):\n    return ({calls},)\n", namespace)
    return numba.njit(namespace["apply"])


APPLY_UNARY, APPLY_BINARY = _apply(UNARY, 1), _apply(BINARY, 2)
_POINTS = [-np.inf, -1e300, -250.5, -180.5, -170.2, -40.0, -20.5, -10.0, -2.0, -1.5, -1.0, -0.7,
           -0.5, -1e-300, -0.0, 0.0, 1e-300, 1e-8, 0.1, 0.3, 0.5, 0.55, 0.65, 0.9, 1.0,
           1.2, 1.4616321449683623, 1.5, 2.0, 2.5, 5.5, 9.99, 10.0, 12.0, 30.0, 37.0, 100.0,
           171.5, 172.0, 1e10, 1e300, np.inf, np.nan]
GRID = np.concatenate([_POINTS, np.linspace(-8, 8, 161), np.geomspace(1e-6, 1e3, 60),
                       np.linspace(0, 2, 81), [1 - 1e-15, 1 + 1e-15, 2 - 1e-15, 0.4999, 0.5001]])


def _close(got, want, ulps, dtype, what):
    assert got.dtype == dtype, what
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    finite = np.isfinite(want) & np.isfinite(got)
    tiny = np.finfo(dtype).tiny
    err = np.abs(got - want) / (np.finfo(dtype).eps * np.maximum(np.abs(want), tiny))
    bad = ~same & ~(finite & (err <= ulps))
    assert not bad.any(), f"{what}: at {GRID[bad.ravel()][:5] if got.ndim == 1 else 'grid'}: " \
                          f"got {got[bad][:5]}, want {want[bad][:5]}"
    zeros = same & (want == 0)
    assert (np.signbit(got[zeros]) == np.signbit(want[zeros])).all(), f"{what}: signs of zeros"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary_kernels_agree_with_scipy(dtype):
    with np.errstate(over="ignore"):           # (1e300 -> inf in float32)
        x = GRID.astype(dtype)
    with np.errstate(all="ignore"):
        for (name, (reference, ulps)), got in zip(UNARY.items(), APPLY_UNARY(x)):
            want = np.asarray(reference(x))
            if dtype == np.float32 and name != "sinc":   # scipy's float32 loops round the
                want = np.asarray(reference(x.astype(np.float64))).astype(np.float32)   # double result
                ulps = 1             # (numpy's sinc computes in float32: sinc(1) is -2.78e-8)
            elif ulps == "x^2":
                ulps = 8 + np.where(np.isfinite(x), x * x, 0)
            if name == "gammaln":        # (within 1e-8 of its zeros scipy's has no digits)
                near = (np.abs(x - 1) < 1e-8) | (np.abs(x - 2) < 1e-8)
                got, want = np.where(near, 0, got), np.where(near, 0, want)
            _close(got, want, ulps, dtype, name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_binary_kernels_agree_with_scipy(dtype):
    points = np.array([-np.inf, -2.0, -1.0, -0.5, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.0, 7.5, np.inf,
                       np.nan])
    x, y = (v.astype(dtype).ravel() for v in np.meshgrid(points, points))
    with np.errstate(all="ignore"):
        for (name, (reference, ulps)), got in zip(BINARY.items(), APPLY_BINARY(x, y)):
            want = np.asarray(reference(x.astype(np.float64), y.astype(np.float64))).astype(dtype)
            _close(got, want, max(ulps, 1), dtype, name)


def _erfc_60_digits(x: float):
    """erfc(x) for x >= 5 by Laplace's continued fraction in 60-digit decimal arithmetic."""
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 60
        x, fraction = Decimal(x), Decimal(x)
        for k in range(400, 0, -1):
            fraction = x + (Decimal(k) / 2) / fraction
        pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494")
        return (-(x * x)).exp() / pi.sqrt() / fraction


def test_erfc_tail_is_within_an_ulp_of_60_digits():
    x = np.array([5.0, 5.7, 9.99, 10.397984184, 20.9910372, 26.0])
    got = APPLY_UNARY(x)[list(UNARY).index("erfc")]
    want = [_erfc_60_digits(float(v)) for v in x]
    errors = [abs((float(g) - float(w)) / float(w)) for g, w in zip(got, want)]
    assert max(errors) <= 2 * np.finfo(np.float64).eps, errors


def _lgamma_50_digits(x: float):
    """lgamma(x) by Stirling's series at x + n >= 30 (19 Bernoulli terms) in 50 digits."""
    from decimal import Decimal, localcontext
    from fractions import Fraction
    a = [Fraction(0)] * 41
    bernoulli = []
    for m in range(41):                   # the Akiyama-Tanigawa algorithm
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        bernoulli.append(a[0])
    with localcontext() as ctx:
        ctx.prec = 50
        x, shift = Decimal(x), Decimal(0)
        while x < 30:
            shift, x = shift + x.ln(), x + 1
        two_pi = 2 * Decimal("3.14159265358979323846264338327950288419716939937510582097494")
        total = (x - Decimal("0.5")) * x.ln() - x + two_pi.ln() / 2
        for k in range(1, 20):
            b = bernoulli[2 * k]
            total += Decimal(b.numerator) / Decimal(b.denominator) / (2 * k * (2 * k - 1) * x ** (2 * k - 1))
        return total - shift


def test_gammaln_near_its_zeros_is_within_an_ulp_of_50_digits():
    x = np.array([0.3, 0.9, 0.99, 1 - 1e-15, 1.1, 1.5, 1.79571449, 1.9, 2 - 1e-15, 2.1, 2.5,
                  5.5, 12.9])
    got = APPLY_UNARY(x)[list(UNARY).index("gammaln")]
    errors = [abs((float(g) - float(w)) / float(w)) for g, w in zip(got, map(_lgamma_50_digits, x))]
    assert max(errors) <= 1.5 * np.finfo(np.float64).eps, errors


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_polygamma_agrees_with_scipy(dtype):
    x = np.array([-np.inf, -2.0, -1.5, -0.5, -0.3, -0.0, 0.0, 1e-300, 1e-8, 0.5, 1.0, 1.46, 2.5,
                  9.0, 10.0, 33.3, 1e10, np.inf, np.nan]).astype(dtype)
    apply = numba.njit(lambda x, n: K.polygamma(x, n))
    for n in (0, 1, 2, 3, 7, 15):
        with np.errstate(all="ignore"):             # (float32 overflows to inf)
            want = np.asarray(special.polygamma(n, x.astype(np.float64))).astype(dtype)
            _close(apply(x, np.float64(n)), want, 4 if dtype == np.float64 else 1, dtype, f"polygamma {n}")


def test_ndtri_and_erfcinv_of_subnormal_probabilities_agree_with_scipy():
    """ndtr's values at those quantiles are subnormal too, with a few bits: the quantile is
    found from log_ndtr there (ndtri), or taken from ndtri unrefined (erfcinv, as scipy)."""
    p = np.array([5e-324, 1.5e-323, 1.7243e-320, 2.57383e-319, 1e-310, 2.2e-308, 1e-300])
    for name in ("ndtri", "erfcinv"):
        got, want = getattr(K, name)(p), getattr(special, name)(p)
        assert ((got == want) | (np.abs(got - want) <= 4 * np.spacing(np.abs(want)))).all(), \
            f"{name}: got {got}, want {want}"
