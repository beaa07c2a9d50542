"""What a call costs around the work: `pforjac.function`'s call path on its own, two small
calls scipy's solvers make hundreds of times (Robertson's 3x3 Jacobian, the chained
Rosenbrock gradient at n=50) on both backends next to jitted JAX (and through
`Function.specialize`, as the scipy helpers call them), compare.py's 2x2 seed examples,
a per-example gradient of a small MLP taking a dict of parameters, and eager gradients of
small per-op programs next to autograd.

JAX and autograd run in the oracle interpreter (/work/oracle/bin/python), as a worker
process that times one block when asked: every round times each variant once, pforjac's
and the worker's in turn, so a load spike on this shared machine hits all of them alike.
Figures are medians over the rounds of the per-call mean of a block, in wall time and in
CPU time of the process (which a busy machine inflates less: a descheduled process does
not count it).

"Overhead" is the call minus the compiled code alone (the generated numpy function, or
numba's compiled entry point, which the lean path calls), both timed in the same round.

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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _common import machine_header  # noqa: E402
import _per_example_workloads as W  # noqa: E402

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

    def square(x):    # compare.py's seed examples, on a (2, 2) float32 x
        return x * x

    def cube(x):
        return x * x * x
""")
namespace = {"np": pnp}
exec(PROGRAMS, namespace)
robertson, rosen, chain = namespace["robertson"], namespace["rosen"], namespace["chain"]
square, cube = namespace["square"], namespace["cube"]

INPUTS = {"y3": np.array([0.9, 2e-5, 0.1]), "x50": np.linspace(-1.0, 1.5, 50),
          "x4": np.linspace(0.1, 0.4, 4), "s": np.float64(0.3),
          "x22": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)}

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
              "x4": onp.linspace(0.1, 0.4, 4), "s": onp.float64(0.3),
              "x22": onp.array([[1.0, 2.0], [3.0, 4.0]], onp.float32)}
    jit_rob, jit_ros = jax.jit(jax.jacrev(J["robertson"])), jax.jit(jax.grad(J["rosen"]))
    row = lambda xi: J["square"](xi[None])[0]
    jit_sq = jax.jit(jax.vmap(jax.jacfwd(row)))
    jit_cube = jax.jit(jax.jacrev(J["cube"]))
    sys.path.insert(0, sys.argv[2])
    import _per_example_workloads as W
    params, X, Y = W.make("small", "float64")
    jit_mlp = jax.jit(jax.vmap(jax.grad(W.make_loss(jnp)), in_axes=(None, 0, 0)))
    as_numpy = lambda tree: jax.tree_util.tree_map(onp.asarray, tree)
    g_chain, g_rosen = autograd.grad(A["chain"]), autograd.grad(A["rosen"])
    calls = {
        "robertson jacobian: jax.jit": lambda: onp.asarray(jit_rob(inputs["y3"])),
        "rosenbrock gradient n=50: jax.jit": lambda: onp.asarray(jit_ros(inputs["x50"])),
        "seed small_batch_jacobian (2x2 f32): jax.jit": lambda: onp.asarray(jit_sq(inputs["x22"])),
        "seed small_jacobian (2x2 f32): jax.jit": lambda: onp.asarray(jit_cube(inputs["x22"])),
        "per-example grad, MLP small f64, dict: jax.jit":
            lambda: as_numpy(jit_mlp(params, X, Y)),
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
            self.proc = subprocess.Popen([ORACLE, "-c", WORKER, PROGRAMS, HERE],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
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
    """The compiled code of `f`'s trace for `args` called as its lean path calls it (numba's
    compiled entry point with its constants, or the generated numpy function)."""
    from pforjac.compiled.lean_call import _code
    f(*args)
    code, tail, _ = _code(_only_trace(f))
    arrays = [a for a in pj.tree_util.tree_leaves(args) if isinstance(a, np.ndarray)]
    return lambda: code(*arrays, *tail)


def _seed(fwd, batch: bool):
    """compare.py's seed example: a (batch_)jacobian of fwd(x) under a GradientTape."""
    def jac(x):
        x = pj.constant(x)
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = fwd(x)
        return tape.batch_jacobian(y, x) if batch else tape.jacobian(y, x)
    return jac


def call_variants() -> dict:
    """name -> (the call, the code alone or None, calls per block)."""
    x, y, x22 = INPUTS["x50"], INPUTS["y3"], INPUTS["x22"]
    params, X, Y = W.make("small", "float64")
    trivial = {"1 array (identity)": (lambda a: a, (x,)),
               "2 arrays (a + b)": (lambda a, b: a + b, (x, x)),
               "3 arrays (a * b + c)": (lambda a, b, c: a * b + c, (x, x, x))}
    programs = [("robertson jacobian", pj.jacrev(robertson), (y,)),
                ("rosenbrock gradient n=50", pj.grad(rosen), (x,)),
                ("seed small_batch_jacobian (2x2 f32)", _seed(square, True), (x22,)),
                ("seed small_jacobian (2x2 f32)", _seed(cube, False), (x22,)),
                ("per-example grad, MLP small f64, dict",
                 pj.vmap(pj.grad(W.make_loss(pnp)), in_axes=(None, 0, 0)), (params, X, Y))]
    out = {}
    for backend in ("numpy", "numba"):
        for label, (fn, args) in trivial.items():
            f = pj.function(fn, backend=backend)
            out[f"call overhead, {label}: {backend} backend"] = \
                (lambda f=f, args=args: f(*args), code_alone(f, args), None)
        for label, fn, args in programs:
            f = pj.function(fn, backend=backend)
            n = 200 if "MLP" in label else None
            out[f"{label}: {backend} backend"] = (lambda f=f, args=args: f(*args),
                                                  code_alone(f, args), n)
            if "MLP" not in label:
                fast = f.specialize(*args, writable=True)
                out[f"{label}: {backend}, specialize(writable=True)"] = \
                    (lambda fast=fast, args=args: fast(*args), code_alone(f, args), n)
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
                n = EAGER_CALLS if name.startswith("eager") else 200 if "MLP" in name else calls
                times.setdefault(name, []).append(oracle.time(name, n))
    finally:
        oracle.close()
    return times


def report(times: dict) -> None:
    """One line per variant: wall | CPU medians (us), and for compiled calls the code alone
    and the overhead (the median over rounds of call minus code alone)."""
    print(f"  {'':<70} {'wall us':>9} {'cpu us':>9}   {'code alone':>10} {'overhead':>9} "
          f"(cpu)")
    for name in sorted(k for k in times if "[code alone]" not in k):
        wall, cpu = (statistics.median(t[j] for t in times[name]) for j in (0, 1))
        line = f"  {name:<70} {wall * 1e6:9.2f} {cpu * 1e6:9.2f}"
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
