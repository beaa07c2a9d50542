"""Indexing (getitem, gather, scatter_add, setitem_zeros): numpy's semantics and bits, small
integer indices, out-of-range indices, eagerly and under pfor."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

from helpers import no_fallback, pfor_and_loop_jacobians


# -- indices -------------------------------------------------------------------------------
@no_fallback
def test_several_scalar_index_tensors_index_like_ints():
    """`x[i, j]` in a loop body."""
    x_np = np.arange(60.0).reshape(3, 4, 5)
    x = pj.constant(x_np)
    i, j = pj.constant(np.int32(2)), pj.constant(np.int32(1))
    for key, np_key in [((i, j), (2, 1)), ((i, slice(None), j), (2, slice(None), 1)),
                        ((None, i, Ellipsis, j), (None, 2, Ellipsis, 1))]:
        np.testing.assert_array_equal(x[key].numpy(), x_np[np_key])
    out = pj.pfor(lambda k: x[k, 3 - k], 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(out.numpy(), np.stack([x_np[k, 3 - k] for k in range(3)]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.sum(x[i, j] * 2.0)
    want = np.zeros_like(x_np)
    want[2, 1] = 2.0
    np.testing.assert_array_equal(g.gradient(y, x).numpy(), want)
    pair = x[pj.constant(np.array([0, 1])), pj.constant(np.array([0, 1]))]   # numpy's pairs
    np.testing.assert_array_equal(pair.numpy(), x_np[[0, 1], [0, 1]])


@no_fallback
def test_an_empty_list_is_an_empty_integer_index():
    """As numpy's x[[]]; it became a float32 tensor and numpy's casting error."""
    a = np.arange(6.0).reshape(2, 3)
    x = pj.constant(a)
    assert x[[]].shape == a[[]].shape == (0, 3)
    assert pj.gather(x, [], axis=1).shape == np.take(a, [], axis=1).shape == (2, 0)
    J_pfor, J_loop = pfor_and_loop_jacobians(lambda t: pj.gather(t, [], axis=1), a)
    assert J_pfor.shape == J_loop.shape == (2, 0, 2, 3)


@pytest.mark.parametrize("bad", [4, -5])
def test_an_out_of_range_index_raises_under_pfor_as_eagerly(bad):
    """Table and index both per iteration: pfor offsets the index into one flat table, where
    an index out of range read (or wrote) another iteration's block."""
    x = pj.constant(np.arange(12.0).reshape(3, 4))
    idx = pj.constant(np.array([[bad], [1], [2]], np.int32))
    ones = pj.constant(np.ones((3, 1)))
    with pytest.raises(IndexError):
        pj.gather(x[0], idx[0], axis=0)
    for body, args in ((lambda e: pj.gather(e[0], e[1], axis=0), (x, idx)),
                       (lambda e: pj.scatter_add(e[0], e[1], axis=0, size=4), (ones, idx))):
        for _ in range(3):                           # eager, then cached compiled code
            with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
                pj.vectorized_map(body, args)
    ok = pj.constant(np.array([[3], [-1], [-4]], np.int32))
    got = pj.vectorized_map(lambda e: pj.gather(e[0], e[1], axis=0), (x, ok))
    np.testing.assert_array_equal(got.numpy().ravel(), [3.0, 7.0, 8.0])


