"""Where a compiled call's time goes, on the numpy backend and on the numba backend.

    python benchmarks/where_time_goes.py --threads 1            # zoo workloads + the 2x2 example
    python benchmarks/where_time_goes.py --only ln_mlp,lorenz --rounds 9

For each workload (some of zoo.py's, and compare.py's 2x2 seed example), per call, medians
of interleaved rounds:

- numpy backend: the whole `pj.function` call; its generated code alone; inside that code,
  the time of its BLAS calls (matmul, einsum) and of every other numpy call, measured by
  running a copy of the generated source with a clock read around each line (a read costs
  about 0.1 us, so the parts of a small program are upper bounds);
- numba backend: the whole call; the native function alone (called with the arguments the
  runner passes it); the rest is the Python around it (signature lookup, argument and
  result handling, `Function.__call__`);
- JAX jit, when JAX is installed, for scale.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blas_env  # noqa: E402
_blas_env.use_openblas_own_kernel()
_blas_env.use_threads()
import numpy as np  # noqa: E402

from _common import machine_header, markdown_table, write_result  # noqa: E402
import zoo  # noqa: E402

import pforjac as pj  # noqa: E402
from pforjac.compiled.codegen import equation_at_line, namespace_of, program_to_source  # noqa: E402

BLAS = {"matmul", "einsum", "dot", "tensordot"}
DEFAULT = "ln_mlp,resmlp_gelu,lorenz96_batch,logsoftmax_head,reaction_net,gauss_nll_hessian,poly_features"


def traced(function, x):
    """The `_Compiled` entry `function` runs for x."""
    function(x)
    (compiled,) = function._cache.values()
    return compiled


def line_timer(compiled):
    """(fn(arrays) running the numpy code with a clock around each equation's line,
    per-line seconds, per-line primitive names)."""
    program = compiled.program
    lines = program_to_source(program, "timed").splitlines()
    prims, out = {}, []
    for k, line in enumerate(lines, 1):
        eqn = equation_at_line(program, k)
        if eqn is None or line.strip().startswith(("return", "def ")):
            out.append(line)
            continue
        prims[k] = eqn.prim.name
        indent = line[:len(line) - len(line.lstrip())]
        out.append(f"{indent}_t = _pc(); {line.strip()}; _acc[{k}] += _pc() - _t")
    acc = np.zeros(len(lines) + 1)
    ns = dict(namespace_of(program), _pc=time.perf_counter, _acc=acc)
    exec(compile("\n".join(out), "<timed>", "exec"), ns)
    consts = list(compiled._consts)
    for j, v in compiled._variables:
        consts[j] = v.numpy()
    return (lambda arrays: ns["timed"](*arrays, consts)), acc, prims


def native_alone(compiled, x):
    """A call of the numba dispatcher alone with the runner's arguments, or None."""
    run = compiled.code
    dispatcher, passed = getattr(run, "dispatcher", None), getattr(run, "passed", None)
    if dispatcher is None or passed is None:
        return None
    consts = list(compiled._consts)
    for j, v in compiled._variables:
        consts[j] = v.numpy()
    args = [x if x.ndim else x[()], *[consts[k] if np.ndim(consts[k]) else consts[k][()]
                                      for k in passed]]
    args = [np.ascontiguousarray(a) if isinstance(a, np.ndarray) else a for a in args]
    return lambda: dispatcher(*args)


def rounds_median(fns: dict, rounds: int, seconds: float) -> dict:
    """Median seconds a call of each, over interleaved rounds of >= `seconds` each."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            fn()
            t_end = time.perf_counter() + seconds
            while True:
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
                if t0 > t_end:
                    break
    return {name: statistics.median(t) for name, t in times.items()}


def split_numpy(timed, acc, prims, x, calls: int) -> dict:
    """Seconds a call in BLAS lines, other numpy lines (medians of `calls` runs)."""
    blas, other = [], []
    for _ in range(calls):
        acc[:] = 0
        timed([x])
        blas.append(sum(acc[k] for k, p in prims.items() if p in BLAS))
        other.append(sum(acc[k] for k, p in prims.items() if p not in BLAS))
    return {"blas": statistics.median(blas), "other": statistics.median(other),
            "n_blas": sum(p in BLAS for p in prims.values()),
            "n_other": sum(p not in BLAS for p in prims.values())}


def small_example():
    """compare.py's 2x2 seed example: batch_jacobian of x*x."""
    def run(x):
        x = pj.constant(x) if isinstance(x, np.ndarray) else x
        with pj.GradientTape() as g:
            g.watch(x)
            y = x * x
        return g.batch_jacobian(y, x)
    return "seed_2x2_batch_jacobian", run, np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), None


