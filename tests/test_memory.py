"""Memory: a Jacobian too big to exist fails fast; chunking bounds the working memory.

The huge cases use broadcast views as inputs, so the forward pass is cheap (a few
MB) while the dense result would take terabytes: the MemoryError must come before
anything of that size is allocated, and say what to do instead.
"""
from __future__ import annotations

import gc
import os
import time
import tracemalloc

import numpy as np
import pytest

import pforjac as pj
from pforjac.memory import JacobianMemoryError

N = 10 ** 6  # a (N,) target and source: the Jacobian has 10^12 entries, 3.6 TiB of float32


def _huge_forward(shape, dtype=np.float32, persistent=False):
    x = pj.constant(np.broadcast_to(np.asarray(0.5, dtype), shape))
    with pj.GradientTape(persistent=persistent) as tape:
        tape.watch(x)
        y = pj.sin(x) * 2.0
    return tape, y, x


def _fails_fast(call, shape_text: str, advice: str = "batch_jacobian"):
    tracemalloc.start()
    try:
        start = time.perf_counter()
        with pytest.raises(MemoryError) as info:
            call()
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert isinstance(info.value, JacobianMemoryError)
    assert shape_text in message, message
    assert "TiB" in message and "entries" in message, message
    assert advice in message and "parallel_iterations" in message, message
    assert seconds < 2.0, f"took {seconds:.1f} s to fail"
    assert peak < 64 << 20, f"allocated {peak / 2**20:.0f} MiB before failing"
    return message


@pytest.mark.parametrize("use_pfor", [True, False])
@pytest.mark.parametrize("parallel_iterations", [None, 8])
def test_huge_jacobian_fails_fast(use_pfor, parallel_iterations):
    tape, y, x = _huge_forward((N,), persistent=not use_pfor)
    message = _fails_fast(lambda: tape.jacobian(y, x, parallel_iterations=parallel_iterations,
                                                experimental_use_pfor=use_pfor),
                          f"({N}, {N})")
    assert f"{N * N:,} float32" in message


def test_huge_jacobian_of_a_matrix_fails_fast_float64():
    tape, y, x = _huge_forward((1000, 1000), np.float64)
    _fails_fast(lambda: tape.jacobian(y, x), "(1000, 1000, 1000, 1000)")


def test_huge_jacobian_unconnected_zero_fails_fast():
    """Zeros of the result's size would be just as big: the check comes first."""
    x = pj.constant(np.broadcast_to(np.float32(1.0), (N,)))
    y = pj.constant(np.broadcast_to(np.float32(2.0), (N,)))
    with pj.GradientTape() as tape:
        tape.watch(x)
    _fails_fast(lambda: tape.jacobian(y, x, unconnected_gradients="zero"), f"({N}, {N})")


def test_the_size_check_counts_an_integer_sources_zeros_as_float32():
    x = pj.constant(np.broadcast_to(np.float32(1.0), (N,)))
    i = pj.constant(np.broadcast_to(np.int8(1), (N,)))
    with pj.GradientTape() as tape:
        tape.watch([x, i])
        y = pj.sin(x)
    message = _fails_fast(lambda: tape.jacobian(y, i, unconnected_gradients="zero"), f"({N}, {N})")
    assert "float32 entries" in message and "3.6 TiB" in message, message


def test_a_matrix_targets_jacobian_of_a_product_never_densifies_its_seed():
    # Its seed is a one-hot tied on both axes of the target; times W it used to be densified
    # first: (12000, 2, 6000) floats, 549 MiB for a 9 MiB result.
    from pforjac.compiled import loopcache
    w = pj.constant(np.random.default_rng(0).normal(size=(100, 6000)).astype(np.float32))
    x = pj.constant(np.ones((2, 100), np.float32))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x @ w
    with loopcache.caching(False):
        tracemalloc.start()
        try:
            jac = tape.jacobian(y, x).numpy()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        np.testing.assert_array_equal(jac, tape.jacobian(y, x, parallel_iterations=997).numpy())
    assert peak < 4 * jac.nbytes, f"peak {peak / 2**20:.0f} MiB for a {jac.nbytes / 2**20:.0f} MiB result"


