"""Memory of Jacobian results: fail fast, before allocating, when a dense Jacobian cannot
fit, and say how to compute less at a time when its working memory does not; reuse large
results across calls where the caller asks for it (`BufferPool`).

Results are plain numpy arrays (`np.zeros`, `np.empty`): pforjac leaves the process's
allocator as it found it."""
from __future__ import annotations

import contextlib
import math
import os
import sys
import threading

import numpy as np

__all__ = ["available_memory", "set_memory_limit", "memory_limit", "working_memory",
           "chunk_for_memory", "check_results_fit", "JacobianMemoryError", "BufferPool",
           "pooled_zeros", "pooled_empty"]


class JacobianMemoryError(MemoryError):
    """The dense result of a Jacobian (or its working memory) is larger than the memory
    available."""


class _EntryPoint(threading.local):
    called = None     # (name, argument) of the entry point the user called, outermost


_entry = _EntryPoint()


@contextlib.contextmanager
def entry_point(name: str, argument: str | None):
    """Names the function the user called and its argument that bounds the rows computed at
    a time (None if it takes none), for the advice of any memory error raised below it:
    `pj.hessian` runs `GradientTape.jacobian`, but its user can only pass hessian's
    arguments. The outermost entry point wins."""
    if _entry.called is not None:
        yield
        return
    _entry.called = (name, argument)
    try:
        yield
    finally:
        _entry.called = None


def chunking_advice(argument: str | None, value: int | None) -> str:
    """How to compute fewer rows at a time, naming `argument` (the caller's; None when it
    takes none: then the functions that do)."""
    if argument is None:
        return ("compute fewer rows at a time with pj.jacobian(..., parallel_iterations=k) or "
                "GradientTape.jacobian(..., parallel_iterations=k)")
    fewer = f"{argument}=k" if value is None else f"a smaller {argument}"
    return f"pass {fewer} to compute fewer rows at a time"


@contextlib.contextmanager
def working_memory_advice(what: str, parallel_iterations: int | None = None,
                          argument: str | None = "parallel_iterations"):
    """Turns numpy's MemoryError while `what` computes its rows (all at once, or
    `parallel_iterations` at a time) into a JacobianMemoryError that says how to compute
    fewer at a time, through the argument the function the user called takes (`argument`,
    unless an outer `entry_point` names its own)."""
    try:
        yield
    except JacobianMemoryError:
        raise
    except MemoryError as e:
        if _entry.called is not None:
            what, argument = _entry.called[0], _entry.called[1]
        rows = "all rows at once" if parallel_iterations is None else \
            f"{parallel_iterations} rows at a time" + \
            (f" ({argument}={parallel_iterations})" if argument else "")
        raise JacobianMemoryError(
            f"{what}: the working memory for {rows} does not fit ({e}); "
            f"{chunking_advice(argument, parallel_iterations)}: the working memory falls "
            f"roughly in proportion (the result itself still has to fit)") from e


def available_memory() -> int:
    """Bytes of memory pforjac may use now: the least of the system's (MemAvailable on Linux,
    physical pages elsewhere), the container's (cgroup v2 `memory.max`, v1
    `memory.limit_in_bytes`, less what the group uses) and the budget set by
    `set_memory_limit` or the environment variable PFORJAC_MEMORY_LIMIT."""
    limits = [_system_memory(), _container_memory(), memory_limit()]
    return min(v for v in limits if v is not None)


def _system_memory() -> int:
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


_CGROUPS = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
             "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def _container_memory() -> int | None:
    """The container's limit less its use (cgroup v2, then v1), or None when unlimited."""
    for limit_file, usage_file in _CGROUPS:
        try:
            with open(limit_file) as f:
                text = f.read().strip()
            if text == "max" or int(text) >= 1 << 60:      # (v1 writes "no limit" as ~2**63)
                return None
            with open(usage_file) as f:
                return max(int(text) - int(f.read().strip()), 0)
        except (OSError, ValueError):
            continue
    return None


_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 1000 ** 2, "mb": 1000 ** 2,
          "mib": 1 << 20, "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1 << 30, "t": 1000 ** 4,
          "tb": 1000 ** 4, "tib": 1 << 40}
