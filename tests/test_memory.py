"""Memory: a Jacobian too big to exist fails fast; chunking bounds the working memory.

The huge cases use broadcast views as inputs, so the forward pass is cheap (a few
MB) while the dense result would take terabytes: the MemoryError must come before
anything of that size is allocated, and say what to do instead.
"""
from __future__ import annotations

import gc
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
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.constant(np.broadcast_to(np.float32(2.0), (N,)))   # a constant of the block
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


# -- results are freed when dropped ---------------------------------------------------------
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


# -- BufferPool: opt-in reuse of large results -------------------------------------------------
def _small_pool(limit=8 << 20):
    from pforjac.memory import BufferPool
    return BufferPool(limit=limit, min_bytes=1 << 20)


def test_without_a_pool_results_are_numpys_own_arrays():
    from pforjac.memory import pooled_empty, pooled_zeros
    a, b = pooled_zeros((1024, 1024), np.float32), pooled_empty((1024, 1024), np.float32)
    assert a.flags.owndata and b.flags.owndata and not a.any()


def test_a_dropped_result_is_reused_and_cleared():
    pool = _small_pool()
    with pool:
        a = pool.zeros((512, 1024), np.float32)                       # 2 MiB
        assert not a.any() and a.flags.writeable
        a[:] = np.nan
        address = a.ctypes.data
        del a
        assert pool.idle_bytes() == 2 << 20
        b = pool.zeros((1024, 512), np.float32)                       # same size, other shape
        assert b.ctypes.data == address and b.shape == (1024, 512) and not b.any()
        b[:] = 7
        del b
        c = pool.empty((256, 256, 8), np.float32)                     # empty: not cleared
        assert c.ctypes.data == address and c.dtype == np.float32


def test_a_live_view_or_buffer_keeps_a_result_from_reuse():
    pool = _small_pool()
    a = pool.zeros((512, 1024), np.float32)
    a[:] = 5
    view, buffer = a[100:200].T, memoryview(a[3])
    del a
    b = pool.zeros((512, 1024), np.float32)
    assert (view == 5).all() and np.frombuffer(buffer, np.float32)[0] == 5 and not b.any()
    del view, b
    assert pool.idle_bytes() == 2 << 20                               # b's; a's is still exported
    del buffer
    assert pool.idle_bytes() == 4 << 20


def test_small_and_object_arrays_and_arrays_over_the_limit_are_numpys():
    pool = _small_pool(limit=4 << 20)
    for shape, dtype in [((10, 10), np.float32), ((1 << 18,), object), ((1 << 21,), np.float32)]:
        a = pool.zeros(shape, dtype)
        assert a.flags.owndata and a.shape == shape and a.dtype == dtype
    assert pool.idle_bytes() == 0 and pool.clear() == 0


def test_idle_arrays_are_capped_and_can_be_freed():
    pool = _small_pool(limit=4 << 20)
    with pool:
        arrays = [pool.zeros((1 << 18,), np.float32) for _ in range(7)]   # 1 MiB each, all live
    assert pool.idle_bytes() == 0
    del arrays
    assert pool.idle_bytes() == 7 << 20          # dropped since the block ended: trimmed next
    pool.zeros((1 << 18,), np.float32)           # reuses one, then the limit holds
    with pool:
        pass
    assert pool.idle_bytes() == 4 << 20
    assert pool.clear() == 4 << 20 and pool.idle_bytes() == 0


def test_a_pool_is_entered_for_this_thread_only():
    import threading
    from pforjac.memory import pooled_zeros
    pool, seen = _small_pool(), []
    with pool:
        inside = pooled_zeros((1 << 18,), np.float32)
        t = threading.Thread(target=lambda: seen.append(pooled_zeros((1 << 18,), np.float32)))
        t.start()
        t.join()
    assert not inside.flags.owndata and seen[0].flags.owndata
    assert pooled_zeros((1 << 18,), np.float32).flags.owndata       # not after the block


def test_one_pool_shared_by_threads_never_hands_out_a_live_array():
    import threading
    pool, errors = _small_pool(), []

    def work(seed):
        for k in range(30):
            a = pool.zeros((1 << 18,), np.float32)
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


def test_jacobians_from_a_pool_of_dirty_buffers_are_exact():
    """Every result path (pfor scatter, while-loop stacking, chunking, compiled) on buffers
    that earlier results left full of garbage gives exactly the result without a pool."""
    rng = np.random.default_rng(3)
    x = pj.constant(rng.standard_normal((16, 128)).astype(np.float32))   # (16,128,128): 1 MiB
    w = pj.constant(rng.standard_normal((128, 4)).astype(np.float32))

    def full(**kw):
        with pj.GradientTape(persistent=True) as g:
            g.watch(x)
            y = pj.tanh(x @ w)[:, 1:]
        return g.jacobian(y, x, **kw).numpy()                             # (16, 3, 16, 128)

    compiled = pj.function(lambda x: _batch_of(x))
    calls = [lambda: full(), lambda: full(experimental_use_pfor=False),
             lambda: full(parallel_iterations=5), lambda: compiled(x).numpy()]
    expected = [call() for call in calls]
    pool = _small_pool(limit=64 << 20)
    pool.min_bytes = 64 << 10
    for _ in range(3):
        for call, want in zip(calls, expected):
            with pool:
                got = call()
            np.testing.assert_array_equal(got, want)
            del got
            for idle in pool._idle():           # garbage for the next one (NaN in every byte)
                idle.fill(255)
    assert 0 < len(pool._arrays) <= 3, "the pool made new arrays instead of reusing them"


def _batch_of(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.sin(x) * pj.exp(x) + x ** 2
    return g.batch_jacobian(y, x)


def test_a_pool_refuses_a_limit_that_is_not_a_number_of_bytes():
    from pforjac.memory import BufferPool
    for bad in (-1, 1.5, True, "1 GiB"):
        with pytest.raises(ValueError, match="BufferPool: limit"):
            BufferPool(limit=bad)
    with pytest.raises(ValueError, match="min_bytes"):
        BufferPool(min_bytes=-1)
