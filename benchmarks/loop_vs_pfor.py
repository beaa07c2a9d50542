"""While-loop vs pfor Jacobians, side by side in one run.

For each workload the same persistent tape is asked for the same Jacobian twice:
with `experimental_use_pfor=False` (the traced body bound once per row, a
while-loop) and with pfor (the body vectorized over all rows). The forward pass
is recorded once, outside the timing; what is timed is the `jacobian` /
`batch_jacobian` call (tracing the body, running it, reshaping the result).

    python benchmarks/loop_vs_pfor.py --quick        # the README demo, < ~60 s
    python benchmarks/loop_vs_pfor.py                # full sizes, writes results/loop_vs_pfor.md
    python benchmarks/loop_vs_pfor.py --only hessian --reps 9

Peak memory is measured with tracemalloc (numpy reports its array buffers to
it) in a separate, untimed run of each mode, relative to the start of the call,
so it includes the returned Jacobian.

OpenBLAS runs on one thread unless OPENBLAS_NUM_THREADS says otherwise: on a small
shared machine a 2-thread gemm that waits for a busy core takes scheduler ticks
(multiples of ~4 ms), which swamped both columns of the quick demo when anything
else ran (see benchmarks/README.md). The header records the setting.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")     # before numpy loads OpenBLAS
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine_header, markdown_table, mib, peak_memory, time_reps, write_result  # noqa: E402

import pforjac as pj  # noqa: E402

F32 = np.float32


@dataclass
class Case:
    name: str
    description: str
    shape: tuple
    run: Callable[[bool], object]   # run(use_pfor) -> Jacobian
    max_reps: int | None = None       # cap for slow cases (the while-loop of the full seed jacobian)


def _normal(rng, shape, scale=1.0):
    # Python-float scale: a numpy float64 scalar would silently promote float32 to float64.
    return (rng.standard_normal(shape).astype(F32) * float(scale)).astype(F32)


# -- workloads ------------------------------------------------------------------------------
def seed_network(batch: int, rng):
    """The seed question's network: 784 -> 256 sigmoid -> 128 sigmoid -> 1."""
    x = pj.constant(_normal(rng, (batch, 784)))
    w1, b1 = pj.Variable(_normal(rng, (784, 256), 784 ** -0.5)), pj.Variable(_normal(rng, (256,)))
    w2, b2 = pj.Variable(_normal(rng, (256, 128), 256 ** -0.5)), pj.Variable(_normal(rng, (128,)))
    w3, b3 = pj.Variable(_normal(rng, (128, 1), 128 ** -0.5)), pj.Variable(_normal(rng, (1,)))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h1 = pj.sigmoid(pj.matmul(x, w1) + b1)
        h2 = pj.sigmoid(pj.matmul(h1, w2) + b2)
        y = pj.matmul(h2, w3) + b3
    return tape, y, x


def case_seed_jacobian(size, rng) -> Case:
    tape, y, x = seed_network(size["seed_batch"], rng)
    b = size["seed_batch"]
    return Case("seed_jacobian", f"seed net full jacobian, x ({b},784)", (b, 1, b, 784),
                lambda up: tape.jacobian(y, x, experimental_use_pfor=up), max_reps=size["slow_reps"])


def case_seed_batch_jacobian(size, rng) -> Case:
    tape, y, x = seed_network(size["seed_batch"], rng)
    b = size["seed_batch"]
    return Case("seed_batch_jacobian", f"seed net batch_jacobian, x ({b},784)", (b, 1, 784),
                lambda up: tape.batch_jacobian(y, x, experimental_use_pfor=up))


def case_mlp(size, rng) -> Case:
    b = size["mlp_batch"]
    x = pj.constant(_normal(rng, (b, 784)))
    ws = [(pj.Variable(_normal(rng, (i, o), i ** -0.5)), pj.Variable(np.zeros(o, F32)))
          for i, o in [(784, 256), (256, 128), (128, 10)]]
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        h = x
        for k, (w, bias) in enumerate(ws):
            h = pj.matmul(h, w) + bias
            if k < len(ws) - 1:
                h = pj.tanh(h)
    return Case("mlp_batch_jacobian", f"tanh MLP 784-256-128-10 batch_jacobian, batch {b}",
                (b, 10, 784), lambda up: tape.batch_jacobian(h, x, experimental_use_pfor=up))