@pytest.mark.parametrize("use_pfor", [True, False])
def test_huge_batch_jacobian_fails_fast(use_pfor):
    tape, y, x = _huge_forward((8, 400_000), persistent=not use_pfor)
    message = _fails_fast(lambda: tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor),
                          "(8, 400000, 400000)", advice="Compute it for fewer targets")
    assert "use batch_jacobian" not in message      # it is the batch_jacobian already


def test_huge_functional_jacobian_fails_fast():
    if not callable(getattr(pj, "jacobian", None)):
        pytest.skip("no functional API")
    x = pj.constant(np.broadcast_to(np.float32(0.5), (N,)))
    for vectorize in (False, True):
        _fails_fast(lambda: pj.jacobian(lambda v: pj.sin(v) * 2.0, x, vectorize=vectorize),
                    f"({N}, {N})")
    _fails_fast(lambda: pj.jacobian(lambda v: pj.sin(v) * 2.0, x, vectorize=True,
                                    strategy="forward-mode"), f"({N}, {N})")


# -- parallel_iterations bounds the working memory ---------------------------------------------
def _mlp_tape(batch=40):
    rng = np.random.default_rng(0)
    x = pj.constant(rng.standard_normal((batch, 200)).astype(np.float32))
    w1 = pj.constant((rng.standard_normal((200, 64)) / 14).astype(np.float32))
    w2 = pj.constant((rng.standard_normal((64, 8)) / 8).astype(np.float32))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.matmul(pj.sigmoid(pj.matmul(x, w1)), w2)
    return tape, y, x


def _peak(call) -> tuple[int, object]:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = call()
        return tracemalloc.get_traced_memory()[1] - base, out
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("use_pfor", [True, False])
def test_chunks_are_not_kept_alive(use_pfor):
    """With k iterations at a time, the peak is the result plus about one chunk's work:
    chunk outputs are written into the result as they come, not kept and concatenated."""
    tape, y, x = _mlp_tape()
    result_bytes = y.size * x.size * 4           # (40, 8, 40, 200) float32: 10 MB
    peak, out = _peak(lambda: tape.jacobian(y, x, parallel_iterations=16,
                                            experimental_use_pfor=use_pfor))
    assert out.shape == (40, 8, 40, 200)
    assert peak < 1.3 * result_bytes, f"peak {peak / 2**20:.1f} MiB for a " \
                                      f"{result_bytes / 2**20:.1f} MiB result"
    full = tape.jacobian(y, x).numpy()
    np.testing.assert_allclose(out.numpy(), full, rtol=1e-5, atol=1e-7)


def test_chunked_jacobian_under_an_outer_tape_is_differentiable():
    """Under an outer tape the chunks are joined with ops the outer tape records."""
    x = pj.constant(np.linspace(-1.0, 1.0, 6).reshape(2, 3))
    with pj.GradientTape() as outer:
        outer.watch(x)
        with pj.GradientTape() as inner:
            inner.watch(x)
            y = pj.sin(x) * x
        j = inner.jacobian(y, x, parallel_iterations=4)
        s = pj.sum(j)
    h = outer.gradient(s, x).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(h, 2 * np.cos(xv) - xv * np.sin(xv), rtol=1e-12)


# -- results are freed when dropped; mostly-zero results touch only their written pages ----
def _jacobian_calls():
    x = pj.constant(np.random.default_rng(0).random((4, 3), dtype=np.float32))
    w = pj.Variable(np.ones((3, 2), np.float32))

    def tape_jacobian():
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.tanh(x @ w)
        return g.jacobian(y, [x, w])

    def batch_jacobian(use_pfor):
        with pj.GradientTape(persistent=True) as g:
            g.watch(x)
            y = pj.tanh(x @ w)
        return g.batch_jacobian(y, x, experimental_use_pfor=use_pfor)

    def hessian_of_tapes():
        with pj.GradientTape() as outer:
            outer.watch(x)
            with pj.GradientTape() as inner:
                inner.watch(x)
                y = pj.sum(pj.sin(x) ** 2)
            g = inner.gradient(y, x)
        return outer.jacobian(g, x)

    compiled = pj.function(lambda z: pj.jacobian(lambda v: pj.tanh(v @ w), z))
    return {
        "tape.jacobian": tape_jacobian,
        "batch_jacobian pfor": lambda: batch_jacobian(True),
        "batch_jacobian while-loop": lambda: batch_jacobian(False),
        "jacobian of gradient": hessian_of_tapes,
        "pfor": lambda: pj.pfor(lambda i: pj.gather(x, i) * 2.0, 4),
        "function": lambda: compiled(x),
        "functional jacobian": lambda: pj.jacobian(lambda v: pj.tanh(v @ w), x, vectorize=True),
        "forward mode": lambda: pj.jacobian(lambda v: pj.tanh(v @ w), x, vectorize=True,
                                            strategy="forward-mode"),
        "hessian": lambda: pj.hessian(lambda v: pj.sum(pj.sin(v) ** 3), x),
    }


