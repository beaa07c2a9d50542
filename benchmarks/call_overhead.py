"""What a call costs around the work: `pforjac.function`'s call path on its own, two small
calls scipy's solvers make hundreds of times (Robertson's 3x3 Jacobian, the chained
Rosenbrock gradient at n=50) on both backends next to jitted JAX, and eager gradients of
small per-op programs next to autograd.

JAX and autograd run in the oracle interpreter (/work/oracle/bin/python), as a worker
process that times one block when asked: every round times each variant once, pforjac's
and the worker's in turn, so a load spike on this shared machine hits all of them alike.
Figures are medians over the rounds of the per-call mean of a block, in wall time and in
CPU time of the process (which a busy machine inflates less: a descheduled process does
not count it).

"Overhead" is the call minus the compiled code alone (the generated numpy function, or
numba's native function through its dispatcher), both timed in the same round.

Run: python benchmarks/call_overhead.py [--rounds 9] [--calls 2000]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine_header  # noqa: E402

import pforjac as pj  # noqa: E402

pnp = pj.numpy
ORACLE = "/work/oracle/bin/python"
EAGER_CALLS = 10          # an eager call is ~100x a compiled one: fewer per block

# -- the programs (the worker defines the same ones with jax.numpy / autograd.numpy) ----
PROGRAMS = textwrap.dedent("""
    def robertson(y):
        return np.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                         0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2])

    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    def chain(x):     # 20 small ops, then a sum
        for _ in range(5):
            x = np.sin(x) * 1.1 + x * x
        return np.sum(x)
""")
namespace = {"np": pnp}
exec(PROGRAMS, namespace)
robertson, rosen, chain = namespace["robertson"], namespace["rosen"], namespace["chain"]

INPUTS = {"y3": np.array([0.9, 2e-5, 0.1]), "x50": np.linspace(-1.0, 1.5, 50),
          "x4": np.linspace(0.1, 0.4, 4), "s": np.float64(0.3)}

WORKER = textwrap.dedent("""
    import gc, json, sys, time
    import numpy as onp
    import jax, jax.numpy as jnp
    import autograd, autograd.numpy as anp
    jax.config.update("jax_enable_x64", True)
    PROGRAMS = sys.argv[1]
    def programs(np):
        space = {"np": np}
        exec(PROGRAMS, space)
        return space
    J, A = programs(jnp), programs(anp)
    inputs = {"y3": onp.array([0.9, 2e-5, 0.1]), "x50": onp.linspace(-1.0, 1.5, 50),
              "x4": onp.linspace(0.1, 0.4, 4), "s": onp.float64(0.3)}
    jit_rob, jit_ros = jax.jit(jax.jacrev(J["robertson"])), jax.jit(jax.grad(J["rosen"]))
    g_chain, g_rosen = autograd.grad(A["chain"]), autograd.grad(A["rosen"])
    calls = {
        "robertson jacobian: jax.jit": lambda: onp.asarray(jit_rob(inputs["y3"])),
        "rosenbrock gradient n=50: jax.jit": lambda: onp.asarray(jit_ros(inputs["x50"])),
        "eager chain of 20, scalar: autograd": lambda: g_chain(inputs["s"]),
        "eager chain of 20, 4-vector: autograd": lambda: g_chain(inputs["x4"]),
        "eager rosenbrock gradient n=50: autograd": lambda: g_rosen(inputs["x50"]),
    }
    print(json.dumps(sorted(calls)), flush=True)
    for line in sys.stdin:
        name, n = line.rsplit(" ", 1)
        fn, n = calls[name], int(n)
        fn()
        gc.disable()
        t, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            fn()
        t, c = time.perf_counter() - t, time.process_time() - c
        gc.enable()
        print(t / n, c / n, flush=True)
