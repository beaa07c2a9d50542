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
    from pforjac import loopcache
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
                          vjp=lambda g, ans, x: op(g), jvp=lambda t, ans, x: op(t))

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
