"""pforjac.function on the numpy backend vs the numba backend vs hand-written numba (and
jitted JAX, run by the oracle interpreter when it is there), per call, on two small calls
scipy's solvers make hundreds of times: Robertson's 3x3 Jacobian and the gradient of the
chained Rosenbrock function (n=50). Medians of interleaved rounds (each round times every
variant once, so a load spike on this shared machine hits all of them alike).

Also: where a numba-backed call's time goes (the lean call against the general path, which
its first call takes, and against the native function through numba's dispatcher and
through its compiled entry point, which the lean path calls), and first compile vs cached
load in fresh processes. Run: python benchmarks/numba_backend.py [--rounds 7] [--calls 2000]
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numba
import numpy as np

import pforjac as pj

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORACLE = "/work/oracle/bin/python"


def robertson(y):
    return pj.numpy.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                           0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                           3e7 * y[1] ** 2])


def rosen(x):
    return pj.numpy.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@numba.njit(cache=True)
def robertson_jac_by_hand(y):
    out = np.zeros((3, 3))
    out[0, 0], out[0, 1], out[0, 2] = -0.04, 1e4 * y[2], 1e4 * y[1]
    out[1, 0], out[1, 1], out[1, 2] = 0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]
    out[2, 1] = 6e7 * y[1]
    return out


@numba.njit(cache=True)
def rosen_der_by_hand(x):
    g = np.zeros_like(x)
    d = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * d - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * d
    return g


WORKLOADS = {
    "robertson_jacobian": (pj.jacrev(robertson), robertson_jac_by_hand, np.array([0.9, 2e-5, 0.1])),
    "rosenbrock_gradient_n50": (pj.grad(rosen), rosen_der_by_hand, np.linspace(-1.0, 1.5, 50)),
}

JAX_TIMING = textwrap.dedent("""
    import json, sys, time, statistics
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    def robertson(y):
        return jnp.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                          0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2])
    def rosen(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    rounds, calls = int(sys.argv[1]), int(sys.argv[2])
    out = {}
    for name, f, x in [("robertson_jacobian", jax.jit(jax.jacrev(robertson)), np.array([0.9, 2e-5, 0.1])),
                       ("rosenbrock_gradient_n50", jax.jit(jax.grad(rosen)), np.linspace(-1.0, 1.5, 50))]:
        np.asarray(f(x))
        per = []
        for _ in range(rounds):
            t = time.perf_counter()
            for _ in range(calls):
                np.asarray(f(x))
            per.append((time.perf_counter() - t) / calls)
        out[name] = statistics.median(per)
    print(json.dumps(out))
""")

COLD_START = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    import numpy as np, pforjac as pj
    t1 = time.perf_counter()
    assert "numba" not in sys.modules
    def rosen(x):
        return pj.numpy.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    x = np.linspace(-1.0, 1.5, 50)
    t2 = time.perf_counter()
    pj.function(pj.grad(rosen), backend="numpy")(x)    # the trace alone (and numpy codegen)
    t3 = time.perf_counter()
    f = pj.function(pj.grad(rosen), backend="numba")   # numba starts here
    t4 = time.perf_counter()
    f(x)
    t5 = time.perf_counter()
    f(np.linspace(-1.0, 1.5, 60))                      # a second program, in a warm process
    t6 = time.perf_counter()
    compiled = next(iter(f._cache.values()))
    stats = compiled.code.dispatcher.stats
    print(f"{t1 - t0:.3f} {t3 - t2:.3f} {t4 - t3:.3f} {t5 - t4:.3f} {t6 - t5:.3f} "
          f"{sum(stats.cache_hits.values())} {compiled.backend}")
""")


def per_call(fn, calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def variants(name):
    f, by_hand, x = WORKLOADS[name]
    on_numpy, on_numba = pj.function(f, backend="numpy"), pj.function(f, backend="numba")
    want = on_numpy(x)
    np.testing.assert_allclose(on_numba(x), want, rtol=1e-13, atol=1e-13 * np.abs(want).max())
    np.testing.assert_allclose(by_hand(x), want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    compiled = next(iter(on_numba._cache.values()))
    assert compiled.backend == "numba"
    runner, consts = compiled.code, list(compiled._consts)
    native = runner.dispatcher
    native_args = [np.asarray(a)[()] if np.ndim(a) == 0 else np.ascontiguousarray(a)
                   for a in [x, *[consts[k] for k in runner.passed]]]
    entry_point = native.overloads[native.signatures[0]].entry_point
    fast = on_numba.specialize(x, writable=True)
    return {
        "pj.function numpy backend": lambda: on_numpy(x),
        "pj.function numba backend": lambda: on_numba(x),
        "  .specialize(x, writable=True)": lambda: fast(x),
        "  the general path (first call's way)": lambda: on_numba._general_call((x,), {}),
        "  native function, numba's dispatcher": lambda: native(*native_args),
        "  native function, its entry point": lambda: entry_point(*native_args),
        "hand-written numba": lambda: by_hand(x),
    }


def interleaved(rounds: int, calls: int) -> dict:
    table = {name: variants(name) for name in WORKLOADS}
    times = {name: {v: [] for v in vs} for name, vs in table.items()}
    for _ in range(rounds):
        for name, vs in table.items():
            for v, fn in vs.items():
                fn()
                times[name][v].append(per_call(fn, calls))
    return {name: {v: statistics.median(ts) for v, ts in vs.items()} for name, vs in times.items()}


def jax_times(rounds: int, calls: int) -> dict | None:
    if not os.path.exists(ORACLE):
        return None
    import json
    run = subprocess.run([ORACLE, "-c", JAX_TIMING, str(rounds), str(calls)], capture_output=True,
                         text=True)
    return json.loads(run.stdout) if run.returncode == 0 else None


def cold_starts() -> list[str]:
    """Two fresh processes on one fresh cache directory: the first compiles, the second loads."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PFORJAC_CACHE_DIR=cache, PYTHONPATH=ROOT)
        return [subprocess.run([sys.executable, "-c", COLD_START], env=env, capture_output=True,
                               text=True, check=True).stdout.split() for _ in range(2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    print(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores (shared, load {os.getloadavg()[0]:.1f}), numba {numba.__version__}, "
          f"numpy {np.__version__}; medians of {args.rounds} interleaved rounds of {args.calls} calls")
    results = interleaved(args.rounds, args.calls)
    jax = jax_times(args.rounds, args.calls)
    for name, vs in results.items():
        print(f"\n{name}")
        for v, t in vs.items():
            print(f"  {v:<36} {t * 1e6:8.2f} us")
        if jax is not None:
            print(f"  {'jax.jit (oracle interpreter)':<36} {jax[name] * 1e6:8.2f} us")
    print("\nrosenbrock_gradient_n50 in fresh processes (one fresh cache directory):")
    for label, (imports, numpy_first, start, numba_first, second, hits, backend) in zip(
            ("compile", "cached load"), cold_starts()):
        print(f"  {label:<12} import pforjac {float(imports):.2f} s; numpy backend's first call "
              f"(trace) {float(numpy_first):.3f} s; numba's start at pj.function(backend='numba') "
              f"{float(start):.2f} s; first call (trace + {label}) {float(numba_first):.3f} s; "
              f"a second program (n=60) {float(second):.3f} s; numba cache hits {hits}, "
              f"backend {backend}")


if __name__ == "__main__":
    main()