def workloads(names: list[str], jax):
    out = []
    for w in zoo.make_workloads(np.float32):
        if any(w.name.startswith(n) for n in names):
            jax_fn = zoo.jax_jacobian(w, jax) if jax is not None else None
            out.append((w.name, zoo.tape_jacobian(w, True), w.x, jax_fn))
    if any("seed_2x2".startswith(n) or n.startswith("seed") for n in names):
        name, run, x, _ = small_example()
        jax_fn = None
        if jax is not None:
            jit = jax.jit(jax.vmap(jax.jacrev(lambda v: v * v)))
            jax_fn = lambda v: jit(jax.numpy.asarray(v))  # noqa: E731
        out.append((name, run, x, jax_fn))
    return out


def measure(name, body, x, jax_fn, rounds: int) -> list[str]:
    numpy_f = pj.function(body, backend="numpy")
    numba_f = pj.function(body, backend="numba")
    c_np, c_nb = traced(numpy_f, x), traced(numba_f, x)
    timed, acc, prims = line_timer(c_np)
    fns = {"numpy call": lambda: numpy_f(x), "numpy code": lambda: c_np.run([x]),
           "numba call": lambda: numba_f(x)}
    native = native_alone(c_nb, x) if c_nb.backend == "numba" else None
    if native is not None:
        fns["native"] = native
    if jax_fn is not None:
        fns["JAX"] = lambda: jax_fn(x).block_until_ready()
    med = rounds_median(fns, rounds, 0.05)
    split = split_numpy(timed, acc, prims, x, 200)
    us = lambda s: f"{s * 1e6:,.1f}"  # noqa: E731
    lowered = "numba" if c_nb.backend == "numba" else "numpy fallback"
    row = [name, us(med["numpy call"]), us(med["numpy code"]),
           f"{us(split['blas'])} ({split['n_blas']} calls)",
           f"{us(split['other'])} ({split['n_other']} calls)",
           us(med["numpy call"] - med["numpy code"]),
           us(med["numba call"]) + ("" if lowered == "numba" else f" ({lowered})"),
           us(med["native"]) if "native" in med else "-",
           us(med["numba call"] - med["native"]) if "native" in med else "-",
           us(med["JAX"]) if "JAX" in med else "-"]
    print("  ".join(row), flush=True)
    return row


HEADER = ["workload", "numpy backend: call us", "its generated code us", "of which BLAS us",
          "other numpy calls us", "Python around the code us", "numba backend: call us",
          "native function us", "Python around it us", "JAX jit us"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=DEFAULT + ",seed_2x2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=None, help="see _blas_env.use_threads")
    p.add_argument("--no-write", action="store_true")
    p.add_argument(_blas_env.KEEP_FLAG, action="store_true")
    args = p.parse_args(argv)
    jax, jax_note = zoo.load_jax()
    header = machine_header()
    print(header, "\n", jax_note, "; ", _blas_env.describe_threads(), sep="")
    rows = [measure(*w, args.rounds) for w in workloads(args.only.split(","), jax)]
    table = markdown_table(HEADER, rows)
    print("\n" + table)
    if not args.no_write:
        text = (f"# Where a compiled call's time goes, per backend\n\n`python benchmarks/"
                f"where_time_goes.py{f' --threads {args.threads}' if args.threads else ''}`\n\n"
                f"{header}\n\n{jax_note}; {_blas_env.describe_threads()}\n\n{__doc__.split(chr(10) * 2, 2)[2]}\n"
                f"{table}\n")
        print("wrote", write_result("where_time_goes.md", text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
