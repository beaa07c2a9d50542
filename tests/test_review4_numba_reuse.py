"""The numba backend overwrites a product in place only where nothing else reads it: a
reshape of a product is not a fresh array of its own when the product has other readers
(another equation, or the program's results), so the loop reading the reshape must not
write into it."""
import numpy as np
import pytest

import pforjac as pj

pytest.importorskip("numba")


def _reshaped_and_read_again(x, w):
    p = pj.matmul(x, w)
    return pj.tanh(pj.reshape(p, (16,))), p * 3.0


def _reshaped_and_returned(x, w):
    p = pj.matmul(x, w)
    return pj.tanh(pj.reshape(p, (16,))), p


@pytest.mark.parametrize("f", [_reshaped_and_read_again, _reshaped_and_returned])
def test_a_reshaped_product_with_other_readers_is_not_overwritten(f):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    want = f(x, w)
    got = pj.function(f, backend="numba")(x, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-12, atol=1e-12)