@pytest.mark.parametrize("name", list(_jacobian_calls()))
def test_no_reference_cycles_left_behind(name):
    """A Jacobian call leaves no cyclic garbage: its result and every intermediate (traced
    programs, their captured arrays) are freed when the last reference goes, not at some
    later gc run (a 750 MB result kept alive that way doubles the peak of a loop)."""
    call = _jacobian_calls()[name]
    for _ in range(3):                 # warm caches (loop cache, compiled signatures)
        call()
    gc.collect()
    gc.disable()
    try:
        call()
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert unreachable == 0, f"{name} left {unreachable} objects in reference cycles"


def _root(a):
    """What finally owns an array's memory: an ndarray, or the memoryview of a mapping (a
    tensor's array is a view through a read-only memoryview of the tensor's own array)."""
    while True:
        if isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        elif isinstance(a, memoryview) and isinstance(a.obj, np.ndarray):
            a = a.obj
        else:
            return a


def test_sparse_zeros_maps_only_for_mostly_untouched_results():
    from pforjac.memory import sparse_results, sparse_zeros
    default = sparse_zeros((1024, 1024, 2), np.float32, blocks=8, block_bytes=4096)
    assert isinstance(_root(default), np.ndarray)                       # opt-in only
    with sparse_results():
        _sparse_zeros_cases(sparse_zeros)


def _sparse_zeros_cases(sparse_zeros):
    small = sparse_zeros((10, 10), np.float32, blocks=1, block_bytes=4)
    assert isinstance(_root(small), np.ndarray) and not small.any()     # small: np.zeros
    dense = sparse_zeros((1024, 1024, 2), np.float32, blocks=1024, block_bytes=8192)
    assert isinstance(_root(dense), np.ndarray)                         # every page written
    sparse = sparse_zeros((1024, 1024, 2), np.float32, blocks=8, block_bytes=4096)
    assert isinstance(_root(sparse), memoryview) and sparse.flags.writeable
    assert sparse.shape == (1024, 1024, 2) and sparse.dtype == np.float32 and not sparse.any()


def test_full_jacobian_of_independent_rows_maps_its_zeros_on_request():
    """Under sparse_results(), the seed-shaped full jacobian (only the per-example blocks
    are non-zero) lands in a plain mapping, and is exactly the while-loop's result."""
    from pforjac.memory import sparse_results
    rng = np.random.default_rng(1)
    x = pj.constant(rng.standard_normal((64, 300)).astype(np.float32))
    w1 = pj.constant(rng.standard_normal((300, 16)).astype(np.float32))
    w2 = pj.constant(rng.standard_normal((16, 1)).astype(np.float32))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = pj.sigmoid(x @ w1) @ w2
    assert isinstance(_root(g.jacobian(y, x).numpy()), np.ndarray)   # default: np.zeros
    with sparse_results():
        j = g.jacobian(y, x).numpy()                                  # (64, 1, 64, 300): 4.7 MiB
    assert isinstance(_root(j), memoryview)
    np.testing.assert_array_equal(j, g.jacobian(y, x, experimental_use_pfor=False).numpy())


