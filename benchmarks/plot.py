"""Time of while-loop, eager pfor and compiled Jacobians as the number of rows grows.

Workload: the Hessian of sum(softplus(A @ x)) with A (100, d), as a jacobian (outer
tape) of a gradient (inner tape): d rows. Saves benchmarks/results/scaling.png and
a table beside it. Needs matplotlib (`pip install -e ".[plot]"`).

    python benchmarks/plot.py [--sizes 25 50 100 200 400 800] [--reps 5]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import RESULTS_DIR, machine_header, markdown_table, time_reps, write_result  # noqa: E402

import pforjac as pj  # noqa: E402


def hessian_fn(a):
    def hess(x, use_pfor=True):
        with pj.GradientTape(persistent=not use_pfor) as outer:
            outer.watch(x)
            with pj.GradientTape() as inner:
                inner.watch(x)
                y = pj.sum(pj.softplus(pj.matmul(a, x)))
            g = inner.gradient(y, x)
        return outer.jacobian(g, x, experimental_use_pfor=use_pfor)
    return hess


def measure(sizes, reps):
    rng = np.random.default_rng(0)
    rows = []
    for d in sizes:
        a = pj.constant(rng.normal(size=(100, d)).astype(np.float32) / np.float32(10))
        x = rng.normal(size=(d,)).astype(np.float32)
        hess = hessian_fn(a)
        compiled = pj.function(hess)
        xt = pj.constant(x)
        want = hess(xt).numpy()
        np.testing.assert_allclose(compiled(x).numpy(), want, rtol=1e-4, atol=1e-5)
        loop_reps = max(1, reps // 2) if d >= 400 else reps
        t_loop, _ = time_reps(lambda: hess(xt, use_pfor=False), loop_reps)
        t_pfor, _ = time_reps(lambda: hess(xt), reps, min_time=0.2)
        t_comp, _ = time_reps(lambda: compiled(x), reps, min_time=0.2)
        rows.append((d, t_loop * 1e3, t_pfor * 1e3, t_comp * 1e3))
        print(f"rows {d:5d}: while-loop {t_loop*1e3:9.2f} ms  pfor {t_pfor*1e3:8.2f} ms  "
              f"compiled {t_comp*1e3:8.3f} ms", flush=True)
    return rows


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    d = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for k, (label, style) in enumerate([("while-loop", "o-"), ("eager pfor", "s-"),
                                        ("compiled (pforjac.function)", "^-")], start=1):
        ax.plot(d, [r[k] for r in rows], style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("Jacobian rows (Hessian of sum(softplus(A @ x)), A: 100 x rows)")
    ax.set_ylabel("median time per call (ms)")
    ax.set_title("pforjac: while-loop vs pfor vs compiled")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200, 400, 800])
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args(argv)
    header = machine_header()
    print(header)
    rows = measure(args.sizes, args.reps)
    os.makedirs(RESULTS_DIR, exist_ok=True)
    png = os.path.join(RESULTS_DIR, "scaling.png")
    plot(rows, png)
    table = markdown_table(["rows", "while-loop ms", "eager pfor ms", "compiled ms",
                            "pfor speedup", "compiled speedup"],
                           [[d, f"{l:.2f}", f"{p:.2f}", f"{c:.3f}", f"{l/p:.0f}x", f"{l/c:.0f}x"]
                            for d, l, p, c in rows])
    write_result("scaling.md", f"# Scaling with the number of Jacobian rows\n\n`python benchmarks/plot.py`\n\n"
                               f"{header}\n\n![scaling](scaling.png)\n\n{table}\n")
    print(table)
    print(f"saved {png}")


if __name__ == "__main__":
    main()
