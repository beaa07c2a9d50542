"""Products by constant numbers folded into one (`fold_scalings`) keep every bit, at the
extremes too: zeros of both signs, subnormals, values whose doubling overflows, inf, NaN."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.loopcache import caching, same_bits

EXTREMES = np.array([0.0, -0.0, 5e-324, -3e-320, 1e-308, 1.5, -2.75, 1e300, 8.9e307,
                     -1.7976931348623157e308, np.inf, -np.inf, np.nan, 123.456, -1e-5])


def _products(f, x):
    program = pj.function(f).program(x)
    return [e for e in program.equations if e.prim.name in ("multiply", "neg")]


def _same_as_eager(f, x):
    with np.errstate(all="ignore"):
        got = pj.function(f)(x)
        with caching(False):
            want = f(pj.constant(x)).numpy()
    assert same_bits(got, want), (x, got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case, folded", [
    (lambda x: -(x * 100.0), 1),                 # -(x * c): x * (-c)
    (lambda x: (x * 2.0) * 100.0, 1),            # a power of two first, then |c| >= 1
    (lambda x: -((x * 4.0) * -3.5), 1),          # both, in a chain
    (lambda x: (x * 2.0) * 0.3, 2),              # |c| < 1: x * 2 may overflow where x * 0.6 not
    (lambda x: (x * 3.0) * 100.0, 2),            # 3 is not a power of two: x * 3 rounds
    (lambda x: (x * 0.5) * 100.0, 2),            # 0.5 halves subnormals inexactly
])
def test_folded_products_keep_every_bit(case, folded, dtype):
    with np.errstate(over="ignore"):
        x = EXTREMES.astype(dtype)
    _same_as_eager(case, x)
    assert len(_products(case, x)) == folded


def test_a_product_read_twice_is_kept():
    def f(x):
        p = x * 2.0
        return -p, p * 100.0
    x = EXTREMES
    with np.errstate(all="ignore"):
        got = pj.function(f)(x)
        with caching(False):
            want = [t.numpy() for t in f(pj.constant(x))]
    assert all(same_bits(g, w) for g, w in zip(got, want))
    assert len(_products(f, x)) == 3


def test_the_chained_rosenbrock_gradient_scales_once():
    def f(x):
        return pj.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    program = pj.function(pj.grad(f)).program(np.zeros(8))
    names = [e.prim.name for e in program.equations]
    assert names.count("multiply") == 3 and names.count("neg") == 1
