"""Loops of the numba backend's float32 kernels (numba_vecmath.py) against numpy's float32
ufuncs, numba's own `np.<name>` of a float32 (one C library call per value), the float64
kernels of sigmoid and softplus (numba_special.py, C library), and jitted JAX
(dispatch included; a jitted add of the same array for scale): one thread, one pinned
core, interleaved rounds, medians of wall and CPU time.

    python benchmarks/vecmath_speed.py [--n 131072] [--rounds 15] [--old path/to/numba_vecmath.py]

`--old` loads another version of the kernels module (an earlier commit's, saved as a file)
and times its kernels too.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numba  # noqa: E402
import numpy as np  # noqa: E402

import pforjac as pj  # noqa: E402
from pforjac.compiled import numba_kernels as K  # noqa: E402
from pforjac.compiled.numba_vecmath import FLOAT32_KERNELS  # noqa: E402

NUMPY = dict(exp=np.exp, tanh=np.tanh, log=np.log,
             sigmoid=pj.function(pj.sigmoid, backend="numpy"),
             softplus=pj.function(pj.softplus, backend="numpy"))


def loop_of(kernel):
    @numba.njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = kernel(x[i])
    return loop


def libm_loops():
    @numba.njit
    def exp(x, out):
        for i in range(x.size):
            out[i] = np.exp(x[i])

    @numba.njit
    def tanh(x, out):
        for i in range(x.size):
            out[i] = np.tanh(x[i])

    @numba.njit
    def log(x, out):
        for i in range(x.size):
            out[i] = np.log(x[i])
    return dict(exp=exp, tanh=tanh, log=log)


def jax_functions():
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    fs = dict(exp=jnp.exp, tanh=jnp.tanh, log=jnp.log, sigmoid=jax.nn.sigmoid,
              softplus=jax.nn.softplus, add=lambda x: x + x)
    return {name: jax.jit(f) for name, f in fs.items()}


def load_old(path):
    spec = importlib.util.spec_from_file_location("pforjac.compiled._old_vecmath", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def cases(x, xpos, old):
    found, libm, jaxf = {}, libm_loops(), jax_functions()
    for name in FLOAT32_KERNELS:
        arg = xpos if name == "log" else x
        ufunc = isinstance(NUMPY[name], np.ufunc)
        row = {"numpy": lambda o, f=NUMPY[name], a=arg, u=ufunc: f(a, out=o) if u else f(a),
               "kernel": lambda o, L=loop_of(getattr(K, f"{name}_f32")), a=arg: L(a, o)}
        if old is not None and hasattr(old, f"{name}_f32"):
            row["old kernel"] = lambda o, L=loop_of(getattr(old, f"{name}_f32")), a=arg: L(a, o)
        if name in libm:
            row["numba np." + name] = lambda o, L=libm[name], a=arg: L(a, o)
        if name in ("sigmoid", "softplus"):        # (the float64 kernel, through the C library)
            row["K." + name] = lambda o, L=loop_of(getattr(K, name)), a=arg: L(a, o)
        if name in jaxf:
            import jax
            row["jax jit"] = lambda o, f=jaxf[name], a=jax.device_put(arg): f(a).block_until_ready()
        found[name] = row
    if "add" in jaxf:
        import jax
        found["add"] = {"jax jit": lambda o, f=jaxf["add"], a=jax.device_put(x): f(a).block_until_ready(),
                        "numpy": lambda o: np.add(x, x, out=o)}
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=131072)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--cpu", type=int, default=None, help="core to pin to (default: the last)")
    parser.add_argument("--old", default=None)
    args = parser.parse_args(argv)
    os.sched_setaffinity(0, {args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))})
    rng = np.random.default_rng(0)
    x = (3 * rng.normal(size=args.n)).astype(np.float32)
    xpos = np.abs(x) + np.float32(1e-3)
    table = cases(x, xpos, load_old(args.old) if args.old else None)
    out = np.empty_like(x)
    for row in table.values():
        for f in row.values():
            f(out)
    times = {}
    for _ in range(args.rounds):
        for name, row in table.items():
            for label, f in row.items():
                w, c = time.perf_counter(), time.process_time()
                for _ in range(args.repeat):
                    f(out)
                times.setdefault((name, label), []).append(
                    ((time.perf_counter() - w) / args.repeat, (time.process_time() - c) / args.repeat))
    print(f"{args.n} float32 values, one thread, medians of {args.rounds} interleaved rounds, "
          f"microseconds wall / CPU; load {os.getloadavg()[0]:.2f} at the end; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    for name, row in table.items():
        cells = [f"{label} {1e6 * np.median([t[0] for t in times[(name, label)]]):.0f}/"
                 f"{1e6 * np.median([t[1] for t in times[(name, label)]]):.0f}" for label in row]
        print(f"  {name:9s} " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
