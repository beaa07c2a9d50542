"""The numba backend's arrays of zeros (`K.zeros`: memory from Python's raw calloc,
handed to numba's runtime, numba_alloc.py) and the stores of a scatter whose positions do
not repeat: the values, the memory freed, the code loaded from the disk cache by a second
process, and the layout of numba's C API table that the code reads."""
import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_codegen import numba_source

numba = pytest.importorskip("numba")

from pforjac.compiled import numba_alloc  # noqa: E402
from pforjac.compiled.numba_backend import kernels  # noqa: E402

K = kernels()


@numba.njit
def _made(n):
    return (K.zeros((n, 3), np.float32), K.zeros(n, np.complex128), K.zeros((), np.bool_),
            K.zeros((0, n), np.int64), K.zeros((2, n, 2), np.float64))


@pytest.mark.parametrize("n", [0, 1, 7, 1 << 20])
def test_zeros_of_every_rank_and_dtype_are_zeros_and_writable(n):
    made = _made(n)
    want = [((n, 3), np.float32), ((n,), np.complex128), ((), np.bool_), ((0, n), np.int64),
            ((2, n, 2), np.float64)]
    for a, (shape, dtype) in zip(made, want):
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous and a.flags.writeable
        assert not a.any()
        a[...] = 1
        assert a.all() or a.size == 0


def test_a_negative_dimension_is_a_value_error():
    with pytest.raises(ValueError, match="zeros: a negative dimension"):
        _made(-1)


_FREED = textwrap.dedent("""
    import tracemalloc, numpy as np, numba
    from numba.core.runtime import _nrt_python, rtsys
    from pforjac.compiled.numba_backend import kernels
    K = kernels()

    @numba.njit
    def churn(times):
        total = 0.0
        for _ in range(times):
            a = K.zeros((16, 1 << 20), np.float32)        # 64 MiB, dropped at once
            a[3, 5] = 1.0
            total += a[3, 5]
        return total

    @numba.njit
    def kept():
        return K.zeros((1 << 20,), np.float64)

    churn(1)
    kept()
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    assert churn(60) == 60.0
    arrays = [kept() for _ in range(10)]
    assert all(not a.any() for a in arrays)
    held = tracemalloc.get_traced_memory()[0] - base
    del arrays
    left = tracemalloc.get_traced_memory()[0] - base
    peak = tracemalloc.get_traced_memory()[1] - base
    after = rtsys.get_allocation_stats()
    print(after.mi_alloc - before.mi_alloc, after.mi_free - before.mi_free, held >> 20, left >> 20,
          peak >> 20)
""")


def test_the_memory_is_freed_when_the_array_is_dropped():
    """NRT's counts of owners made and freed, and Python's raw allocator's traced bytes:
    each 64 MiB array made in a loop is freed before the next, the ten returned arrays
    when dropped."""
    out = subprocess.run([sys.executable, "-c", _FREED], capture_output=True, text=True, check=True)
    made, freed, held_mib, left_mib, peak_mib = map(int, out.stdout.split())
    assert made == freed == 70              # 60 dropped inside numba, 10 returned then dropped
    assert 80 <= held_mib < 82 and left_mib == 0
    assert peak_mib < 64 + 82               # (60 arrays never freed would be 3.75 GiB)


_CACHED_RUN = textwrap.dedent("""
    import sys, numpy as np, pforjac as pj
    from pforjac.compiled import numba_backend

    def diagonal(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = pj.sin(x) * x
        return tape.batch_jacobian(y, x)

    if sys.argv[1] == "load":      # the second process: no source generated, no numba compile
        numba_backend.numba_source = numba_backend.declined_equations = None
        numba_backend.numba_index.record = None
    f = pj.function(diagonal, backend="numba")
    x = np.linspace(-1.0, 1.0, 8 * 400).reshape(8, 400)                # J: 10 MiB
    j = f(x)
    d = np.einsum("bii->bi", j)
    print(np.count_nonzero(j) == np.count_nonzero(d), np.abs(d - (np.cos(x) * x + np.sin(x))).max() < 1e-15)
    stats = next(iter(f._cache.values())).code.dispatcher.stats
    print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
""")


