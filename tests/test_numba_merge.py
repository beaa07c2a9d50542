"""Adjacent loops of a generated loop nest merged into one over views with those axes
merged (numba_merge.py, numba_views.py), and scalar float arithmetic written as
operators: the values stay the numpy backend's, bit for bit in elementwise work."""
import re

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_codegen import numba_source
from pforjac.compiled.numba_loops import LoopNest
from pforjac.compiled.numba_merge import merged_loops

pytest.importorskip("numba")


def _loops(source: str) -> list[str]:
    return re.findall(r"for i_\d+ in range\((\d+)\)", source)


def _chain(x, y, row):
    """Elementwise work over (4, 5, 6): same-shape operands (one loop of 120), a broadcast
    of the last two axes (loops of 4 and 30), a division by zero, a transposed read (its
    loops kept apart) and a sum over the last two axes (a loop of 30 inside one of 4)."""
    same = pj.tanh(x * y + x) / (y - y[0:1])
    wide = x * row + same
    return x * y, wide, pj.transpose(x, (0, 2, 1)) * 2.0, pj.numpy.sum(wide * wide, (1, 2))


def test_merged_loops_agree_with_numpy_and_run_flat():
    rng = np.random.default_rng(5)
    x, y, row = rng.normal(size=(4, 5, 6)), rng.normal(size=(4, 5, 6)), rng.normal(size=(5, 6))
    numba_f, numpy_f = pj.function(_chain, backend="numba"), pj.function(_chain, backend="numpy")
    with np.errstate(divide="ignore", invalid="ignore"):
        want = numpy_f(x, y, row)
    got = numba_f(x, y, row)
    assert numba_f._cache and all(c.backend == "numba" for c in numba_f._cache.values())
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))       # (x / 0: inf, as numpy)
        np.testing.assert_allclose(a, b, rtol=8 * np.finfo(float).eps, atol=0)
    source = numba_source(numba_f.program(x, y, row))
    loops = _loops(source)
    assert loops.count("120") == 1 and loops.count("30") == 2 and loops.count("5") == 1
    assert re.search(r"\(s_\w+ \* s_\w+\)", source)                   # (an operator, not np.multiply)


def _nest(shape, loads, extents=None):
    """A nest of `shape` storing the sum of `loads` into `v_out`, and its merge (arrays:
    `v_out` and the loads' arrays, with the shapes `extents` gives, else None: strided)."""
    names = iter(f"t_{k}" for k in range(100, 200))
    nest = LoopNest(shape, lambda: next(names))
    values = [nest.load(text)[0] for text in loads]
    target = f"v_out[{', '.join(nest.index)}]"
    texts = [*nest.levels_text(), f"{target} = {' + '.join(values)}"]
    return merged_loops(nest, texts, lambda name: (extents or {}).get(name))


def test_only_loops_every_array_indexes_alike_merge():
    shapes = {"v_out": (4, 5, 6), "v_a": (4, 5, 6), "v_b": (5, 6), "v_c": (6, 5), "v_w": (4, 5, 7)}
    extents, texts, views = _nest((4, 5, 6), ["v_a[i_0, i_1, i_2]"], shapes)
    assert extents == {0: 120} and texts[-1] == "t_104[i_0] = s_t_100"
    assert views == ["t_103 = K.merged_axes(v_a, 0, 3)", "t_104 = K.merged_axes(v_out, 0, 3)"]
    extents, _, _ = _nest((4, 5, 6), ["v_a[i_0, i_1, i_2]", "v_b[i_1, i_2]"], shapes)
    assert extents == {0: 4, 1: 30}
    assert _nest((4, 5, 6), ["v_c[i_2, i_1]"], shapes) is None                # (transposed)
    assert _nest((4, 5, 6), ["v_w[i_0, i_1, i_2]"], shapes)[0] == {0: 20, 2: 6}   # (axis 2: 7 != 6)
    assert _nest((4, 5, 6), ["v_a[i_0, (1 + i_1), i_2]"], shapes) is None     # (an offset)
    assert _nest((4, 5, 6), ["v_a[i_0, i_1, i_2]"], {"v_a": (4, 5, 6)}) is None  # (out strided)


def test_outer_loops_merge_only_where_few_arrays_need_a_view():
    """A view costs a statement's compile: the outer loops of a sum of many arrays stay
    apart; the innermost pair merges whatever the count (its loop vectorizes longer)."""
    from pforjac.compiled.numba_merge import MAX_OUTER_VIEWS
    many = [f"v_a{k}" for k in range(MAX_OUTER_VIEWS)]          # (and v_out: one more)
    shapes = {name: (4, 5, 6, 3) for name in many + ["v_out"]}
    loads = [f"{name}[i_0, i_1, i_2, i_3]" for name in many]
    assert _nest((4, 5, 6, 3), loads, shapes)[0] == {0: 4, 1: 5, 2: 18}     # (the innermost)
    few = _nest((4, 5, 6, 3), [f"{n}[i_0, i_1, i_2, 0]" for n in many[:MAX_OUTER_VIEWS - 1]] +
                ["v_b[i_3]"], {**shapes, "v_b": (3,)})
    assert few[0] == {0: 120, 3: 3}
    crowded = _nest((4, 5, 6, 3), [f"{n}[i_0, i_1, i_2, 0]" for n in many] + ["v_b[i_3]"],
                    {**shapes, "v_b": (3,)})
    assert crowded is None


