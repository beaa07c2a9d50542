"""The numba backend's float sums over trailing axes run in numpy's pairwise order
(numba_sums.py), so they are numpy's sums to the bit, where a sum in order drifts by about
n ulps; a sum under 8 values, or over leading axes, stays a loop in order, as numpy's."""
import warnings

import numpy as np
import pytest

import pforjac as pj
import pforjac.numpy as pnp
from pforjac.compiled.numba_codegen import numba_source

pytest.importorskip("numba")
from pforjac.compiled.numba_sums import pairwise_sum  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_kernel_is_numpys_sum_of_a_contiguous_run(dtype):
    rng = np.random.default_rng(11)
    for n in [*range(0, 300), 1000, 4097, 65537, 1 << 20]:
        a = (rng.standard_normal(n + 3) * 10.0 ** rng.integers(-3, 4, n + 3)).astype(dtype)
        got = dtype(0) + pairwise_sum(a, 3, n, dtype(0))
        want = np.add.reduce(a[3:])
        assert type(got) is dtype and got.tobytes() == want.tobytes(), n


SUMS = [(lambda a: pnp.sum(a), (1 << 17,)),
        (lambda a: pnp.sum(a * a - 1.0, axis=-1), (7, 1000)),
        (lambda a: pnp.sum(a, axis=(1, 2)), (5, 30, 41)),
        (lambda a: pnp.mean(a, axis=-1, keepdims=True), (6, 129)),
        (lambda a: pnp.var(a), (40000,))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", range(len(SUMS)))
def test_sums_over_trailing_axes_are_the_numpy_backends_to_the_bit(k, dtype):
    f, shape = SUMS[k]
    x = (np.random.default_rng(k).standard_normal(shape) * 1e3).astype(dtype)
    want = np.asarray(pj.function(f, backend="numpy")(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (it runs on numba)
        got = np.asarray(pj.function(f, backend="numba")(x))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def _source(f, x):
    fn = pj.function(f, backend="numba")
    return numba_source(fn.program(x), "f")


def test_short_and_leading_sums_stay_loops_in_order():
    x = np.ones((300, 7))
    assert "pairwise_sum" not in _source(lambda a: pnp.sum(a * 2.0, axis=-1), x)   # 7 values
    assert "pairwise_sum" not in _source(lambda a: pnp.sum(a * 2.0, axis=0), x)    # leading
    assert "pairwise_sum" in _source(lambda a: pnp.sum(a * 2.0, axis=-1), np.ones((7, 300)))
    y = np.random.default_rng(2).standard_normal((300, 7))
    for f in (lambda a: pnp.sum(a * 2.0, axis=-1), lambda a: pnp.sum(a * 2.0, axis=0)):
        got, want = (np.asarray(pj.function(f, backend=b)(y)) for b in ("numba", "numpy"))
        assert got.tobytes() == want.tobytes()