""")


def block(fn, n: int) -> tuple[float, float]:
    """The mean (wall, CPU) time of `n` calls of `fn` (after one untimed call), the
    collector off."""
    fn()
    gc.disable()
    try:
        t, c = time.perf_counter(), time.process_time()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t) / n, (time.process_time() - c) / n
    finally:
        gc.enable()


class Oracle:
    """The worker process, or None-like when the oracle interpreter is not there."""

    def __init__(self):
        self.proc, self.names = None, []
        if os.path.exists(ORACLE):
            self.proc = subprocess.Popen([ORACLE, "-c", WORKER, PROGRAMS], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True)
            self.names = json.loads(self.proc.stdout.readline())

    def time(self, name: str, n: int) -> tuple[float, float]:
        self.proc.stdin.write(f"{name} {n}\n")
        self.proc.stdin.flush()
        wall, cpu = self.proc.stdout.readline().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()


def _only_trace(f):
    return next(iter(f._cache.values()))


def code_alone(f, args):
    """The compiled code of `f`'s trace for `args` called as its call path calls it (the
    numba backend's dispatcher with its constants, or the generated numpy function)."""
    f(*args)
    compiled = _only_trace(f)
    code = compiled.code
    if compiled.backend == "numba":
        consts = [compiled._consts[k] for k in code.passed]
        native = [np.asarray(a)[()] if np.ndim(a) == 0 else a for a in [*args, *consts]]
        return lambda: code.dispatcher(*native)
    consts = compiled._consts
    return lambda: code(*args, consts)


def call_variants() -> dict:
    """name -> (the call, the code alone or None, calls per block)."""
    x, y = INPUTS["x50"], INPUTS["y3"]
    trivial = {"1 array (identity)": (lambda a: a, (x,)),
               "2 arrays (a + b)": (lambda a, b: a + b, (x, x)),
               "3 arrays (a * b + c)": (lambda a, b, c: a * b + c, (x, x, x))}
    out = {}
    for backend in ("numpy", "numba"):
        for label, (fn, args) in trivial.items():
            f = pj.function(fn, backend=backend)
            out[f"call overhead, {label}: {backend} backend"] = \
                (lambda f=f, args=args: f(*args), code_alone(f, args), None)
        for label, fn, arg in [("robertson jacobian", pj.jacrev(robertson), y),
                               ("rosenbrock gradient n=50", pj.grad(rosen), x)]:
            f = pj.function(fn, backend=backend)
            out[f"{label}: {backend} backend"] = (lambda f=f, arg=arg: f(arg),
                                                  code_alone(f, (arg,)), None)
    for label, fn, arg in [("chain of 20, scalar", pj.grad(chain), INPUTS["s"]),
                           ("chain of 20, 4-vector", pj.grad(chain), INPUTS["x4"]),
                           ("rosenbrock gradient n=50", pj.grad(rosen), x)]:
        out[f"eager {label}: pforjac"] = (lambda fn=fn, arg=arg: fn(arg), None, EAGER_CALLS)
    return out


def measure(rounds: int, calls: int) -> dict:
    variants, oracle = call_variants(), Oracle()
    times: dict = {}
    try:
        for _ in range(rounds):
            for name, (call, alone, n) in variants.items():
                n = n or calls
                times.setdefault(name, []).append(block(call, n))
                if alone is not None:
                    times.setdefault(name + " [code alone]", []).append(block(alone, n))
            for name in oracle.names:
                n = EAGER_CALLS if name.startswith("eager") else calls
                times.setdefault(name, []).append(oracle.time(name, n))
    finally:
        oracle.close()
    return times


def report(times: dict) -> None:
    """One line per variant: wall | CPU medians (us), and for compiled calls the code alone
    and the overhead (the median over rounds of call minus code alone)."""
    print(f"  {'':<58} {'wall us':>9} {'cpu us':>9}   {'code alone':>10} {'overhead':>9} "
          f"(cpu)")
    for name in sorted(k for k in times if "[code alone]" not in k):
        wall, cpu = (statistics.median(t[j] for t in times[name]) for j in (0, 1))
        line = f"  {name:<58} {wall * 1e6:9.2f} {cpu * 1e6:9.2f}"
        alone = times.get(name + " [code alone]")
        if alone is not None:
            overhead = statistics.median(a[1] - b[1] for a, b in zip(times[name], alone))
            line += f"   {statistics.median(b[1] for b in alone) * 1e6:10.2f} " \
                    f"{overhead * 1e6:9.2f}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    print(f"# {machine_header()}")
    print(f"# medians of {args.rounds} interleaved rounds; blocks of {args.calls} calls "
          f"({EAGER_CALLS} for eager gradients); pforjac from {os.path.dirname(pj.__file__)}")
    report(measure(args.rounds, args.calls))


if __name__ == "__main__":
    main()
