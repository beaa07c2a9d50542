"""Where the BFGS helper's time goes beside `rosen_der` on the chained Rosenbrock (n=50):
the helper's setup (trace, passes, code generation, its first call), and the solve with a
gradient built beforehand, side by side in one process, interleaved.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bfgs_setup.py [--rounds 15] [--n 50]

Rows (median CPU time, `time.process_time`, and against `rosen_der`'s solve):
- `rosen_der`: scipy's BFGS with scipy's hand-written gradient;
- prebuilt gradient: the helper's gradient, built once before the rounds, in scipy's BFGS;
- helper setup: what a `pforjac.scipy.optimize.minimize` call does before scipy's own
  work (the value timed, the gradient traced, simplified, generated and run at x0);
- helper: the whole `pforjac.scipy.optimize.minimize(f, x0, method="BFGS")` call.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import scipy.optimize as so

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pforjac.scipy.optimize as po  # noqa: E402
from pforjac.scipy._solving import Derivatives  # noqa: E402
import _scipy_solvers_problems as p  # noqa: E402


def variants(n: int) -> dict:
    f, x0 = p.chained_rosenbrock, p.rosen_start(n)
    fun, jac = po._value_and_gradient(f, x0, (), Derivatives("bfgs_setup", "numpy"))

    def setup():             # (the gradient is traced by its first call, or before it)
        return po._value_and_gradient(f, x0, (), Derivatives("bfgs_setup", "numpy"))[1](x0)
    return {"rosen_der": lambda: so.minimize(f, x0, method="BFGS", jac=so.rosen_der),
            "prebuilt gradient": lambda: so.minimize(fun, x0, method="BFGS", jac=jac),
            "helper setup": setup,
            "helper": lambda: po.minimize(f, x0, method="BFGS", backend="numpy")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--n", type=int, default=50)
    args = parser.parse_args()
    runs = variants(args.n)
    times = {k: [] for k in runs}
    for _ in range(args.rounds):
        for k, run in runs.items():
            start = time.process_time()
            run()
            times[k].append(time.process_time() - start)
    base = statistics.median(times["rosen_der"])
    print(f"n={args.n}, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"| {k} | {m * 1e3:.2f} ms | {m / base:.3f}x |")


if __name__ == "__main__":
    main()
