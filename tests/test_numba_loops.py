"""The numba backend's loop nests (numba_loops.py, numba_context.py): elementwise work,
reductions, stores into parts of arrays, scatters and small contractions are loops that
read through views (transposes, broadcasts, slices, gathers, zeros around a region)
without making them, and compute what the numpy backend computes, to a few ulps."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled import numba_backend
from pforjac.compiled.numba_codegen import numba_source

pytest.importorskip("numba")


def _views_and_loops(x, y, idx):
    """Every kind of read the loops take: slices, a transpose, a broadcast row, a gather
    with a negative and a repeated index, a reduction over the first axis, a float max
    with a NaN, zeros around a region (the gradient of a slice), a scatter (the gradient
    of a gather), a concat of slices, a small einsum and an outer product."""
    def loss(x):
        shifted = pj.concat([x[:, 1:], x[:, :1]], 1)
        picked = pj.gather(x, idx, 1)                       # (4, 5): a gather along axis 1
        outer = pj.einsum("ij,ik->ijk", x[:, :2], picked)
        return pj.numpy.sum(pj.tanh(shifted * y) ** 2) + pj.numpy.sum(outer * outer) \
            + pj.numpy.sum(pj.einsum("ij,kj->ik", x, x))
    g = pj.grad(loss)(x)
    column_sums = pj.numpy.sum(pj.transpose(x) * y[:, None], 1)
    return g, column_sums, pj.max(x * y, 1), pj.max(pj.where(x > 0.5, x, np.nan), 0)


def test_loops_read_through_views_and_agree_with_numpy():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0, 1, (4, 6)), rng.uniform(-1, 1, 6)
    idx = np.array([0, -1, 2, 2, 5])
    numpy_f = pj.function(_views_and_loops, backend="numpy")
    numba_f = pj.function(_views_and_loops, backend="numba")
    for want, got in zip(numpy_f(x, y, idx), numba_f(x, y, idx)):
        np.testing.assert_allclose(got, want, rtol=16 * np.finfo(float).eps, atol=1e-15)
    source = numba_source(numba_f.program(x, y, idx))
    assert "for i_0 in range(" in source and "K.positions(" in source
    assert "else np.float64(0))" in source        # (a slice's gradient: zeros around it, read)
    for made in ("np.broadcast_to(", "as_strided(", "np.concatenate(", "np.sum(", "K.dot("):
        assert made not in source, made     # (read through by the loops, never made)


def _two_readers(a, b):
    e = pj.exp(pj.broadcast_to(a, (5, 3)) * 2.0)        # (5, 3), its 5 rows all the same
    return e * b, e + b


def test_a_value_constant_along_an_axis_is_computed_once_not_per_row():
    f = pj.function(_two_readers, backend="numba")
    a, b = np.linspace(0.0, 1.0, 3), np.arange(15.0).reshape(5, 3)
    for got, want in zip(f(a, b), (np.exp(a * 2.0) * b, np.exp(a * 2.0) + b)):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    source = numba_source(f.program(a, b))
    exp = [k for k, line in enumerate(source.splitlines()) if "np.exp" in line]
    assert len(exp) == 1 and "K.empty((1, 3)" in source


@pytest.mark.parametrize("shape, new", [((10, 64, 32, 4), (10, 64, 128)), ((640, 128), (64, 10, 128)),
                                        ((2, 3, 4), (4, 6)), ((1, 512, 1), (32, 16)),
                                        ((3, 1, 4), (12,)), ((4, 6), (2, 12)), ((5, 1), (1, 5))])
def test_a_reshape_read_through_finds_every_element(shape, new):
    from pforjac.compiled.numba_loops import _reshape
    index_map = _reshape(shape, new)
    a = np.arange(int(np.prod(shape))).reshape(shape)
    b = a.reshape(new)
    names = [f"i{k}" for k in range(len(new))]
    # the index texts (integer arithmetic on the loop indices) evaluated once, on every
    # index of the new shape at once (a constant text becomes a broadcast 0-d index)
    at = eval(f"lambda {', '.join(names)}: ({', '.join(index_map(names))},)")(*np.indices(new))  # noqa: S307
    np.testing.assert_array_equal(a[tuple(np.broadcast_arrays(*at, np.empty(new)))[:-1]], b)


def _repeated_rows(x, w):
    seed = np.ones((2, 4, 1))                       # the same for each of 4 rows: a broadcast
    rows = seed * pj.reshape(x[:2], (2, 1, 3))      # (2, 4, 3), each row 4 times
    return pj.tanh(pj.reshape(rows, (8, 3)) @ w), rows + 1.0


def test_a_product_of_repeated_rows_multiplies_each_row_once():
    f = pj.function(_repeated_rows, backend="numba")
    x, w = np.linspace(-1.0, 1.0, 12).reshape(4, 3), np.linspace(0.0, 2.0, 15).reshape(3, 5)
    rows = np.repeat(x[:2], 4, axis=0)
    for got, want in zip(f(x, w), (np.tanh(rows @ w), rows.reshape(2, 4, 3) + 1.0)):
        np.testing.assert_allclose(got, want, rtol=1e-14)
    program = f.program(x, w)
    source = numba_source(program, "p", numba_backend._baked_consts(program))
    assert ", (2, 3)), " in source and "K.dot(" in source      # (2 rows, not 8)