# -- reused result buffers ---------------------------------------------------------------
@pytest.fixture
def small_cache(monkeypatch):
    """Results of 1 MiB and more go through the cache (instead of 32 MiB), at most 4 MiB idle."""
    from pforjac import memory
    monkeypatch.setattr(memory, "_CACHE_MIN", 1 << 20)
    monkeypatch.setattr(memory._cache, "limit", 4 << 20)
    memory.clear_result_cache()
    yield memory
    memory.clear_result_cache()


def test_a_dead_result_is_reused_and_cleared(small_cache):
    a = small_cache.result_zeros((512, 1024), np.float32)               # 2 MiB
    assert isinstance(_root(a), small_cache.ctypes.Array) and not a.any() and a.flags.writeable
    a[:] = np.nan
    address = a.ctypes.data
    del a
    assert small_cache._cache.idle_bytes() == 2 << 20
    b = small_cache.result_zeros((1024, 512), np.float32)               # same size, other shape
    assert b.ctypes.data == address and b.shape == (1024, 512) and not b.any()
    assert small_cache._cache.idle_bytes() == 0
    b[:] = 7
    del b
    c = small_cache.result_empty((256, 256, 8), np.float32)             # empty: not cleared
    assert c.ctypes.data == address


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_copies_of_cached_results(small_cache):
    # The mappings used to be shared (mmap's default): a child writing into its copy of a
    # result, or reusing the pages of a result it dropped, changed the parent's.
    live = small_cache.result_zeros((512, 1024), np.float32)
    live[:] = 1.0
    idle = small_cache.result_zeros((512, 1024), np.float32)
    idle[:] = 2.0
    del idle                                      # an idle mapping the child could take
    sparse = small_cache.sparse_zeros((4096, 1024), np.float32, 1, 4)
    pid = os.fork()
    if pid == 0:                                  # the child: write everywhere it can
        try:
            live[:] = -1.0
            sparse[:] = -1.0
            small_cache.result_zeros((512, 1024), np.float32)[:] = -1.0
            small_cache.result_zeros((512, 1024), np.float32)[:] = -1.0
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert (live == 1.0).all() and not sparse.any()
    again = small_cache.result_zeros((512, 1024), np.float32)   # the parent's idle mapping
    assert not again.any()


def test_a_sparsely_written_result_is_cleared_where_it_was_written(small_cache, monkeypatch):
    """A fresh mapping written in a few places keeps its other pages untouched; reusing it
    clears only the touched pages (from the page map) and the result is all zeros, with or
    without the page map."""
    for pagemap in (True, False):
        if not pagemap:
            monkeypatch.setattr(small_cache, "_touched_runs", lambda address, nbytes: None)
        small_cache.clear_result_cache()
        a = small_cache.result_zeros((1024, 1024), np.float32)          # 4 MiB, fresh
        a[::97, ::13] = np.nan                                           # scattered garbage
        a[-1, -1] = 7.0                                                  # the very last entry
        address = a.ctypes.data
        del a
        b = small_cache.result_zeros((1024, 1024), np.float32)
        assert b.ctypes.data == address and not b.any() and not np.isnan(b).any()
        b[5, 5] = 1.0
        del b
        c = small_cache.result_zeros((1024, 1024), np.float32)
        assert c.ctypes.data == address and not c.any()


def test_touched_runs_follow_the_written_pages(small_cache):
    a = small_cache.result_zeros((1 << 20,), np.float32)                 # 4 MiB, fresh
    runs = small_cache._touched_runs(a.ctypes.data, a.nbytes)
    if runs is None:
        pytest.skip("no /proc/self/pagemap here")
    a[[0, 300000, (1 << 20) - 1]] = 1.0
    runs = small_cache._touched_runs(a.ctypes.data, a.nbytes)
    written = [0, 300000 * 4, a.nbytes - 4]
    assert all(any(s <= w < e for s, e in runs) for w in written)        # every write covered
    assert all(e <= a.nbytes and s < e for s, e in runs)
    a[:] = 2.0
    assert small_cache._touched_runs(a.ctypes.data, a.nbytes) == [(0, a.nbytes)]


