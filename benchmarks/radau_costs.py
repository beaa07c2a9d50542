"""Where a Radau solve of Robertson's problem spends its time, per source of the right-hand
side and the Jacobian: scipy's finite differences, a hand-written numpy Jacobian, both
functions hand-written with `@numba.njit` (with scipy's Radau, and with the helper's Radau,
whose dense LU calls go straight to LAPACK), and the `pforjac.scipy.integrate.solve_ivp`
helper on each backend.

    python benchmarks/radau_costs.py [--rounds 5] [--rtol 1e-8] [--atol 1e-12] [--t-end 1e5]

Each round solves every variant twice, interleaved: once as it is (the CPU time of the
whole solve, compile included: the table's CPU column, a median), once with CPU timers
around the right-hand side, the Jacobian (for finite differences: scipy's `num_jac` with
the right-hand side calls it makes), and the dense LU factorizations and solves Radau
makes (`scipy.linalg.lu_factor`, `lu_solve`, or LAPACK's `getrf`/`getrs` called directly
in the helper's Radau); what is left is scipy's own Python (the
step logic, its array handling) plus the timers' own cost (about half a microsecond a
call). For the helper, "setup" is its time before scipy's solver starts and its first
Jacobian call (the traces and compiles). Parts are medians too, in ms, with call counts.
"""
from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import scipy.integrate as si
import scipy.integrate._ivp.radau as radau

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pforjac.scipy._lapack_lu as lapack_lu  # noqa: E402
import pforjac.scipy.integrate as pi  # noqa: E402
import _scipy_solvers_problems as p  # noqa: E402

PARTS = ("setup", "rhs", "jac", "LU factor", "LU solve")


class Timers:
    """Seconds and calls per part of one solve; a right-hand side call made inside the
    Jacobian (finite differences) counts for the Jacobian only."""

    def __init__(self, first_jac_is_setup: bool = False):
        self.seconds = dict.fromkeys(PARTS, 0.0)
        self.calls = dict.fromkeys(PARTS, 0)
        self.inside_jac = False
        self.first_jac_is_setup = first_jac_is_setup

    def wrap(self, part: str, fn):
        def timed(*args, **kwargs):
            if part == "rhs" and self.inside_jac:
                return fn(*args, **kwargs)
            outer, self.inside_jac = self.inside_jac, self.inside_jac or part == "jac"
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                first = part == "jac" and self.first_jac_is_setup and not self.calls["jac"]
                self.seconds["setup" if first else part] += time.process_time() - start
                self.calls[part] += 1
                self.inside_jac = outer
        return timed


def variants(tol: dict, span: tuple) -> dict:
    """name -> solve(timers or None): timers given, the parts are timed."""
    rhs, jac, y0 = p.robertson, p.robertson_jac, p.ROBERTSON_Y0

    def scipy_solve(fun, jac_, method="Radau"):
        def solve(t: Timers | None):
            if t is not None:
                fun_ = t.wrap("rhs", fun)
                jac_t = None if jac_ is None else t.wrap("jac", jac_)
                return si.solve_ivp(fun_, span, y0, method=method, jac=jac_t, **tol)
            return si.solve_ivp(fun, span, y0, method=method, jac=jac_, **tol)
        return solve

    def helper(backend: str):
        def solve(t: Timers | None):
            if t is None:
                return pi.solve_ivp(rhs, span, y0, method="Radau", backend=backend, **tol)
            return _timed_helper(t, backend, span, tol)
        return solve
    out = {"numpy rhs, finite differences (scipy's num_jac)": scipy_solve(rhs, None),
           "numpy rhs, hand-written numpy jac": scipy_solve(rhs, jac)}
    native = p.numba_robertson()
    if native is not None:
        out["@njit rhs, finite differences"] = scipy_solve(native[0], None)
        out["@njit rhs and jac (the floor)"] = scipy_solve(*native)
        out["@njit rhs and jac, LAPACK LU"] = scipy_solve(
            *native, method=lapack_lu.lapack_lu_method("Radau"))
    out["pforjac helper, numpy backend"] = helper("numpy")
    if native is not None:
        out["pforjac helper, numba backend"] = helper("numba")
    return out


