"""Shared helpers for the benchmark scripts: timing, peak memory, machine info, tables."""
from __future__ import annotations

import ctypes
import datetime
import gc
import mmap
import os
import platform
import statistics
import time
import tracemalloc

import numpy as np

import _blas_env

RESULTS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")




def settle_threads(quiet: float = 0.1, slice_s: float = 0.01, limit: float = 1.0) -> float:
    """Wait until no thread of this process is busy (at most `limit` s); returns the wait.

    Thread pools spin after their work before they sleep: OpenBLAS's workers (numpy's, so
    pforjac's) for about 105 ms of CPU on this VM, torch's OpenMP pool for about 10 ms. A
    framework timed right after a numpy block ran with one of the two cores taken by that
    spin (JAX's jitted MLP Jacobian: 10.5 ms instead of 7). Waits in `slice_s` sleeps until
    one costs the process less than `quiet` of it in CPU time.
    """
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        cpu0, t0 = time.process_time(), time.perf_counter()
        time.sleep(slice_s)
        if time.process_time() - cpu0 < quiet * (time.perf_counter() - t0):
            break
    return time.perf_counter() - start


def time_reps(fn, reps: int, warmup: int = 1, min_time: float = 0.0,
              max_reps: int = 200) -> tuple[float, list[float]]:
    """Median wall time of `fn()` over at least `reps` runs (more, up to `max_reps`, until
    `min_time` seconds have been spent), after `warmup` untimed runs.

    The warm-up matters on VMs: the first touch of freshly mapped memory is
    much slower than later ones, and big Jacobians allocate hundreds of MiB.
    As `timeit` does, the cyclic garbage collector is off while the reps run (one
    collection before them): a collection before every rep walked the ~300k objects
    TensorFlow, PyTorch and JAX keep alive and evicted the CPU caches, so the rep after
    it ran cold (a 22 us call measured 290 us).
    """
    for _ in range(warmup):
        fn()
    times = []
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        while len(times) < reps or (sum(times) < min_time and len(times) < max_reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    finally:
        if was_enabled:
            gc.enable()
    return statistics.median(times), times


def time_in_rounds(fns: list, rounds: int, reps_per_round: int = 1, min_time: float = 0.0,
                   max_reps: int = 200) -> list[list[list[float]]]:
    """Times every function of `fns` in `rounds` interleaved rounds (each round: a block of
    each in turn, at least `reps_per_round` calls and `min_time` seconds) and returns each
    one's times, a list per round. The shared VM has slow and fast phases lasting seconds;
    interleaving puts every variant in each phase alike, so their ratios hold where one
    block each did not. Each block starts with an untimed call: what is timed is a repeated
    call, as in one block per variant (the other variants' large results in between must
    not turn it into a first call: 131 ms instead of 8 for the full seed jacobian). Each
    block waits for the previous block's thread pools to stop spinning (`settle_threads`):
    a block must not run on one core because the library before it still holds the other."""
    times: list[list[list[float]]] = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            settle_threads()
            _, t = time_reps(fn, reps_per_round, warmup=1, min_time=min_time, max_reps=max_reps)
            times[k].append(t)
    return times


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:,.3f}" if ms < 1 else f"{ms:,.2f}" if ms < 100 else f"{ms:,.0f}"


def mapped_bytes(out) -> int:
    """Bytes of the arrays in `out` that live in their own `mmap.mmap` mapping, which
    tracemalloc does not see; counted at full size. (pforjac's results no longer do: they
    are numpy's own arrays.)"""
    if isinstance(out, (list, tuple)):
        return sum(mapped_bytes(o) for o in out)
    if isinstance(out, dict):
        return sum(mapped_bytes(o) for o in out.values())
    arr = out.numpy() if hasattr(out, "numpy") else out
    base = arr
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return len(base) if isinstance(base, mmap.mmap) else 0


def peak_memory(fn) -> tuple[int, object]:
    """Peak bytes allocated while `fn()` runs, measured with tracemalloc.

    numpy reports its data buffers to tracemalloc, so this counts array data
    (including the returned result) plus Python objects, relative to the start
    of the call. A result in its own `mmap.mmap` mapping is added at its full size. It runs
    separately from the timed runs: tracing slows Python-level allocation down.
    """
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak + mapped_bytes(out), out


def cpu_model() -> str:
    """The CPU's name and, from /proc/cpuinfo, its family and model (a VM may name only the
    vendor: AMD EPYC family 25 is Zen 3/4, 26 Zen 5)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
                if not line.strip():
                    break
    except OSError:
        pass
    if "model name" not in fields:
        return platform.processor() or platform.machine()
    return f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')})"


def blas_core() -> str:
    """The kernel family numpy's OpenBLAS runs (it picks one by CPU, or OPENBLAS_CORETYPE): float32
    products differ between kernels in speed (2x on a Zen 5, see _blas_env.py) and rounding."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line.lower() and "/" in line}
    except OSError:
        return "unknown"
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                     "openblas_get_corename64_", "openblas_get_corename"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return "unknown"


def machine_header() -> str:
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    try:
        import subprocess
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no",
                                "pforjac"], capture_output=True, text=True, timeout=10).stdout.strip()
        rev = f"pforjac at {rev}" + (" + uncommitted engine edits" if dirty else "") + "; "
    except (OSError, subprocess.SubprocessError):
        rev = ""
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    return (f"date: {now}; {rev}machine: {cpu_model()}, {os.cpu_count()} cores; "
            f"Python {platform.python_version()}; numpy {np.__version__}; "
            f"OPENBLAS_NUM_THREADS={blas}; OpenBLAS kernel {blas_core()} ({_blas_env.describe()}); "
            f"load average at start {load}; glibc malloc as the process started")


def mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:,.1f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_result(name: str, text: str) -> str:
    os.makedirs(RESULTS_DIR, exist_ok=True)
    path = os.path.join(RESULTS_DIR, name)
    with open(path, "w") as f:
        f.write(text)
    return path