def test_a_live_view_keeps_the_buffer(small_cache):
    a = small_cache.result_zeros((512, 1024), np.float32)
    a[:] = 5
    view = a[100:200].T
    del a
    assert small_cache._cache.idle_bytes() == 0                         # still in use by the view
    b = small_cache.result_zeros((512, 1024), np.float32)
    assert (view == 5).all() and not b.any()
    del view
    assert small_cache._cache.idle_bytes() == 2 << 20


def test_idle_buffers_are_capped_and_can_be_freed(small_cache):
    arrays = [small_cache.result_zeros((1 << 18,), np.float32) for _ in range(7)]   # 1 MiB each
    del arrays
    cache = small_cache._cache                          # what is kept, before any other call:
    assert cache._idle_bytes + sum(len(r) for r in cache._returned) == 4 << 20
    assert cache.idle_bytes() == 4 << 20                                # the limit, oldest dropped
    huge = small_cache.result_zeros((1 << 21,), np.float32)             # 8 MiB: above the limit
    assert isinstance(_root(huge), np.ndarray)
    assert small_cache.clear_result_cache() == 4 << 20
    assert small_cache._cache.idle_bytes() == 0
    with small_cache.result_cache(False):
        plain = small_cache.result_zeros((1 << 18,), np.float32)
    assert isinstance(_root(plain), np.ndarray) and plain.flags.owndata


def test_tracemalloc_counts_a_cached_result(small_cache):
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        a = small_cache.result_zeros((512, 1024), np.float32)
        assert tracemalloc.get_traced_memory()[0] - before >= 2 << 20
        del a
        assert tracemalloc.get_traced_memory()[0] - before < 1 << 20
    finally:
        tracemalloc.stop()


def test_jacobians_on_reused_dirty_buffers_are_exact(small_cache):
    """Every result path (pfor scatter, while-loop stacking, chunking, compiled) on buffers
    that earlier results left full of garbage gives exactly the uncached result."""
    rng = np.random.default_rng(3)
    x = pj.constant(rng.standard_normal((16, 128)).astype(np.float32))   # (16,128,128): 1 MiB

    def batch(**kw):
        with pj.GradientTape(persistent=True) as g:
            g.watch(x)
            y = pj.sin(x) * pj.exp(x) + x ** 2
        return g.batch_jacobian(y, x, **kw).numpy()

    compiled = pj.function(lambda x: _batch_of(x))
    calls = [lambda: batch(), lambda: batch(experimental_use_pfor=False),
             lambda: batch(parallel_iterations=5), lambda: compiled(x).numpy()]
    with small_cache.result_cache(False):
        expected = [call() for call in calls]
    assert not isinstance(_root(expected[0]), small_cache.ctypes.Array)
    for _ in range(3):
        for call, want in zip(calls, expected):
            got = call()
            np.testing.assert_array_equal(got, want)
            own = got.base.obj                  # (a tensor's array can't be made writable;
            own.flags.writeable = True          # the tensor's own array, whose memory is
            own[...] = np.nan                   # reused, can): garbage for the next one
            del got, own
    assert small_cache._cache.idle_bytes() > 0


