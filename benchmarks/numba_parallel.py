"""The numba backend's parallel elementwise loops: one elementwise chain (cheap: a few
adds and products; costly: exp, sin, log1p, cos) at several sizes, run serially (code
traced with `pforjac.config.num_threads = 1`: no parallel loops) and in parallel on 1
and 2 threads, side by side. Medians of interleaved rounds. Also checks that the
parallel results equal the serial ones bit for bit.
Run: python benchmarks/numba_parallel.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time

import numba
import numpy as np

import pforjac as pj


def cheap(x, y):
    return (x * y + 2.0 * x) * y - x


def costly(x, y):
    return pj.exp(-x * x) * pj.sin(3.0 * x) + pj.log1p(x * y) / (1.0 + pj.cos(y) ** 2)


def variants(fn, n):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    saved, pj.config.num_threads = pj.config.num_threads, 1
    serial = pj.function(fn, backend="numba")
    want = serial(x, y)
    pj.config.num_threads = saved
    parallel = pj.function(fn, backend="numba")
    got = parallel(x, y)
    assert np.array_equal(got, want), "parallel and serial results differ"
    on = next(iter(parallel._cache.values())).code.parallel

    def threads(k):
        def run():
            pj.config.num_threads = k
            parallel(x, y)
        return run
    return on, {"serial": lambda: serial(x, y), "parallel, 1 thread": threads(1),
                "parallel, 2 threads": threads(2)}


def timed(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    pj.config.parallel_min_size = 1
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores "
          f"(shared, load {os.getloadavg()[0]:.1f}), numba {numba.__version__} "
          f"({numba.config.THREADING_LAYER} threading layer); medians of {args.rounds} rounds, us per call")
    for fn in (cheap, costly):
        for n in (10_000, 30_000, 100_000, 300_000, 1_000_000):
            on, vs = variants(fn, n)
            calls = max(3, 3_000_000 // n)
            times = {k: [] for k in vs}
            for _ in range(args.rounds):
                for k, v in vs.items():
                    v()
                    times[k].append(timed(v, calls))
            print(f"{fn.__name__:>7} n={n:>9,}: " + ", ".join(
                f"{k} {statistics.median(t) * 1e6:9.1f}" for k, t in times.items())
                + ("" if on else "  (no parallel loop)"))
    pj.config.num_threads = None


if __name__ == "__main__":
    main()
