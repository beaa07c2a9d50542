"""Memory of Jacobian results: fail fast, before allocating, when a dense Jacobian cannot
fit; place mostly-zero results in lazily zeroed mappings on request (`sparse_results`);
reuse the pages of dead large results (`result_zeros`, `result_empty`, `result_cache`)."""
from __future__ import annotations

import collections
import contextlib
import ctypes
import functools
import math
import mmap
import os
import threading
import weakref

import numpy as np

from .switch import Switch

__all__ = ["available_memory", "check_results_fit", "JacobianMemoryError", "sparse_zeros",
           "sparse_results", "result_zeros", "result_empty", "result_cache", "clear_result_cache",
           "set_result_cache_limit", "settle_allocator"]


class JacobianMemoryError(MemoryError):
    """The dense result of a Jacobian (or its working memory) is larger than the memory
    available."""


@contextlib.contextmanager
def working_memory_advice(what: str, parallel_iterations: int | None = None):
    """Turns numpy's MemoryError while `what` computes its rows (all at once, or
    `parallel_iterations` at a time) into a JacobianMemoryError that says how to compute
    fewer at a time."""
    try:
        yield
    except JacobianMemoryError:
        raise
    except MemoryError as e:
        rows = "all rows at once" if parallel_iterations is None else \
            f"{parallel_iterations} rows at a time (parallel_iterations={parallel_iterations})"
        fewer = "parallel_iterations=k" if parallel_iterations is None else \
            "a smaller parallel_iterations"
        raise JacobianMemoryError(
            f"{what}: the working memory for {rows} does not fit ({e}). Pass {fewer} to "
            f"compute fewer rows at a time: the working memory falls roughly in proportion "
            f"(the result itself still has to fit)") from e


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable on Linux, physical pages elsewhere)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def check_results_fit(results, per_example: bool = False, what: str | None = None) -> None:
    """Raises before anything is computed when the dense results, together, can't fit
    (`per_example`: batch_jacobian's, which has no cross-example zeros to leave out; `what`:
    the results of a loop of that name, not a Jacobian's)."""
    sizes = [(tuple(shape), np.dtype(dtype), math.prod(int(d) for d in shape))
             for shape, dtype in results]
    nbytes = sum(size * dtype.itemsize for _, dtype, size in sizes)
    if nbytes <= 64 << 20:
        return
    avail = available_memory()
    if nbytes > avail and clear_result_cache():     # idle cached results count as used
        avail = available_memory()
    if nbytes > avail:
        shape, dtype, size = max(sizes, key=lambda r: r[2] * r[1].itemsize)
        many = f" (the largest of {len(sizes)} results)" if len(sizes) > 1 else ""
        if what is not None:
            raise JacobianMemoryError(
                f"{what}: the stacked result of shape {shape}{many} ({size:,} {dtype.name} "
                f"entries) needs {_format_bytes(nbytes)} in all, but only "
                f"{_format_bytes(avail)} of memory is available, so nothing was computed. Run "
                f"fewer iterations per call (parallel_iterations bounds only the working "
                f"memory, not the result)")
        raise JacobianMemoryError(
            f"the Jacobian's dense result of shape {shape}{many} ({size:,} {dtype.name} entries) "
            f"needs {_format_bytes(nbytes)} in all, but only {_format_bytes(avail)} of memory is "
            f"available, so nothing was computed. " + ("Compute" if per_example else
            "If row i of the target depends only on row i of the source, use batch_jacobian (it "
            "never forms the cross-example zeros); otherwise compute") +
            " it for fewer targets or sources at a time (parallel_iterations bounds only "
            "the working memory, not the result)")


# numpy asks the kernel for transparent huge pages on arrays of 4 MiB and more; the first
# write into each 2 MiB page then zeroes all of it. For a result that is mostly zeros and
# written in scattered places (a full Jacobian whose only non-zeros are the per-example
# blocks) that zeroes the whole array: 750 MB for the seed network's (500, 1, 500, 784)
# Jacobian, 55 ms here, about 8 times as long as computing its non-zero blocks. A plain
# anonymous mapping is zeroed a 4 KiB page at a time, on first touch, so making the result
# costs only the pages written (3.5 ms) -- but every later first read of an untouched page
# is a fault too, so reading the whole result once then takes 600 ms instead of 33 ms.
# Which is cheaper depends on what the caller does with the result, so the mapping is
# opt-in: `with pforjac.memory.sparse_results(True): ...` for code that reads only the
# non-zero blocks (or little of the result). Even then it is used only for arrays of 4 MiB
# and more of which fewer than one page in eight is written.
_HUGE_PAGE_ARRAY = 4 << 20
_PAGE = 4096