def test_merged_axes_is_a_view_of_the_same_elements():
    import numba
    from pforjac.compiled.numba_backend import kernels
    merged_axes = kernels().merged_axes

    @numba.njit
    def flat_then_middle(a):
        flat, middle = merged_axes(a, 0, 3), merged_axes(a, 1, 3)
        flat[7] = -1.0                                   # (a view: writes reach `a`)
        return flat.copy(), middle.copy()
    a = np.arange(24.0).reshape(2, 3, 4)
    flat, middle = flat_then_middle(a)
    np.testing.assert_array_equal(flat, a.reshape(-1))
    np.testing.assert_array_equal(middle, a.reshape(2, 12))
    assert a[0, 1, 3] == -1.0
    with pytest.raises(numba.TypingError):               # (a strided array: no such view)
        flat_then_middle(a[:, :, ::2])


def test_reshaped_is_a_c_order_view_and_refuses_what_does_not_fit():
    """`K.reshaped`, the generated code's reshape: a view of the same elements in C order
    (writes reach the array); a wrong size raises; other layouts behave as numba's own
    reshape does (a Fortran-ordered array: a view where none is copied; a strided one is
    not typed)."""
    import numba
    from pforjac.compiled.numba_backend import kernels
    reshaped = kernels().reshaped

    @numba.njit
    def two_ways(a):
        rows, flat = reshaped(a, (6, 4)), reshaped(a, (24,))
        flat[5] = -1.0
        return rows.copy(), reshaped(rows, (2, 2, 6)).copy()

    @numba.njit
    def wrong_size(a):
        return reshaped(a, (5, 4)).copy()

    @numba.njit
    def transposed(a, shape):
        return reshaped(a.T, shape).copy()

    @numba.njit
    def strided(a):
        return reshaped(a[:, ::2], (a.size // 2,)).copy()
    a = np.arange(24.0).reshape(2, 3, 4)
    rows, back = two_ways(a)
    assert a[0, 1, 1] == -1.0
    np.testing.assert_array_equal(rows, a.reshape(6, 4))
    np.testing.assert_array_equal(back, a.reshape(2, 2, 6))
    with pytest.raises(ValueError, match="size"):
        wrong_size(a)
    b = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(transposed(b[:1], (4, 1)), b[:1].T)   # (F-ordered: a view)
    with pytest.raises(NotImplementedError):                  # (one that needs a copy)
        transposed(b, (12, 1))
    with pytest.raises(numba.TypingError):
        strided(b)


def test_stores_through_reshaped_in_a_prange_loop_are_kept():
    """As for merged_axes (below): numba is told that `K.reshaped(a, ...)` aliases `a`."""
    import numba
    from pforjac.compiled.numba_backend import kernels
    global K
    K = kernels()

    @numba.njit(parallel=True)
    def double(x):
        out = np.empty(x.shape)
        into, xs = K.reshaped(out, (60,)), K.reshaped(x, (60,))
        for i in numba.prange(60):
            into[i] = 2.0 * xs[i]
        return out
    x = np.arange(60.0).reshape(6, 10)
    np.testing.assert_array_equal(double(x), 2.0 * x)


def test_parallel_loops_merge_and_agree(monkeypatch):
    """A nest large enough for a parallel helper runs over merged views too, and its values
    are the numpy backend's: sums like the attention workloads', whose stores through the
    view numba once dropped as dead (numba_views.py says why)."""
    import numba
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread: no parallel loops")
    monkeypatch.setattr(pj.config, "parallel_min_size", 64)
    monkeypatch.setattr(pj.config, "num_threads", 2)
    rng = np.random.default_rng(8)
    x, w, b, c = (rng.normal(size=(8, 16, 32)), rng.normal(size=(32, 32)), rng.normal(size=(8, 16, 32)),
                  rng.normal(size=(8, 16, 32)))

    def attention_like(x, w, b, c):      # (no product: a program with one has no parallel loops)
        return pj.cumsum(x, axis=-1) + b + c
    numba_f, numpy_f = pj.function(attention_like, backend="numba"), pj.function(attention_like, backend="numpy")
    np.testing.assert_allclose(numba_f(x, w, b, c), numpy_f(x, w, b, c), rtol=1e-14, atol=1e-14)
    source = numba_source(numba_f.program(x, w, b, c), "program", None, 64)
    assert "numba.prange(4096)" in source and "K.merged_axes(" in source


K = None      # (the kernels module, as generated code names it: set by the test below)


def test_stores_through_a_view_in_a_prange_loop_are_kept():
    """numba removes stores into an array nothing reads afterwards, and analyses a prange
    loop's body without its back edge: a store through `K.merged_axes(a, ...)` keeps `a`
    live only because numba is told the view aliases `a`. Without that, the whole loop
    below was removed and `out` kept `np.empty`'s bytes, `a` its old values."""
    import numba
    from pforjac.compiled.numba_backend import kernels
    global K
    K = kernels()

    @numba.njit(parallel=True)
    def double(x, a):
        out = np.empty(x.shape)
        into, xs, inplace = K.merged_axes(out, 0, 2), K.merged_axes(x, 0, 2), K.merged_axes(a, 0, 2)
        for i in numba.prange(60):
            into[i] = 2.0 * xs[i]
            inplace[i] = inplace[i] + xs[i]
        return out
    x, a = np.arange(60.0).reshape(6, 10), np.ones((6, 10))
    np.testing.assert_array_equal(double(x, a), 2.0 * x)
    np.testing.assert_array_equal(a, 1.0 + x)