# -- gather under pfor ---------------------------------------------------------------------
@no_fallback
def test_gather_with_stacked_table_and_stacked_indices():
    # converters/indexing.py called ops.constant, which does not exist (AttributeError).
    table = pj.constant(np.arange(12.0).reshape(3, 4))
    idx = pj.constant(np.array([[3, -1], [0, 1], [2, 2]], np.int32))
    got = pj.pfor(lambda i: pj.gather(table[i], idx[i]), 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(got.numpy(), [[3, 3], [4, 5], [10, 10]])


@no_fallback
def test_gather_small_int_indices_do_not_overflow_offsets():
    # the offsets k * size into the flattened table overflow int8 indices unless widened.
    table = pj.constant(np.arange(600.0).reshape(3, 200))
    idx = pj.constant(np.array([[100], [5], [-1]], np.int8))
    got = pj.pfor(lambda i: pj.gather(table[i], idx[i]), 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(got.numpy(), [[100], [205], [599]])


@no_fallback
def test_vectorized_map_over_no_elements_with_small_int_indices():
    """int8 indices into a table longer than 127 were not widened with zero iterations, and
    wrapping negative ones overflowed."""
    empty = pj.vectorized_map(lambda a: pj.gather(a[0], a[1]),
                              (pj.constant(np.zeros((0, 200))), pj.constant(np.zeros((0, 3), np.int8))))
    assert empty.shape == (0, 3)
    table = np.arange(400.0).reshape(2, 200)
    idx = np.array([[-1, 5, 100], [0, -128, 127]], np.int8)
    got = pj.vectorized_map(lambda a: pj.gather(a[0], a[1]), (pj.constant(table), pj.constant(idx)))
    np.testing.assert_array_equal(got.numpy(), [np.take(t, i) for t, i in zip(table, idx)])


# -- scatter_add adds as np.add.at, into +0 ------------------------------------------------
def test_scatter_add_of_repeated_positions_equals_np_add_at_bit_for_bit():
    """Repeated positions are added in passes numpy vectorizes (np.add.at with a slice
    before the index looped element by element: the Jacobian of an embedding lookup, 7.4 ->
    1.6 ms); each position still adds its slices in their order, as np.add.at does."""
    from pforjac.ops.indexing import _scatter_add_impl
    rng = np.random.default_rng(7)
    for _ in range(400):
        idx_shape = tuple(rng.integers(0, 5, rng.integers(1, 3)))
        size, axis = int(rng.integers(1, 6)), int(rng.integers(0, 3))
        pre, suf = tuple(rng.integers(0, 4, axis)), tuple(rng.integers(0, 4, rng.integers(0, 3)))
        dtype = rng.choice([np.float32, np.float64, np.int32, np.complex64, np.float16])
        g = rng.normal(size=pre + idx_shape + suf).astype(dtype)
        if g.size and rng.random() < 0.3:
            g.flat[0] = -0.0 if dtype != np.int32 else 0
        if g.size and rng.random() < 0.2 and dtype in (np.float32, np.float64):
            g.flat[-1] = np.nan
        if g.ndim and g.shape[0] and rng.random() < 0.3:
            g = np.broadcast_to(g[:1], g.shape)            # as a Jacobian's broadcast cotangent
        idx = rng.integers(-size, size, idx_shape)
        want = np.zeros(pre + (size,) + suf, g.dtype)
        np.add.at(want, (slice(None),) * axis + (idx,), g)
        got = _scatter_add_impl(g, idx, axis, size, unique=False)
        assert got.shape == want.shape and np.ascontiguousarray(got).tobytes() == want.tobytes()
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        _scatter_add_impl(np.ones(3), np.array([0, 5, 0]), 0, 3, unique=False)
    hot = np.zeros(200, np.int64)                          # one position 200 times: np.add.at
    np.testing.assert_array_equal(_scatter_add_impl(np.ones(200), hot, 0, 2), [200.0, 0.0])


SPECIAL = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -0.0, 1.5, -2.5])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("indices", [[0, 1, 2, 3, 4, 5, 6, 7, 8], [8, 6, 4, 2, 0, 1, 3, 5, 7],
                                     [0, 0, 1, 2, 2, 3, 3, 9, 9]])  # (two NaNs' sum: either NaN)
def test_scatter_add_has_np_add_at_bits_at_signed_zeros_nan_and_inf(dtype, indices):
    g = SPECIAL.astype(dtype)
    if dtype == np.complex64:
        g.imag = np.roll(SPECIAL, 2)
    rows = np.stack([g, np.roll(g, 2)], axis=1)                 # (9, 2): axis 0 scattered
    for values, axis in ((g, 0), (rows, 0), (rows.T.copy(), 1)):
        want = np.zeros(values.shape[:axis] + (10,) + values.shape[axis + 1:], dtype)
        np.add.at(want, (slice(None),) * axis + (np.array(indices),), values)
        got = pj.scatter_add(pj.constant(values), np.array(indices), axis, 10).numpy()
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (axis, got, want)