_mapping = Switch(False)


def sparse_results(enabled: bool = True):
    """Context manager: inside `with sparse_results():` a mostly-zero Jacobian result is
    placed in a plain memory mapping whose untouched zero pages cost nothing to make (the
    seed network's full Jacobian: 3.5 ms instead of 55 ms for its 750 MB of zeros) but
    cost a page fault each when first read (reading all of it: 600 ms instead of 33 ms).
    Use it when the caller reads only the non-zero blocks. Off by default; thread-local."""
    return _mapping.setting(enabled)


def sparse_zeros(shape, dtype, blocks: int, block_bytes: int) -> np.ndarray:
    """A zero array of `shape` and `dtype` into which the caller will write `blocks`
    separate runs of `block_bytes` bytes each: `np.zeros`, or under `sparse_results()` a
    lazily zeroed mapping when that array is large and mostly left untouched."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    nbytes = size * dtype.itemsize
    if nbytes < _HUGE_PAGE_ARRAY or not _mapping.enabled:
        return result_zeros(shape, dtype)
    pages_written = blocks * (block_bytes // _PAGE + (2 if block_bytes % _PAGE else 1))
    if pages_written * _PAGE * 8 >= nbytes:
        return result_zeros(shape, dtype)
    return np.frombuffer(_private_mapping(nbytes), dtype, count=size).reshape(shape)


def _private_mapping(nbytes: int) -> mmap.mmap:
    """Anonymous memory that, like numpy's, a forked child gets as a copy-on-write copy
    (Python's default for mmap(-1, n) is MAP_SHARED: parent and child would write into
    the same pages), in 4 KiB pages: a result written sparsely (a full Jacobian's blocks)
    then costs only the pages written, where a transparent huge page would zero 2 MiB on
    its first write (the seed network's full Jacobian: 11 -> 22 ms a call)."""
    raw = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        raw.madvise(mmap.MADV_NOHUGEPAGE)
    return raw


# -- the allocator's thresholds -------------------------------------------------------------
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3      # glibc's mallopt parameters
_MALLOC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
               "MALLOC_MMAP_MAX_")


def settle_allocator(trim_threshold: int = 256 << 20) -> bool:
    """Sets glibc's malloc to serve allocations under 32 MiB from its heap and to keep up to
    `trim_threshold` bytes of freed heap for reuse; runs when pforjac is imported, and
    returns whether it did. In a fresh process glibc gives every allocation of 128 KiB or
    more a new mapping and returns freed heap memory above 128 KiB to the system, so each
    numpy temporary of that size pays its page faults again on every call (a compiled
    Lorenz-96 Jacobian, 200 states: 0.85 ms and 319 page faults a call, against 0.12 ms and
    none). Freeing a large array once raises both thresholds, but only to 32 and 64 MiB: the
    per-sequence attention Jacobian of benchmarks/zoo.py, which frees more than that a
    call, still paid 6,800 page faults a call (38 against 16 ms). The cost is resident
    memory: up to `trim_threshold` of freed heap stays mapped. Not on other C libraries
    (macOS, musl), and not where the environment sets glibc's own MALLOC_*_ variables:
    those stand."""
    if any(name in os.environ for name in _MALLOC_ENV):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20) and mallopt(_M_TRIM_THRESHOLD, trim_threshold))


settle_allocator()


# -- reused result buffers ---------------------------------------------------------------
# glibc serves an allocation of 32 MiB or more with a fresh mapping and unmaps it when it
# is freed, so every large Jacobian result starts on pages the kernel must find and zero
# again: 6-7 ms for the 64 MiB of a (64, 512, 512) float32 batch_jacobian on this VM,
# where libc's memset clears already-mapped pages in 1 ms. A result made here lives in a
# mapping of its own; when the result (with every view of it) is gone, the mapping is kept
# for the next result of the same size instead of being returned to the system. Idle
# mappings are kept up to a limit (oldest dropped first): 1/16 of the physical memory,
# at least 256 MiB and at most 2 GiB, so that a Jacobian as large as the seed network's
# 750 MB full one is reused too (62 -> 20 ms a call here). Smaller results take numpy's
# allocator, which already reuses freed memory.
_CACHE_MIN = 32 << 20