def test_a_second_process_loads_a_program_making_zeros_from_the_cache(tmp_path):
    env = dict(os.environ, PFORJAC_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    runs = [subprocess.run([sys.executable, "-c", _CACHED_RUN, step], env=env, capture_output=True,
                           text=True, check=True).stdout.splitlines() for step in ("compile", "load")]
    assert runs[0][0] == runs[1][0] == "True True"
    assert runs[0][1] == "0 1" and runs[1][1] == "1 0"      # compiled, then loaded


def test_numbas_c_api_table_holds_manage_memory_where_it_is_read():
    """NRT_get_api()'s table: allocate, allocate_external, manage_memory, acquire, release,
    get_data. The slots around the one read are the runtime's own functions, and the one
    read makes an owner that calls the destructor it is given with the data it is given."""
    from numba.core.runtime import _nrt_python
    helpers = _nrt_python.c_helpers
    table = ctypes.cast(ctypes.CFUNCTYPE(ctypes.c_void_p)(helpers["get_api"])(),
                        ctypes.POINTER(ctypes.c_void_p))
    assert (table[0], table[4], table[5]) == (
        helpers["MemInfo_alloc"], helpers["MemInfo_release"], helpers["MemInfo_data"])
    freed = []
    dtor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(freed.append)
    manage = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
        table[numba_alloc._MANAGE_MEMORY])
    release = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(table[4])
    data = ctypes.c_void_p(0x1234560)
    meminfo = manage(data, ctypes.cast(dtor, ctypes.c_void_p))
    assert ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(table[5])(meminfo) == data.value
    release(meminfo)
    assert freed == [data.value]


def _scatter(x, unique):
    from pforjac.ops.indexing import scatter_add_p
    idx = np.array([4, 0, 2, 5]) if unique else np.array([4, 0, 4, 5])
    return scatter_add_p.bind(x * 3.0, idx, axis=1, size=6, unique=True if unique else None)


@pytest.mark.parametrize("unique", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_scatter_with_no_repeated_position_stores_and_adds_zero(unique, dtype):
    x = np.array([[0.5, -0.0, 1.5, 2.0], [-0.0, 0.0, -1.0, 3.0]], dtype)
    f = pj.function(lambda x: _scatter(x, unique), backend="numba")
    got, want = f(x), pj.function(lambda x: _scatter(x, unique), backend="numpy")(x)
    assert got.dtype == want.dtype == dtype
    np.testing.assert_array_equal(got, want)
    assert not np.signbit(got[got == 0]).any()     # (x's -0.0 times 3 is -0.0: stored, it would show)
    source = numba_source(f.program(x))
    stores = [line for line in source.splitlines() if "K.positions" not in line and "[" in line
              and ("+=" in line or f"+ np.{np.dtype(dtype).name}(0)" in line)]
    assert stores and all(("+=" in line) != unique for line in stores)


def test_a_stored_negative_zero_becomes_positive_as_added_to_zero_it_does():
    x = np.array([[-0.0, 1.0, -2.0, 0.0]])
    from pforjac.ops.indexing import scatter_add_p

    def neg(x):
        return scatter_add_p.bind(x * 1.0, np.array([3, 1, 0, 2]), axis=1, size=5, unique=True)
    got = pj.function(neg, backend="numba")(x)
    np.testing.assert_array_equal(got, [[-2.0, 1.0, 0.0, 0.0, 0.0]])
    assert not np.signbit(got[0, 3]) and np.signbit(x[0, 0])


def test_tracemalloc_sees_the_zeros_as_it_sees_numbas_own_arrays():
    """The memory is Python's raw allocator's (as numba's own arrays' is): a memory
    profile built on tracemalloc counts it while the array lives, and not after."""
    import tracemalloc

    @numba.njit
    def both(n):
        return K.zeros((n, 1024), np.float64), np.empty((n, 1024), np.float64)
    both(1)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        zeros, empty = both(1024)                  # 8 MiB each
        held = tracemalloc.get_traced_memory()[0] - base
        del zeros, empty
        after = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert 2 * (8 << 20) <= held < 2 * (8 << 20) + (1 << 20)
    assert after < 1 << 20