def test_gradient_of_a_gather_of_negative_zeros_is_positive_zero_as_np_add_at():
    x = pj.constant(np.array([1.0, 2.0, 3.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.gather(x, [2, 0])
    g = tape.gradient(y, x, output_gradients=pj.constant(np.array([-0.0, -0.0])))
    assert not np.signbit(g.numpy()).any()


# -- setitem_zeros (getitem's gradient) ----------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128, np.bool_])
def test_setitem_zeros_moves_short_rows_as_items_with_the_same_bytes(dtype):
    """setitem_zeros (getitem's gradient) copies rows of 2-16 elements as one void item each
    where they are contiguous in `g` and in their place; every key below must give what
    `out[key] = g` gives, NaN, -0 and all."""
    from pforjac.ops.indexing import _setitem_zeros_impl
    rng = np.random.default_rng(4)
    block = (rng.standard_normal((10, 32, 60, 5, 4)) * 3).astype(dtype)
    if dtype in (np.float32, np.float64):
        block.flat[::13] = -0.0
        block.flat[::17] = np.nan
    cases = [(block[:, :, :, 2, :], (slice(None), slice(None), slice(3, 63), slice(None)), (10, 32, 64, 4)),
             (block[:, :, :, 1, :2], (slice(None), slice(None), slice(0, 60), slice(1, 3)), (10, 32, 60, 4)),
             (block[:, 0, :, :, :], (slice(None), 5, slice(None), slice(None), slice(None)), (10, 8, 60, 5, 4)),
             (block[:, :, ::2, 0, :], (slice(None), slice(None), slice(0, 120, 4), slice(None)), (10, 32, 120, 4)),
             (block[..., ::2], (Ellipsis, slice(None, None, 2)), (10, 32, 60, 5, 4)),
             (block[:2, :2, :2, 0, :], (slice(None), slice(None), slice(None), slice(None)), (2, 2, 2, 4))]
    for g, key, shape in cases:
        want = np.zeros(shape, dtype)
        want[key] = g
        got = _setitem_zeros_impl(g, key, shape)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


_MIXED = [(3, slice(2, None), [1, 3]), (0, None, [1, 2]), ([1, 3], slice(None), 0),
          ([[1, 3]], slice(None), 0), (slice(None), 0, None, [[1, 2, 3]]), (0, Ellipsis, [1, 2]),
          (Ellipsis, 0, [1, 2]), (slice(None), [1, 2], None, 0), (slice(None), 0, [3, 1])]


@no_fallback
@pytest.mark.parametrize("key", _MIXED)
def test_integers_and_an_index_tensor_place_its_axes_as_numpy(key):
    """Integers and an index tensor separated by a slice or None put the tensor's axes
    first (`x[3, 2:, [1, 3]]` is (2, 4)); adjacent ones keep them in place."""
    x_np = np.random.default_rng(3).uniform(-1, 1, (5, 6, 4))
    got = pj.constant(x_np)[key]
    assert got.shape == x_np[key].shape
    np.testing.assert_array_equal(got.numpy(), x_np[key])
    pj.testing.check_grads(lambda t: t[key], x_np)
    pfor, loop = pfor_and_loop_jacobians(lambda t: pj.sin(t)[key], x_np)
    np.testing.assert_array_equal(pfor, loop)
    xs = np.stack([x_np, -2 * x_np])             # a stacked x under the same key
    rows = pj.pfor(lambda i: pj.gather(pj.constant(xs), i)[key], 2, fallback_to_while_loop=False)
    np.testing.assert_array_equal(rows.numpy(), np.stack([x[key] for x in xs]))


@no_fallback
def test_a_stacked_index_tensor_separated_from_an_integer_by_a_slice():
    x_np = np.random.default_rng(4).uniform(-1, 1, (5, 6, 4))
    idx = np.array([[1, 3], [0, 2], [3, 3]])
    x = pj.constant(x_np)
    got = pj.pfor(lambda i: x[3, 2:, pj.gather(pj.constant(idx), i)], 3,
                  fallback_to_while_loop=False)
    np.testing.assert_array_equal(got.numpy(), np.stack([x_np[3, 2:, row] for row in idx]))