def _default_cache_limit() -> int:
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        physical = 4 << 30
    return min(max(physical // 16, 256 << 20), 2 << 30)


class _Mapping:
    """One anonymous mapping: `fresh` until first handed out again, `all_touched` once
    every page is known to be in memory (a full clear or a full overwrite happened)."""
    __slots__ = ("raw", "fresh", "all_touched")

    def __init__(self, raw: mmap.mmap):
        self.raw, self.fresh, self.all_touched = raw, True, False


class _BufferCache:
    """Idle anonymous mappings by size. A buffer comes back through `_returned` (a deque:
    appending is atomic, so a finalizer that runs in any thread, even inside `take`, never
    waits for the lock); it is filed, and the limit enforced, at once if the lock is free,
    else by whoever holds it next."""

    def __init__(self, limit: int):
        self.limit = limit
        self._idle: collections.OrderedDict[int, list] = collections.OrderedDict()
        self._idle_bytes = 0
        self._returned: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self.enabled = Switch(True)

    def take(self, nbytes: int) -> _Mapping:
        """A mapping of `nbytes`: an idle one, or a fresh one (all zeros)."""
        with self._lock:
            self._drain()
            stack = self._idle.get(nbytes)
            if stack:
                mapping = stack.pop()
                self._idle_bytes -= nbytes
                if not stack:
                    del self._idle[nbytes]
                mapping.fresh = False
                return mapping
        return _Mapping(_private_mapping(nbytes))

    def give_back(self, mapping: _Mapping) -> None:
        self._returned.append(mapping)
        if self._lock.acquire(blocking=False):   # enforce the limit now, not at the next take
            try:
                self._drain()
            finally:
                self._lock.release()

    def _drain(self) -> None:
        while self._returned:
            mapping = self._returned.popleft()
            n = len(mapping.raw)
            if n > self.limit:
                continue
            self._idle.setdefault(n, []).append(mapping)
            self._idle.move_to_end(n)
            self._idle_bytes += n
        while self._idle_bytes > self.limit:
            n, stack = next(iter(self._idle.items()))
            stack.pop(0)
            self._idle_bytes -= n
            if not stack:
                del self._idle[n]

    def set_limit(self, limit: int) -> int:
        with self._lock:
            previous, self.limit = self.limit, limit
            self._drain()
        return previous

    def clear(self) -> int:
        with self._lock:
            self._drain()
            freed = self._idle_bytes
            self._idle.clear()
            self._idle_bytes = 0
        return freed

    def idle_bytes(self) -> int:
        with self._lock:
            self._drain()
            return self._idle_bytes

    def forget_after_fork(self) -> None:
        """In a forked child: a fresh lock (another thread may have held the parent's at the
        fork) and no idle mappings (copies of the parent's pages; dropping them frees them)."""
        self._lock = threading.Lock()
        self._idle.clear()
        self._idle_bytes = 0
        self._returned.clear()


_cache = _BufferCache(_default_cache_limit())
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_cache.forget_after_fork)

# numpy reports its data buffers to tracemalloc under this domain; a cached result is
# reported the same way, so tracemalloc-based memory measurements still count it.
_NUMPY_TRACE_DOMAIN = 389047
_trace_track = ctypes.pythonapi.PyTraceMalloc_Track
_trace_track.argtypes = [ctypes.c_uint, ctypes.c_size_t, ctypes.c_size_t]
_trace_untrack = ctypes.pythonapi.PyTraceMalloc_Untrack
_trace_untrack.argtypes = [ctypes.c_uint, ctypes.c_size_t]


def _release(mapping: _Mapping, address: int) -> None:
    _trace_untrack(_NUMPY_TRACE_DOMAIN, address)
    _cache.give_back(mapping)


@functools.lru_cache(maxsize=64)
def _byte_array_type(nbytes: int) -> type:
    return ctypes.c_char * nbytes        # a new ctypes type each time otherwise


def _cached_array(shape, dtype) -> tuple[np.ndarray, _Mapping, int] | None:
    """A large array on a cached mapping, the mapping and the array's address; None when
    the array is for numpy's allocator."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    nbytes = size * dtype.itemsize
    if nbytes < _CACHE_MIN or nbytes > _cache.limit or dtype.hasobject \
            or not _cache.enabled.enabled:
        return None
    try:
        mapping = _cache.take(nbytes)
    except OSError:                     # no mapping to be had: numpy's allocator says why
        return None
    owner = _byte_array_type(nbytes).from_buffer(mapping.raw)   # the base: dies with the last view
    address = ctypes.addressof(owner)
    _trace_track(_NUMPY_TRACE_DOMAIN, address, nbytes)
    done = weakref.finalize(owner, _release, mapping, address)
    done.atexit = False
    return np.frombuffer(owner, dtype, count=size).reshape(shape), mapping, address


def _touched_runs(address: int, nbytes: int):
    """[(start, stop)] byte ranges of the pages in `address`..+`nbytes` that were ever
    written or read in, from /proc/self/pagemap (a page neither present nor swapped out
    was never touched, so it still reads as zero); None when that can't be read."""
    first, count = address // _PAGE, -(-nbytes // _PAGE)
    try:
        fd = os.open("/proc/self/pagemap", os.O_RDONLY)   # per call: a forked child is
        try:                                             # another process
            data = os.pread(fd, count * 8, first * 8)
        finally:
            os.close(fd)
    except OSError:
        return None
    if len(data) != count * 8:
        return None
    touched = (np.frombuffer(data, np.uint64) >> np.uint64(62)) != 0   # present | swapped
    edges = np.flatnonzero(np.diff(touched.astype(np.int8), prepend=0, append=0))
    return [(int(a) * _PAGE, min(int(b) * _PAGE, nbytes)) for a, b in zip(edges[::2], edges[1::2])]


def result_zeros(shape, dtype) -> np.ndarray:
    """`np.zeros(shape, dtype)`; a large one reuses the pages of an earlier dead result
    (cleared here) instead of a fresh mapping the kernel must zero."""
    made = _cached_array(shape, dtype)
    if made is None:
        return np.zeros(shape, dtype)
    out, mapping, address = made
    if mapping.fresh:
        return out
    nbytes = out.nbytes
    # A result that was written sparsely into a fresh mapping left most pages untouched
    # (still zero, not even in memory; numpy's lazily zeroed np.zeros behaves the same);
    # clearing those with memset would fault every one of them in. Clear only the pages
    # that were touched: from the page map, until one full clear made them all present.
    runs = None if mapping.all_touched else _touched_runs(address, nbytes)
    if runs is None or runs == [(0, nbytes)]:
        ctypes.memset(address, 0, nbytes)   # libc's memset: 2x ndarray.fill on 64 MiB here
        mapping.all_touched = True
    else:
        for start, stop in runs:
            ctypes.memset(address + start, 0, stop - start)
    return out


def result_empty(shape, dtype) -> np.ndarray:
    """`np.empty(shape, dtype)` for a result the caller overwrites in full; a large one
    reuses an earlier dead result's pages."""
    made = _cached_array(shape, dtype)
    if made is None:
        return np.empty(shape, dtype)
    made[1].all_touched = True          # the caller writes every page
    return made[0]


def result_cache(enabled: bool = True):
    """Context manager: `with result_cache(False): ...` gives large results fresh memory
    (np.zeros / np.empty) as numpy would. On by default; thread-local."""
    return _cache.enabled.setting(enabled)


def clear_result_cache() -> int:
    """Returns the idle cached result buffers to the system; the number of bytes freed."""
    return _cache.clear()


def set_result_cache_limit(nbytes: int) -> int:
    """Keeps at most `nbytes` of idle result pages (0: keep none); returns the previous
    limit. The default is 1/16 of the physical memory, at least 256 MiB, at most 2 GiB."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
        raise ValueError(f"set_result_cache_limit expects a number of bytes >= 0, got {nbytes!r}")
    return _cache.set_limit(int(nbytes))