def _batch_of(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.sin(x) * pj.exp(x) + x ** 2
    return g.batch_jacobian(y, x)


def test_result_cache_is_thread_safe(small_cache):
    import threading
    errors = []

    def work(seed):
        for k in range(30):
            a = small_cache.result_zeros((1 << 18,), np.float32)
            if a.any():
                errors.append("not zero")
            a[:] = seed * 100 + k
            if not (a == seed * 100 + k).all():
                errors.append("shared")
            del a
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_cache_limit_can_be_set(small_cache):
    arrays = [small_cache.result_zeros((1 << 18,), np.float32) for _ in range(3)]
    del arrays
    assert small_cache._cache.idle_bytes() == 3 << 20
    assert small_cache.set_result_cache_limit(1 << 20) == 4 << 20     # returns the previous limit
    assert small_cache._cache.idle_bytes() == 1 << 20                   # evicted at once
    small_cache.set_result_cache_limit(0)
    assert small_cache._cache.idle_bytes() == 0
    a = small_cache.result_zeros((1 << 18,), np.float32)                 # above the limit: numpy's
    assert isinstance(_root(a), np.ndarray)
    for bad in (-1, 1.5, True, "1 GiB"):
        with pytest.raises(ValueError, match="set_result_cache_limit"):
            small_cache.set_result_cache_limit(bad)
    small_cache.set_result_cache_limit(4 << 20)


def test_default_cache_limit_is_a_sixteenth_of_memory_within_bounds():
    from pforjac import memory
    limit = memory._default_cache_limit()
    assert 256 << 20 <= limit <= 2 << 30


def test_idle_cached_results_are_freed_before_a_result_is_refused(small_cache, monkeypatch):
    """check_results_fit counts idle cached pages as reclaimable: it frees them and looks
    again before refusing a Jacobian."""
    arrays = [small_cache.result_zeros((1 << 18,), np.float32) for _ in range(3)]
    del arrays
    assert small_cache._cache.idle_bytes() == 3 << 20
    monkeypatch.setattr(small_cache, "available_memory",
                        lambda: (200 << 20) if small_cache._cache.idle_bytes() == 0 else (80 << 20))
    small_cache.check_results_fit([((100 << 18,), np.float32)])          # 100 MiB: fits once freed
    assert small_cache._cache.idle_bytes() == 0
    with pytest.raises(JacobianMemoryError):
        small_cache.check_results_fit([((300 << 18,), np.float32)])


@pytest.mark.parametrize("call", ["jacobian", "batch_jacobian", "pfor", "forward"])
def test_running_out_of_working_memory_says_to_pass_parallel_iterations(call):
    from pforjac import extend
    from pforjac.testing import isolated_registries
    with isolated_registries():
        op = extend.defop("mem_hungry", lambda x: x * 2.0, extend.same_shape,
                          vjp=lambda g, ans, x: op(g), jvp=lambda t, ans, x: op(t),
                          elementwise=True)

        @extend.register_converter(op)
        def _convert(n, args, stacked):
            raise MemoryError("Unable to allocate 37.3 GiB for an array")
        x = pj.constant(np.ones((2, 3)))
        with pytest.raises(JacobianMemoryError, match=f"{call if call != 'forward' else 'jacobian'}.*"
                           r"37.3 GiB.*parallel_iterations=k"):
            if call == "pfor":
                pj.pfor(lambda i: op(x * pj.cast(i, np.float64)), 4)
            elif call == "forward":
                pj.jacobian(op, x, vectorize=True, strategy="forward-mode")
            else:
                with pj.GradientTape() as tape:
                    tape.watch(x)
                    y = op(x)
                getattr(tape, call)(y, x)


def test_import_settles_the_allocator_so_temporaries_reuse_heap_pages():
    """In a fresh process glibc maps each allocation of 128 KiB or more anew and unmaps it
    when freed: every call paid its temporaries' page faults again (a compiled Lorenz-96
    Jacobian: 319 a call, 7x slower) until something freed a large array once. Importing
    pforjac does that (memory.settle_allocator)."""
    import platform
    import subprocess
    import sys
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc's malloc thresholds")
    code = """
import resource, statistics, numpy as np, pforjac as pj
@pj.function
def jac(x):                                # Lorenz-96's right-hand side, 200 states
    with pj.GradientTape() as g:
        g.watch(x)
        y = (pj.concat([x[1:], x[:1]], 0) - pj.concat([x[-2:], x[:-2]], 0)) * \
            pj.concat([x[-1:], x[:-1]], 0) - x + 8.0
    return g.jacobian(y, x)
x = np.linspace(7.0, 9.0, 200, dtype=np.float32)
faults = []
for _ in range(25):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    jac(x)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
churn = []
for _ in range(6):                         # 120 MB of temporaries under 32 MiB, then freed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.ones(n) for n in (3_000_000, 2_500_000, 2_000_000, 2_000_000, 1_500_000,
                                   1_000_000, 1_000_000, 500_000, 500_000, 400_000)]
    del arrays
    churn.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(statistics.median(faults[5:]), statistics.median(churn[2:]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    per_call, per_round = map(float, out.stdout.split())
    assert per_call < 20, out.stdout            # 319 a call without the settling
    assert per_round < 1000, out.stdout         # 6,669 a round without (each array mapped anew)
