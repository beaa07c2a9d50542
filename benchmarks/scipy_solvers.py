"""scipy's solvers with each source of derivatives, side by side in one run: pforjac eager
(`jac=pj.grad(f)`), compiled (`pj.function`), the `pforjac.scipy` helpers on the numpy and
the numba backend, JAX `jit` (compile included, in the oracle Python:
`_scipy_solvers_jax.py`), scipy's hand-written derivatives where it ships them (and, for
Robertson, the right-hand side and Jacobian hand-written with `@numba.njit`: the floor), and
finite differences.

    python benchmarks/scipy_solvers.py [--rounds 3] [--full] [--out results/scipy_solvers.md]

Each round runs every variant of every workload once (interleaved), and the JAX side once
in a fresh subprocess; the table gives medians of wall time and of the process's CPU time
(on a shared machine the CPU time is the steadier: waits for a core count in wall time
only; every variant runs on one thread, given OPENBLAS_NUM_THREADS=1) and the solver's
counts. The
functions are written once with numpy (`np.sum`, `np.stack`), as a user writes them; every
solve starts from nothing cached (a new `pj.function`, a new helper call, a new `jax.jit`),
so compile times are included, except numba's machine code: it is compiled in the first
round (or loaded from numba's disk cache, `~/.cache/pforjac/numba`, written by an earlier
run), whose CPU time is its own column, and reused by later rounds, as a user's second run
loads it. This process's allocator is left as it starts.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import scipy.integrate as si
import scipy.optimize as so

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pforjac as pj  # noqa: E402
import pforjac.scipy.integrate as pi  # noqa: E402
import pforjac.scipy.optimize as po  # noqa: E402
import _scipy_solvers_problems as p  # noqa: E402

JAX_PYTHON = os.environ.get("PFORJAC_ORACLE_PYTHON", "/work/oracle/bin/python")
NUMBA_HELPER = "pforjac.scipy helper, backend='numba'"


def _np(fn):
    """A pforjac derivative as scipy takes it (np.asarray: free once results are numpy)."""
    return lambda *a: np.asarray(fn(*a))


# -- minimize -------------------------------------------------------------------------------------
def minimize_variants(method: str, n: int) -> dict:
    f, x0 = p.chained_rosenbrock, p.rosen_start(n)

    def eager():
        return so.minimize(f, x0, method=method, jac=_np(pj.grad(f)))

    def compiled():
        return so.minimize(f, x0, method=method, jac=_np(pj.function(pj.grad(f))))
    variants = {"scipy rosen_der": lambda: so.minimize(so.rosen, x0, method=method,
                                                       jac=so.rosen_der),
                "finite differences": lambda: so.minimize(f, x0, method=method),
                "pforjac eager pj.grad": eager, "pforjac pj.function": compiled,
                "pforjac.scipy helper": lambda: po.minimize(f, x0, method=method,
                                                            backend="numpy"),
                NUMBA_HELPER: lambda: po.minimize(f, x0, method=method, backend="numba")}
    if n > 100:        # n function calls a gradient: minutes a solve
        del variants["finite differences"]
    return variants


def newton_cg_variants(n: int) -> dict:
    f, x0 = p.chained_rosenbrock, p.rosen_start(n)

    def eager():
        return so.minimize(f, x0, method="Newton-CG", jac=_np(pj.grad(f)),
                           hessp=_np(lambda x, v: pj.hvp(f, x, v)[1]))

    def compiled():
        g, hv = pj.function(pj.grad(f)), pj.function(lambda x, v: pj.hvp(f, x, v)[1])
        return so.minimize(f, x0, method="Newton-CG", jac=_np(g), hessp=_np(hv))
    return {"scipy rosen_der, rosen_hess_prod": lambda: so.minimize(
                so.rosen, x0, method="Newton-CG", jac=so.rosen_der, hessp=so.rosen_hess_prod),
            "finite differences (hessp)": lambda: so.minimize(f, x0, method="Newton-CG",
                                                              jac=so.rosen_der),
            "pforjac eager pj.grad, pj.hvp": eager, "pforjac pj.function": compiled,
            "pforjac.scipy helper": lambda: po.minimize(f, x0, method="Newton-CG",
                                                        sparse=False, backend="numpy"),
            NUMBA_HELPER: lambda: po.minimize(f, x0, method="Newton-CG", sparse=False,
                                              backend="numba")}


# -- least_squares ----------------------------------------------------------------------------------
def least_squares_variants() -> dict:
    r, jac, x0 = p.curve_residual, p.curve_jacobian, p.CURVE_X0
    return {"hand-written jac": lambda: so.least_squares(r, x0, jac=jac),
            "finite differences": lambda: so.least_squares(r, x0),
            "pforjac eager pj.jacfwd": lambda: so.least_squares(r, x0, jac=_np(pj.jacfwd(r))),
            "pforjac pj.function": lambda: so.least_squares(
                r, x0, jac=_np(pj.function(pj.jacfwd(r)))),
            "pforjac.scipy helper": lambda: po.least_squares(r, x0, backend="numpy"),
            NUMBA_HELPER: lambda: po.least_squares(r, x0, backend="numba")}


# -- solve_ivp -------------------------------------------------------------------------------------
def robertson_variants(method: str, tol: dict) -> dict:
    rhs, jac, y0, span = p.robertson, p.robertson_jac, p.ROBERTSON_Y0, p.ROBERTSON_SPAN

    def eager():
        return si.solve_ivp(rhs, span, y0, method=method, **tol,
                            jac=lambda t, y: np.asarray(pj.jacfwd(lambda z: rhs(t, z))(y)))

    def compiled():
        j = pj.function(lambda y, t: pj.jacfwd(lambda z: rhs(t, z))(y))
        return si.solve_ivp(rhs, span, y0, method=method, **tol,
                            jac=lambda t, y: np.asarray(j(y, np.asarray(t))))
    variants = {
        "hand-written jac": lambda: si.solve_ivp(rhs, span, y0, method=method, jac=jac, **tol),
        "finite differences": lambda: si.solve_ivp(rhs, span, y0, method=method, **tol),
        "pforjac eager pj.jacfwd": eager, "pforjac pj.function": compiled,
        "pforjac.scipy helper": lambda: pi.solve_ivp(rhs, span, y0, method=method,
                                                     backend="numpy", **tol),
        NUMBA_HELPER + ", rhs compiled too": lambda: pi.solve_ivp(
            rhs, span, y0, method=method, backend="numba", **tol)}
    native = p.numba_robertson()
    if native is not None:       # the floor: both functions hand-written in numba
        variants["hand-written @numba.njit rhs and jac"] = lambda: si.solve_ivp(
            native[0], span, y0, method=method, jac=native[1], **tol)
    return variants


def brusselator_variants(method: str) -> dict:
    rhs, y0, pattern = p.brusselator()
    span = p.BRUSSELATOR_SPAN[method]

    def prepared():
        from pforjac.sparse import prepare_ode_jacobian
        jac = prepare_ode_jacobian(rhs, span[0], y0).scipy_jac()
        return si.solve_ivp(rhs, span, y0, method=method, jac=jac)
    return {"finite differences, hand-built jac_sparsity": lambda: si.solve_ivp(
                rhs, span, y0, method=method, jac_sparsity=pattern),
            "pforjac.sparse.prepare_ode_jacobian": prepared,
            "pforjac.scipy helper (sparse, no pattern given)": lambda: pi.solve_ivp(
                rhs, span, y0, method=method)}


def workloads(full: bool) -> dict:
    slow = {"BFGS, chained Rosenbrock n=1000": minimize_variants("BFGS", 1000)} if full else {}
    return {"BFGS, chained Rosenbrock n=50": minimize_variants("BFGS", 50), **slow,
            "L-BFGS-B, chained Rosenbrock n=50": minimize_variants("L-BFGS-B", 50),
            "L-BFGS-B, chained Rosenbrock n=1000": minimize_variants("L-BFGS-B", 1000),
            "Newton-CG (hessp), chained Rosenbrock n=1000": newton_cg_variants(1000),
            "least_squares, 1000-point curve fit": least_squares_variants(),
            "solve_ivp Radau, Robertson": robertson_variants("Radau", p.ROBERTSON_TOL),
            "solve_ivp BDF, Robertson": robertson_variants("BDF", p.ROBERTSON_TOL),
            "solve_ivp Radau, Robertson, rtol 1e-8": robertson_variants("Radau",
                                                                         p.ROBERTSON_TIGHT),
            "solve_ivp BDF, Brusselator 2-D N=32": brusselator_variants("BDF"),
            "solve_ivp Radau, Brusselator 2-D N=32": brusselator_variants("Radau")}


# -- running, interleaved ---------------------------------------------------------------------------
def counts(res) -> str:
    keys = [("nit", "it"), ("nfev", "f"), ("njev", "jac"), ("nhev", "hess"), ("nlu", "LU")]
    parts = [f"{label} {res[k]}" for k, label in keys if res.get(k) not in (None, 0)]
    ok = res.get("success", res.get("status", 0) >= 0)
    return ", ".join(parts) + ("" if ok else ", FAILED")


def jax_round(names: list) -> dict:
    if not os.path.exists(JAX_PYTHON):
        return {}
    run = subprocess.run([JAX_PYTHON, os.path.join(HERE, "_scipy_solvers_jax.py"), *names],
                         capture_output=True, text=True, timeout=3600)
    if run.returncode:
        print("the JAX side failed:\n" + run.stderr[-2000:])
        return {}
    return json.loads(run.stdout.strip().splitlines()[-1])


def run(rounds: int, only: str | None, full: bool) -> tuple[dict, dict]:
    work = {k: v for k, v in workloads(full).items() if only is None or only in k}
    times = {w: {v: [] for v in variants} for w, variants in work.items()}
    info = {w: {} for w in work}
    for r in range(rounds):
        for w, variants in work.items():
            for v, solve in variants.items():
                wall, cpu = time.perf_counter(), time.process_time()
                res = solve()
                times[w][v].append((time.perf_counter() - wall, time.process_time() - cpu))
                info[w][v] = counts(res)
                print(f"  {w} | {v}: {times[w][v][-1][0]:.3f} s, {info[w][v]}",
                      file=sys.stderr, flush=True)
        for w, (wall, cpu, c) in jax_round([w for w in work if w in p.JAX_WORKLOADS]).items():
            times[w].setdefault("JAX jit (compile included)", []).append((wall, cpu))
            info[w]["JAX jit (compile included)"] = c
        print(f"round {r + 1}/{rounds} done", flush=True)
    return times, info


def table(times: dict, info: dict) -> str:
    """Per workload: median wall and CPU time (this process's, or the JAX process's), each
    against the first row's, and the first round's CPU time (numba's compile, or its load
    from the disk cache, falls in it)."""
    lines = []
    for w, variants in times.items():
        first = next(iter(variants.values()))
        base = [statistics.median(t[k] for t in first) for k in (0, 1)]
        lines += [f"**{w}**", "", "| derivatives | wall | vs first | CPU | vs first | "
                                  "CPU, round 1 | counts |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
        for v, ts in variants.items():
            wall, cpu = (statistics.median(t[k] for t in ts) for k in (0, 1))
            lines.append(f"| {v} | {wall * 1e3:.1f} ms | {wall / base[0]:.2f}x | "
                         f"{cpu * 1e3:.1f} ms | {cpu / base[1]:.2f}x | {ts[0][1] * 1e3:.1f} ms "
                         f"| {info[w][v]} |")
        lines.append("")
    return "\n".join(lines)


def header(rounds: int) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()
    return (f"{now}, pforjac {rev}, {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} cores, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, Python "
            f"{platform.python_version()}, numpy {np.__version__}, scipy "
            f"{__import__('scipy').__version__}, OPENBLAS_NUM_THREADS="
            f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; medians of {rounds} "
            f"interleaved rounds")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default=None, help="run the workloads whose name has this")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    parser.add_argument("--full", action="store_true",
                        help="with BFGS at n=1000 (its dense 1000 x 1000 updates over "
                             "thousands of iterations: minutes a solve)")
    args = parser.parse_args()
    p.check()
    top = header(args.rounds)
    times, info = run(args.rounds, args.only, args.full)
    text = f"{top}\n\n{table(times, info)}"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