def _timed_helper(t: Timers, backend: str, span, tol):
    """The helper's solve with its rhs and jac timed inside scipy; its own time before
    scipy's solve_ivp starts is its setup."""
    real = si.solve_ivp
    t.first_jac_is_setup = True
    start = time.process_time()

    def spy(fun, *args, jac=None, **kwargs):
        t.seconds["setup"] += time.process_time() - start
        return real(t.wrap("rhs", fun), *args, jac=t.wrap("jac", jac), **kwargs)
    si.solve_ivp = spy
    try:
        return pi.solve_ivp(p.robertson, span, p.ROBERTSON_Y0, method="Radau",
                            backend=backend, **tol)
    finally:
        si.solve_ivp = real


def timed_run(solve) -> tuple[float, Timers, object]:
    """One solve with the parts timed (LU through Radau's module-level lu_factor/lu_solve,
    or the direct LAPACK calls of the helper's Radau)."""
    t = Timers()
    factor, backsolve = radau.lu_factor, radau.lu_solve
    real_num_jac, real_dense = radau.num_jac, lapack_lu._dense_lu
    radau.lu_factor, radau.lu_solve = t.wrap("LU factor", factor), t.wrap("LU solve", backsolve)
    radau.num_jac = t.wrap("jac", real_num_jac)

    def dense_lu(solver):
        lu, solve_lu = real_dense(solver)
        return t.wrap("LU factor", lu), t.wrap("LU solve", solve_lu)
    lapack_lu._dense_lu = dense_lu
    try:
        start = time.process_time()
        res = solve(t)
        total = time.process_time() - start
    finally:
        radau.lu_factor, radau.lu_solve, radau.num_jac = factor, backsolve, real_num_jac
        lapack_lu._dense_lu = real_dense
    return total, t, res


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rtol", type=float, default=p.ROBERTSON_TIGHT["rtol"])
    parser.add_argument("--atol", type=float, default=p.ROBERTSON_TIGHT["atol"])
    parser.add_argument("--t-end", type=float, default=p.ROBERTSON_SPAN[1])
    args = parser.parse_args()
    tol, span = {"rtol": args.rtol, "atol": args.atol}, (0.0, args.t_end)
    work = variants(tol, span)
    for solve in work.values():            # numba's code compiled or loaded once
        solve(None)
    cpu = {name: [] for name in work}
    timed = {name: [] for name in work}
    for _ in range(args.rounds):
        for name, solve in work.items():
            start = time.process_time()
            solve(None)
            cpu[name].append(time.process_time() - start)
            timed[name].append(timed_run(solve))
    base = statistics.median(next(iter(cpu.values())))
    rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{now}, pforjac {rev}, {os.cpu_count()} cores, OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}. "
          f"Radau on Robertson, t in {span}, rtol {args.rtol:g}, atol {args.atol:g}; load "
          f"{os.getloadavg()[0]:.1f}; CPU medians of {args.rounds}, the parts (CPU ms, calls) "
          f"from as many timed solves\n")
    print("| rhs and jac | CPU | vs FD | " + " | ".join(PARTS) + " | scipy's rest | counts |")
    print("| --- | ---: | ---: |" + " ---: |" * (len(PARTS) + 1) + " --- |")
    for name in work:
        runs = timed[name]
        res, t = runs[-1][2], runs[-1][1]
        ms = {k: statistics.median(r[1].seconds[k] for r in runs) * 1e3 for k in PARTS}
        parts = " | ".join(f"{ms[k]:.1f} ({t.calls[k]})" for k in PARTS)
        rest = statistics.median(r[0] - sum(r[1].seconds.values()) for r in runs)
        med = statistics.median(cpu[name])
        print(f"| {name} | {med * 1e3:.1f} ms | {med / base:.2f}x | {parts} | {rest * 1e3:.1f} | "
              f"f {res.nfev}, jac {res.njev}, LU {res.nlu}, steps {len(res.t) - 1} |")


if __name__ == "__main__":
    main()
