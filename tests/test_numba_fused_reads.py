"""The numba backend's loop nests: an elementwise result every reader of which ends in one
nest is computed there, once per element (a sigmoid's `s * (1 - s)`, `e * e`); a nest
overwriting a product in place stores each element as it reads it (through the same
array, not a reshape of it); a value a nest reads the same at every step of its outer
loops, across the array's rows in its inner loop (a column of weights), is read from a
small C-ordered table filled before the nest. Every result agrees with the numpy backend
to a few ulps in float64 and float32, NaN and infinities included (no timing: what the
source holds, and the values)."""
import re

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_codegen import numba_source

pytest.importorskip("numba")


def _agree(f, args, dtype):
    want = pj.function(f, backend="numpy")(*args)
    got = pj.function(f, backend="numba")(*args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        finite = np.isfinite(w)
        np.testing.assert_array_equal(g[~finite], w[~finite])
        scale = np.abs(w[finite]).max(initial=1.0)
        np.testing.assert_allclose(g[finite], w[finite], rtol=0, atol=16 * np.finfo(dtype).eps * scale)


def _source(f, args):
    return numba_source(pj.function(f, backend="numba").program(*args))


def _sigmoid_slope(x, b):
    s = pj.sigmoid(x + b)
    return s * (1.0 - s)


def _square_of_exp(x):
    e = pj.exp(x)
    return e * e


def _two_nests(x):
    s = pj.sigmoid(x)
    return s * 2.0, pj.sum(s, axis=1)


def _special(dtype):
    x = np.linspace(-30, 30, 7 * 5).reshape(7, 5).astype(dtype)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    return x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_result_read_twice_by_one_nest_is_computed_there_once(dtype):
    x, b = _special(dtype), np.linspace(-1, 1, 5).astype(dtype)
    _agree(_sigmoid_slope, (x, b), dtype)
    _agree(_square_of_exp, (x,), dtype)
    for f, args, call in ((_sigmoid_slope, (x, b), r"K\.sigmoid"), (_square_of_exp, (x,), r"np\.exp\(|K\.exp_f32")):
        source = _source(f, args)
        assert len(re.findall(call, source)) == 1 and source.count("for i_0 in") == 1


def test_a_result_two_nests_read_keeps_its_array():
    x = _special(np.float64)
    _agree(_two_nests, (x,), np.float64)
    source = _source(_two_nests, (x,))
    assert source.count("K.sigmoid") == 1 and source.count("for i_0 in") == 3


def _broadcast_twice(a, f, u, v):
    q = pj.broadcast_to(pj.reshape(a / f, (6, 1, 5)), (6, 40, 5)) * 1.5      # (constant along axis 1)
    return q * u + q * v


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_a_result_constant_along_an_axis_keeps_its_array_and_an_outer_product_is_inlined():
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(s) for s in ((6, 5), (5,), (40, 5), (6, 40, 5))]
    args[1][2] = 0.0                                    # (a division by zero: inf and NaN)
    _agree(_broadcast_twice, args, np.float64)
    source = _source(_broadcast_twice, args)
    assert "K.empty((6, 1, 5)" in source and len(re.findall(r" / ", source)) == 1     # (one division)
    outer = lambda a, u, w: (a[:, None, :] * u) * (a[:, None, :] * u) + w     # noqa: E731
    args = [rng.standard_normal(s) for s in ((6, 5), (40, 5), (6, 40, 5))]
    _agree(outer, args, np.float64)
    assert _source(outer, args).count("for i_0 in") == 1


def _per_example(x, w1, w2, w3):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.matmul(pj.sigmoid(pj.matmul(pj.sigmoid(pj.matmul(x, w1)), w2)), w3)
    return tape.batch_jacobian(y, x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_per_example_jacobian_stores_in_place_as_it_reads_and_tables_weight_columns(dtype):
    rng = np.random.default_rng(5)
    args = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(dtype)
            for s in ((80, 13), (13, 11), (11, 9), (9, 7))]
    args[3][2, 1] = np.nan                              # (one weight: NaN along its rows)
    _agree(_per_example, args, dtype)
    source = _source(_per_example, args)
    made = set(re.findall(r"(\w+) = K\.(?:empty|large)", source))
    made |= {view for view, array in re.findall(r"(t_\d+) = K\.merged_axes\((\w+),", source)
             if array in made}                          # (a new array's merged view: new too)
    in_place = [(a, i) for a, i in re.findall(r"(\w+)\[([^\]]*)\] = s_", source) if a not in made]
    assert len(in_place) >= 2                           # (the activations', the products')
    for array, index in in_place:                       # (each element stored as it was read)
        assert f"= {array}[{index}]" in source
    table = re.search(r"(t_\d+) = K\.empty\(\(1, 7, 9\)", source)      # (w3's columns, per output)
    assert table and re.search(rf"= {table.group(1)}\[0, i_1, i_2\]", source)


def _columns(x, w):
    return x[:, None, :] * pj.transpose(w)[None]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_transposed_matrix_every_row_reads_is_tabled_once(dtype):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((64, 41)).astype(dtype)[:, ::-1]     # (not C-contiguous)
    w = rng.standard_normal((41, 9)).astype(dtype)
    w[3, 4], w[5, 0] = np.inf, np.nan
    _agree(_columns, (x, w), dtype)
    source = _source(_columns, (x, w))
    assert "K.empty((1, 9, 41)" in source
    small = (x[:3, :5].copy(), w[:5, :2].copy())                  # (too small for a table to pay)
    _agree(_columns, small, dtype)
    assert "K.empty((1," not in _source(_columns, small)


def _shifted_exp(z):
    shift = pj.stop_gradient(pj.max(z, axis=-1, keepdims=True))     # read broadcast: not inlined
    return pj.exp(z - shift)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_stop_gradient_read_broadcast_names_its_operand_not_a_copy(dtype):
    z = np.random.default_rng(3).normal(size=(6, 5)).astype(dtype)
    z[1, 2], z[2] = np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        _agree(_shifted_exp, (z,), dtype)
    assert [e.prim.name for e in pj.function(_shifted_exp).program(z).equations].count("stop_gradient") == 1
    source = _source(_shifted_exp, (z,))
    assert len(re.findall(r"= K\.empty\(", source)) == 2        # (the max, then the exp: no copy)
    assert re.search(r"^\s*v_\w+ = v_\w+$", source, re.M)


def test_a_stop_gradient_the_program_returns_is_a_new_array():
    x = np.random.default_rng(4).normal(size=(4, 3))
    f = pj.function(lambda x: (pj.stop_gradient(x), pj.stop_gradient(x * 2.0) + 0.0), backend="numba")
    out, _ = f(x)
    np.testing.assert_array_equal(out, x)
    assert not np.shares_memory(out, x)