def case_elementwise(size, rng) -> Case:
    shape = size["elementwise"]
    x = pj.constant(_normal(rng, shape, 0.5))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.sin(x) * pj.exp(x) + x ** 2
    return Case("elementwise", f"sin(x)*exp(x)+x**2 batch_jacobian, x {shape}",
                (shape[0], shape[1], shape[1]),
                lambda up: tape.batch_jacobian(y, x, experimental_use_pfor=up))


def case_hessian(size, rng) -> Case:
    m, n = size["hessian"]
    a = pj.constant(_normal(rng, (m, n), n ** -0.5))
    x = pj.constant(_normal(rng, (n,)))
    with pj.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with pj.GradientTape() as inner:
            inner.watch(x)
            f = pj.sum(pj.softplus(pj.matmul(a, x)))
        g = inner.gradient(f, x)
    return Case("hessian", f"Hessian of sum(softplus(A@x)), A ({m},{n}): jacobian of gradient",
                (n, n), lambda up: outer.jacobian(g, x, experimental_use_pfor=up))


def case_exp_reducer(size, rng) -> Case:
    shape = size["exp_reducer"]
    x = pj.constant(rng.random(shape, dtype=F32))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x.exp().sum(axis=1)
    return Case("exp_reducer", f"exp_reducer x.exp().sum(axis=1) full jacobian, x {shape}",
                (shape[0],) + tuple(shape), lambda up: tape.jacobian(y, x, experimental_use_pfor=up))


CASES = [case_seed_jacobian, case_seed_batch_jacobian, case_mlp, case_elementwise, case_hessian,
         case_exp_reducer]
NAMES = ["seed_jacobian", "seed_batch_jacobian", "mlp_batch_jacobian", "elementwise", "hessian",
         "exp_reducer"]

SIZES = {
    "full": dict(seed_batch=500, mlp_batch=256, elementwise=(64, 512), hessian=(100, 200),
                 exp_reducer=(128, 64), reps=7, slow_reps=3),
    "quick": dict(seed_batch=200, mlp_batch=256, elementwise=(64, 512), hessian=(100, 200),
                  exp_reducer=(128, 64), reps=3, slow_reps=3),
}


# -- driver -----------------------------------------------------------------------------------
def measure(case: Case, reps: int) -> dict:
    reps = min(reps, case.max_reps) if case.max_reps else reps
    res = {"case": case}
    outs = {}
    for mode, up in (("loop", False), ("pfor", True)):
        med, times = time_reps(lambda: case.run(up), reps, min_time=0 if case.max_reps else 0.5)
        peak, out = peak_memory(lambda: case.run(up))
        outs[mode] = np.asarray(out.numpy())
        res[mode] = med
        res[mode + "_times"] = times
        res[mode + "_peak"] = peak
        if tuple(outs[mode].shape) != case.shape:
            raise AssertionError(f"{case.name}: {mode} result has shape {outs[mode].shape}, "
                                 f"expected {case.shape}")
    res["diff"] = float(np.max(np.abs(outs["loop"].astype(np.float64) - outs["pfor"])))
    res["scale"] = float(np.max(np.abs(outs["loop"])))
    return res


_COLUMNS = [("workload", 20), ("result", 16), ("loop ms", 9), ("pfor ms", 8), ("speedup", 8),
            ("max |loop-pfor|", 15)]


def _line(cells) -> str:
    """One row of the printed table: the first two columns left-aligned, the rest right."""
    return "  ".join(str(c).ljust(w) if k < 2 else str(c).rjust(w)
                     for k, (c, (_, w)) in enumerate(zip(cells, _COLUMNS)))