_limit = threading.local()      # .bytes: this thread's budget from set_memory_limit


def _parse_bytes(text: str, what: str) -> int:
    number = text.strip().rstrip("bBiI").rstrip()
    digits = len(number.rstrip("kKmMgGtT"))
    unit = text.strip()[digits:].strip().lower()
    try:
        value = float(number[:digits])
        scale = _UNITS[unit]
    except (ValueError, KeyError):
        raise ValueError(f"{what}: expected a number of bytes such as 4000000, 512MiB or 2G, "
                         f"got {text!r}") from None
    return int(value * scale)


def set_memory_limit(nbytes) -> int | None:
    """Sets the memory budget of this thread's Jacobians (bytes, or text such as "512MiB";
    None: no budget besides the machine's); returns the previous one. A vectorized pass
    whose working memory would exceed it runs in chunks. The environment variable
    PFORJAC_MEMORY_LIMIT sets the default budget of every thread."""
    previous = getattr(_limit, "bytes", None)
    _limit.bytes = None if nbytes is None else (
        _parse_bytes(nbytes, "set_memory_limit") if isinstance(nbytes, str) else int(nbytes))
    return previous


def memory_limit() -> int | None:
    """The budget set by `set_memory_limit`, else PFORJAC_MEMORY_LIMIT's, else None."""
    budget = getattr(_limit, "bytes", None)
    if budget is not None:
        return budget
    env = os.environ.get("PFORJAC_MEMORY_LIMIT")
    return _parse_bytes(env, "PFORJAC_MEMORY_LIMIT") if env else None


# -- the working memory of a vectorized pass, before it runs --------------------------------------
def working_memory(program, n: int) -> int:
    """An estimate of the peak bytes the vectorized pass of the loop body `program` over `n`
    iterations holds: the stacked values (those that depend on the loop index, n times their
    per-iteration size) alive at once, from the traced shapes alone. An upper bound: values
    pfor keeps compact (one-hot seeds, and what stays one-hot after them) count as dense, so
    a reverse-mode pass through a reduction can need far less (400 rows through a (400, 200)
    intermediate: 734 MiB estimated, 6 MiB measured); `chunk_size=` overrides it."""
    stacked = {id(program.inputs[0])}
    last = {}
    for k, eqn in enumerate(program.equations):
        for v in eqn.inputs:
            last[id(v)] = k
    kept = {id(v) for v in program.outputs}
    live = peak = 0
    sizes: dict[int, int] = {}
    for k, eqn in enumerate(program.equations):
        if any(id(v) in stacked for v in eqn.inputs):
            for v in eqn.outputs:
                stacked.add(id(v))
                sizes[id(v)] = n * math.prod(int(d) for d in v.shape) * v.dtype.itemsize
                live += sizes[id(v)]
        peak = max(peak, live)
        for v in eqn.inputs:
            if last.get(id(v)) == k and id(v) not in kept:
                live -= sizes.pop(id(v), 0)
    return peak


