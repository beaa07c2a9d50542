"""Shape ops (concat, split, ...): numpy's results, bytes and layouts, on every path. Their
arguments' checks are in test_arguments.py."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj


def test_split_at_negative_and_large_indices_as_numpy_on_every_path():
    x = np.arange(6.0)
    for indices in ([-2], [1, -1], [10], [-10, 3]):
        want = np.split(x, indices)
        f = lambda t, indices=indices: pj.split(t, indices)   # noqa: E731
        for got in (f(pj.constant(x)), pj.function(f)(x)):
            assert [p.shape for p in got] == [p.shape for p in want]
            for a, b in zip(got, want):
                np.testing.assert_array_equal(np.asarray(a), b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128, np.bool_])
def test_concat_moves_short_rows_as_items_with_numpys_bytes_and_layout(dtype):
    """concat along an axis before the last moves rows of 2-16 elements as one void item each
    where every operand's rows are contiguous and its strides C-like; the result must be
    np.concatenate's, bytes and C/F layout alike, for slices, mixed dtypes and F-ordered
    operands (those two take numpy's own path)."""
    from pforjac.ops.shape import _concat_impl
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((32, 64, 4)) * 3).astype(dtype)
    if dtype in (np.float32, np.float64):
        x.flat[::13] = -0.0
        x.flat[::17] = np.nan
    y = (rng.standard_normal((32, 64, 4)) * 3).astype(dtype)
    cases = [([x[:, k:k + 60, None, :] for k in range(5)], 2), ([x, y, x[:, :10]], 1), ([x, y], 0),
             ([x, y], -2), ([x, x.astype({np.float64: np.float32, np.complex128: np.complex64}.get(dtype, np.float64))], 1), ([np.asfortranarray(x), y], 1),
             ([x[:, :, :3], y[:, :, 1:]], 0), ([x[:2, :2], y[:2, :2]], 1)]
    for parts, axis in cases:
        want = np.concatenate(parts, axis=axis)
        got = _concat_impl(*parts, axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
        assert got.flags.c_contiguous == want.flags.c_contiguous and got.strides == want.strides