def _printed_row(case: Case, r: dict) -> list:
    return [case.name, "x".join(map(str, case.shape)), f"{r['loop'] * 1e3:.2f}",
            f"{r['pfor'] * 1e3:.2f}", f"{r['loop'] / r['pfor']:.1f}x", f"{r['diff']:.2g}"]


def _markdown_row(case: Case, r: dict) -> list:
    return [case.name, case.description, "x".join(map(str, case.shape)),
            f"{len(r['loop_times'])}/{len(r['pfor_times'])}", f"{r['loop'] * 1e3:.1f}",
            f"{r['pfor'] * 1e3:.1f}", f"{r['loop'] / r['pfor']:.1f}x", mib(r["loop_peak"]),
            mib(r["pfor_peak"]), f"{r['diff']:.2g}"]


def _parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="seed batch 200 instead of 500, 3+ reps (the README demo)")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions per mode (median)")
    p.add_argument("--only", default=None,
                   help="comma-separated workload names or prefixes: " + ", ".join(NAMES))
    p.add_argument("--no-write", action="store_true", help="don't write results/loop_vs_pfor.md")
    p.add_argument("--write", action="store_true",
                   help="write results/loop_vs_pfor_<mode>[_only].md for a --quick or --only run "
                        "(those only print by default: the README demo leaves the checkout clean)")
    args = p.parse_args(argv)
    selected = list(zip(NAMES, CASES))
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        selected = [(n, c) for n, c in selected if any(n.startswith(w) for w in wanted)]
        if not selected:
            p.error(f"--only {args.only!r} matches none of {NAMES}")
    return args, selected


def _write(args, mode: str, header: str, rows: list) -> None:
    """The full table (descriptions, repetitions, peak memory) as results/loop_vs_pfor*.md."""
    table = markdown_table(
        ["workload", "what", "result shape", "reps loop/pfor", "while-loop ms", "pfor ms", "speedup",
         "loop peak MiB", "pfor peak MiB", "max abs diff"], rows)
    cmd = "python benchmarks/loop_vs_pfor.py" + (" --quick" if args.quick else "") + \
          (f" --reps {args.reps}" if args.reps else "") + (f" --only {args.only}" if args.only else "")
    text = (f"# While-loop vs pfor Jacobians ({mode} mode)\n\n`{cmd}`\n\n{header}\n\n"
            f"Times are medians of the listed repetitions (after one warm-up call; fast cases repeat "
            f"until 0.5 s per mode) of the "
            f"`jacobian`/`batch_jacobian` call alone; the forward pass is recorded once. "
            f"Peak memory: tracemalloc peak over one separate call, including the result.\n\n"
            f"{table}\n")
    name = "loop_vs_pfor.md" if mode == "full" and not args.only else f"loop_vs_pfor_{mode}.md"
    if args.only:
        name = f"loop_vs_pfor_{mode}_only.md"
    print("wrote", write_result(name, text))


def main(argv=None) -> int:
    args, selected = _parse(argv)
    mode = "quick" if args.quick else "full"
    size = dict(SIZES[mode])
    reps = args.reps or size["reps"]
    if args.reps:
        size["slow_reps"] = min(args.reps, size["slow_reps"])
    header = machine_header()
    print(f"pforjac loop_vs_pfor, {mode} mode: the same jacobian/batch_jacobian call as a "
          f"while-loop and with pfor,\nmedian of >= {reps} reps after a warm-up "
          f"({size['slow_reps']} for the full seed jacobian)\n{header}\n")
    print(_line([name for name, _ in _COLUMNS]), flush=True)
    rng = np.random.default_rng(0)
    rows, started = [], time.perf_counter()
    for name, make in selected:
        case = make(size, rng)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = measure(case, reps)
        print(_line(_printed_row(case, r)), flush=True)
        for w in caught:
            print(f"    warning: {w.message}")
        rows.append(_markdown_row(case, r))
    print(f"\ntotal {time.perf_counter() - started:.1f} s; peak memory and repetitions are in "
          f"the written table (--write)")
    if (args.write or not (args.quick or args.only)) and not args.no_write:
        _write(args, mode, header, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