def chunk_for_memory(program, n: int, result_bytes: int) -> tuple[int | None, int, int]:
    """(rows per chunk, or None for all at once; the estimate; the memory available): the
    chunk that keeps the estimated working memory within what is left of the memory
    available once the results are allocated. A pass that could not hold 16 MiB even if
    every value it makes were alive at once is not estimated (nor memory read): the common
    small Jacobian pays a sum over its equations."""
    if n <= 1 or memory_limit() is None and n * sum(
            v.size * v.dtype.itemsize for eqn in program.equations for v in eqn.outputs) \
            <= 16 << 20:
        return None, 0, 0
    need = working_memory(program, n)
    avail = available_memory()
    room = avail - result_bytes
    if need <= room:
        return None, need, avail
    return max(1, min(n - 1, int(n * max(room, 0) // need))), need, avail


def format_bytes(n: float) -> str:
    """`n` bytes as text: "3.0 MiB"."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


_format_bytes = format_bytes     # (the name pforjac.dask.memory imports)


def check_results_fit(results, per_example: bool = False, what: str | None = None) -> None:
    """Raises before anything is computed when the dense results, together, can't fit
    (`per_example`: batch_jacobian's, which has no cross-example zeros to leave out; `what`:
    the results of a loop of that name, not a Jacobian's)."""
    sizes = [(tuple(shape), np.dtype(dtype), math.prod(int(d) for d in shape))
             for shape, dtype in results]
    nbytes = sum(size * dtype.itemsize for _, dtype, size in sizes)
    if nbytes <= 64 << 20 and memory_limit() is None:
        return
    avail = available_memory()
    if nbytes > avail:
        shape, dtype, size = max(sizes, key=lambda r: r[2] * r[1].itemsize)
        many = f" (the largest of {len(sizes)} results)" if len(sizes) > 1 else ""
        if what is not None:
            raise JacobianMemoryError(
                f"{what}: the stacked result of shape {shape}{many} ({size:,} {dtype.name} "
                f"entries) needs {format_bytes(nbytes)} in all, but only "
                f"{format_bytes(avail)} of memory is available, so nothing was computed. Run "
                f"fewer iterations per call (parallel_iterations bounds only the working "
                f"memory, not the result)")
        raise JacobianMemoryError(
            f"the Jacobian's dense result of shape {shape}{many} ({size:,} {dtype.name} entries) "
            f"needs {format_bytes(nbytes)} in all, but only {format_bytes(avail)} of memory is "
            f"available, so nothing was computed. " + ("Compute" if per_example else
            "If row i of the target depends only on row i of the source, use batch_jacobian (it "
            "never forms the cross-example zeros); otherwise compute") +
            " it for fewer targets or sources at a time (parallel_iterations bounds only "
            "the working memory, not the result)")


# -- opt-in reuse of large results -----------------------------------------------------------
class _Active(threading.local):
    def __init__(self):
        self.pools: list[BufferPool] = []


_active = _Active()


def _references(arrays: list, k: int) -> int:
    return sys.getrefcount(arrays[k])


# What `_references` counts for an array that only the pool's list holds. Reference counts
# say when nothing else holds an array (every view of it holds it as its base) only on
# CPython with its GIL; elsewhere a pool never reuses an array.
_ONLY_THE_POOL = _references([np.empty(0)], 0) if sys.implementation.name == "cpython" \
    and getattr(sys, "_is_gil_enabled", lambda: True)() else 0


class BufferPool:
    """Large arrays kept for reuse once nothing else holds them: an opt-in for a program
    that asks for the same large Jacobians over and over. Off unless entered; this thread.

    A fresh large array costs a page fault for every page it touches, on every call: the
    (64, 512, 512) float32 `batch_jacobian` of benchmarks/loop_vs_pfor.py took 3.4 ms of
    CPU a call here, 2.1 ms from a pool; the seed network's 125 MB full Jacobian 5.8 and
    3.5 ms, its while-loop 201 and 166 ms. Inside `with pool:` the results and large
    temporaries pforjac fills (its scatters, the while-loop's and the chunked loops'
    stacked results) of `min_bytes` or more are numpy arrays the pool keeps. When no
    result, view or buffer of one is alive any more, the next array of the same size
    reuses its memory (cleared first where zeros are asked for). The pool keeps up to
    `limit` bytes of arrays nothing else holds (oldest dropped first, whenever it hands
    one out and when a `with` block ends); `clear()` drops them, and so does dropping the
    pool. Idle arrays stay in memory: within a call whose large arrays come in several
    sizes they add to its peak. Only references count: a raw pointer to a result's
    memory (`.ctypes.data`) does not keep it from being reused. Reuse relies on CPython's
    reference counts; elsewhere the pool makes every array anew.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> pool = pj.memory.BufferPool(min_bytes=1 << 20)
        >>> x = pj.constant(np.linspace(0.0, 1.0, 512))
        >>> with pj.GradientTape(persistent=True) as g:
        ...     g.watch(x)
        ...     y = pj.sin(x)[1:]
        >>> with pool:
        ...     j = g.jacobian(y, x, experimental_use_pfor=False)   # (511, 512): 2 MiB
        >>> address = j.numpy().ctypes.data
        >>> del j                        # dropped: the next call reuses its memory
        >>> with pool:
        ...     j = g.jacobian(y, x, experimental_use_pfor=False)
        >>> j.numpy().ctypes.data == address, pool.clear()   # j still holds its array
        (True, 0)
    """

    def __init__(self, limit: int = 1 << 30, min_bytes: int = 4 << 20):
        for name, v in (("limit", limit), ("min_bytes", min_bytes)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"BufferPool: {name} is a number of bytes >= 0, got {v!r}")
        self.limit, self.min_bytes = int(limit), int(min_bytes)
        self._arrays: list[np.ndarray] = []      # flat uint8 arrays, oldest first
        self._lock = threading.Lock()

    def __enter__(self) -> "BufferPool":
        _active.pools.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _active.pools.pop()
        with self._lock:
            self._trim(self.limit)

    def zeros(self, shape, dtype) -> np.ndarray:
        """`np.zeros(shape, dtype)`, in an idle array of the pool if one has its size."""
        out = self._array(shape, dtype, zero=True)
        return np.zeros(shape, dtype) if out is None else out

    def empty(self, shape, dtype) -> np.ndarray:
        """`np.empty(shape, dtype)`, in an idle array of the pool if one has its size."""
        out = self._array(shape, dtype, zero=False)
        return np.empty(shape, dtype) if out is None else out

    def idle_bytes(self) -> int:
        """Bytes of the arrays only the pool holds."""
        with self._lock:
            return sum(a.nbytes for a in self._idle())

    def clear(self) -> int:
        """Drops the arrays only the pool holds; returns their bytes."""
        with self._lock:
            freed = sum(a.nbytes for a in self._idle())
            self._trim(0)
        return freed

    def _idle(self) -> list[np.ndarray]:
        return [self._arrays[k] for k in range(len(self._arrays))
                if _references(self._arrays, k) <= _ONLY_THE_POOL]

    def _array(self, shape, dtype, zero: bool) -> np.ndarray | None:
        """An array of the pool shaped `shape`, zeroed if `zero`; None when the array is
        not for the pool (small, of objects, over the limit, no reference counts)."""
        dtype, shape = np.dtype(dtype), tuple(int(d) for d in shape)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < max(self.min_bytes, 1) or nbytes > self.limit or dtype.hasobject \
                or not _ONLY_THE_POOL:
            return None
        with self._lock:
            flat = self._take(nbytes, zero)
        return flat.view(dtype).reshape(shape)    # a view: it holds `flat` as its base

    def _take(self, nbytes: int, zero: bool) -> np.ndarray:
        for k in range(len(self._arrays)):
            if self._arrays[k].nbytes == nbytes and _references(self._arrays, k) <= _ONLY_THE_POOL:
                self._arrays.append(self._arrays.pop(k))      # the newest now
                if zero:
                    self._arrays[-1].fill(0)
                return self._arrays[-1]
        self._trim(self.limit - nbytes)
        self._arrays.append(np.zeros(nbytes, np.uint8) if zero else np.empty(nbytes, np.uint8))
        return self._arrays[-1]

    def _trim(self, keep: int) -> None:
        """Drops the oldest idle arrays until at most `keep` bytes of them are left."""
        idle = self._idle()
        excess = sum(a.nbytes for a in idle) - keep
        drop = []
        for a in idle:
            if excess <= 0:
                break
            drop.append(id(a))
            excess -= a.nbytes
        if drop:
            self._arrays = [a for a in self._arrays if id(a) not in drop]


def pooled_zeros(shape, dtype) -> np.ndarray:
    """`np.zeros(shape, dtype)`, from the innermost entered `BufferPool` if there is one."""
    return _active.pools[-1].zeros(shape, dtype) if _active.pools else np.zeros(shape, dtype)


def pooled_empty(shape, dtype) -> np.ndarray:
    """`np.empty(shape, dtype)`, from the innermost entered `BufferPool` if there is one."""
    return _active.pools[-1].empty(shape, dtype) if _active.pools else np.empty(shape, dtype)
