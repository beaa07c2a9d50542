"""Sparse Jacobians and Hessians side by side: pforjac.sparse, scipy's sparse finite
differences, JAX's dense jit(jacfwd), asdex and sparsejac.

Workloads: the 2-D Brusselator of SciMLBenchmarks (N=32 and 64), the 1-D heat equation
with nonlinear conductivity (n=10,000), the extended Rosenbrock Hessian (n=10,000), and
solve_ivp(BDF) of the Brusselator at N=32 with each Jacobian source. pforjac is given the
pattern (known by construction; its detection is pforjac.sparse.pattern's, timed there);
asdex's preparation includes its detection. The JAX side runs in a Python that has JAX
0.11+, asdex and sparsejac (default /tmp/sp312/bin/python, PFORJAC_SPARSE_JAX to change),
as a subprocess; without one its columns are empty.

    python benchmarks/sparse_jacobians.py                 # writes results/sparse.md
    python benchmarks/sparse_jacobians.py --rounds 3 --t-end 0
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from _common import (fmt_ms, machine_header, markdown_table, time_in_rounds,  # noqa: E402
                     write_result)
import _sparse_workloads as w  # noqa: E402

import pforjac as pj  # noqa: E402
import pforjac.sparse as pjs  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402
from scipy.optimize._numdiff import approx_derivative, group_columns  # noqa: E402

DETECTION = importlib.util.find_spec("pforjac.sparse.pattern") is not None
JAX_PYTHON = os.environ.get("PFORJAC_SPARSE_JAX", "/tmp/sp312/bin/python")


def median(rounds: list[list[float]]) -> float:
    return float(np.median([t for r in rounds for t in r]))


def jacobian_row(f, x, pattern, rounds, dense_ok):
    """pforjac's preparation, colouring and evaluation, dense pforjac, scipy's sparse FD."""
    p = pjs.prepare_jacobian(f, x, sparsity=pattern)
    dense = pj.jacobian(f, pj.constant(x)).numpy().reshape(x.size, x.size) if dense_ok else None
    if dense is not None:
        assert np.abs(p(x).toarray() - dense).max() <= 1e-10 * max(1, np.abs(dense).max())
    fun = pj.function(f)
    groups = group_columns(pattern)
    fns = [lambda: pjs.prepare_jacobian(f, x, sparsity=pattern), lambda: p(x),
           lambda: approx_derivative(lambda v: fun(v).numpy(), x, sparsity=(pattern, groups))]
    if dense_ok:
        fns.append(lambda: pj.jacobian(f, pj.constant(x), vectorize=True,
                                       strategy="forward-mode"))
    if DETECTION:
        fns.append(lambda: pjs.prepare_jacobian(f, x))
    times = [median(t) for t in time_in_rounds(fns, rounds, reps_per_round=3, min_time=0.05)]
    return {"prepare": times[0], "eval": times[1], "fd": times[2],
            "dense": times[3] if dense_ok else None, "colours": p.ncolors,
            "detected": times[-1] if DETECTION else None,
            "fd_groups": int(groups.max()) + 1, "repr": repr(p)}


def hessian_row(f, x, pattern, rounds):
    p = pjs.prepare_hessian(f, x, sparsity=pattern)

    @pj.function
    def grad(v):
        with pj.GradientTape() as g:
            g.watch(v)
            y = f(v)
        return g.gradient(y, v)
    groups = group_columns(pattern)
    fns = [lambda: pjs.prepare_hessian(f, x, sparsity=pattern), lambda: p(x),
           lambda: approx_derivative(lambda v: grad(v).numpy(), x, sparsity=(pattern, groups))]
    if DETECTION:
        fns.append(lambda: pjs.prepare_hessian(f, x))
    times = [median(t) for t in time_in_rounds(fns, rounds, reps_per_round=3, min_time=0.05)]
    return {"prepare": times[0], "eval": times[1], "fd": times[2], "dense": None,
            "detected": times[-1] if DETECTION else None,
            "colours": p.ncolors, "fd_groups": int(groups.max()) + 1, "repr": repr(p)}


def solve_ivp_rows(N: int, t_end: float, rounds: int = 3) -> dict:
    """solve_ivp(BDF) of the Brusselator with each Jacobian source: (median s, njev, ok)."""
    rhs, y0 = w.brusselator(pj, N)
    pattern = w.brusselator_pattern(N)
    p = pjs.prepare_ode_jacobian(rhs, 0.0, y0, sparsity=pattern)
    rhs_c = pj.function(rhs)

    def fun(t, y):
        return rhs_c(np.asarray(t), y).numpy()
    sources = [("pforjac", {"jac": p.scipy_jac()}), ("scipy FD", {"jac_sparsity": pattern})]
    out = {name: [] for name, _ in sources}
    for _ in range(rounds):             # interleaved, as time_in_rounds does
        for name, kw in sources:
            t0 = time.perf_counter()
            sol = solve_ivp(fun, (0, t_end), y0, method="BDF", rtol=1e-6, atol=1e-6, **kw)
            out[name].append((time.perf_counter() - t0, int(sol.njev), bool(sol.success)))
    return {name: (float(np.median([r[0] for r in runs])), runs[0][1], all(r[2] for r in runs))
            for name, runs in out.items()}


def check_small_instances() -> str:
    """Each workload at a small size: the sparse result equals the dense one (1e-10) and the
    given pattern is the dense result's non-zeros at a random point (the true pattern)."""
    cases = [("brusselator N=8", *_bruss_case(8), pjs.prepare_jacobian, pj.jacobian),
             ("heat n=50", w.heat(pj), w.points(50), w.tridiagonal(50), pjs.prepare_jacobian,
              pj.jacobian),
             ("rosenbrock n=50", w.rosenbrock(pj), w.points(50), w.rosenbrock_pattern(50),
              pjs.prepare_hessian, pj.hessian)]
    for name, f, x, pattern, prepare, dense_fn in cases:
        dense = dense_fn(f, pj.constant(x)).numpy().reshape(x.size, x.size)
        sparse = prepare(f, x, sparsity=pattern)(x).toarray()
        assert np.abs(sparse - dense).max() <= 1e-10 * max(1.0, np.abs(dense).max()), name
        assert np.array_equal(dense != 0, pattern.toarray()), name
    return "checked at small sizes: sparse == dense (1e-10), pattern == dense non-zeros"


def _bruss_case(N):
    rhs, y0 = w.brusselator(pj, N)
    return (lambda y: rhs(0.0, y)), w.points(y0.size, 1), w.brusselator_pattern(N)


def jax_side(rounds: int, t_end: float) -> dict:
    if not os.path.exists(JAX_PYTHON):
        print(f"(no {JAX_PYTHON}: JAX, asdex and sparsejac columns left empty)")
        return {}
    run = subprocess.run([JAX_PYTHON, os.path.join(HERE, "_sparse_jax.py"), str(rounds),
                          str(t_end)], capture_output=True, text=True, timeout=3600)
    if run.returncode:
        print("the JAX side failed:\n" + run.stderr[-2000:])
        return {}
    return json.loads(run.stdout.strip().splitlines()[-1])


def ms(v) -> str:
    return "" if v is None else fmt_ms(v)


def table(ours: dict, theirs: dict) -> str:
    header = ["workload", "colours (pforjac / asdex / scipy groups)", "pforjac prepare",
              "pforjac prepare, pattern detected",
              "asdex prepare", "pforjac eval", "asdex jit", "asdex scipy CSR", "sparsejac",
              "scipy sparse FD", "pforjac dense", "JAX jit(jacfwd) dense"]
    rows = []
    for key, row in ours.items():
        other = theirs.get(key, {})
        rows.append([key, f"{row['colours']} / {other.get('asdex_colours', '-')} / "
                          f"{row['fd_groups']}",
                     ms(row["prepare"]), ms(row["detected"]), ms(other.get("asdex_prepare")),
                     ms(row["eval"]),
                     ms(other.get("asdex_jit")), ms(other.get("asdex_csr")),
                     ms(other.get("sparsejac")), ms(row["fd"]), ms(row["dense"]),
                     ms(other.get("jax_dense"))])
    return markdown_table(header, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--t-end", type=float, default=11.5,
                        help="solve_ivp's end time (0: no solve_ivp rows)")
    args = parser.parse_args()
    header = machine_header()
    checked = check_small_instances()
    print(checked)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    ours = {}
    for N in (32, 64):
        rhs, y0 = w.brusselator(pj, N)
        ours[f"brusselator_{N}"] = jacobian_row(lambda y: rhs(0.0, y), y0,
                                                w.brusselator_pattern(N), args.rounds, N == 32)
    n = 10_000
    ours["heat"] = jacobian_row(w.heat(pj), w.points(n), w.tridiagonal(n), args.rounds,
                                False)
    ours["rosenbrock"] = hessian_row(w.rosenbrock(pj), w.points(n), w.rosenbrock_pattern(n),
                                     args.rounds)
    ivp = solve_ivp_rows(32, args.t_end) if args.t_end > 0 else {}
    theirs = jax_side(args.rounds, args.t_end)
    if "solve_ivp" in theirs:
        ivp["asdex"] = tuple(theirs["solve_ivp"])
    uptime_end = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    ivp_table = markdown_table(["Jacobian source", "solve_ivp BDF, t in [0, %g], median of 3"
                                % args.t_end,
                                "Jacobian evaluations", "success"],
                               [[k, f"{v[0]:.2f} s", v[1], v[2]] for k, v in ivp.items()])
    text = (f"# Sparse Jacobians and Hessians\n\n`python benchmarks/sparse_jacobians.py "
            f"--rounds {args.rounds} --t-end {args.t_end:g}`\n\n{header}\n\n"
            f"uptime before: {uptime}\n\nuptime after: {uptime_end}\n\n"
            f"JAX side: JAX {theirs.get('jax', '-')}, asdex {theirs.get('asdex', '-')}, sparsejac "
            f"{theirs.get('sparsejac', '-')} ({JAX_PYTHON})\n\n"
            f"{checked}. Medians; ms unless marked.\n\n{table(ours, theirs)}\n\n"
            f"Brusselator N=32, 2,048 states:\n\n{ivp_table}\n\n"
            + "\n".join(f"- {k}: pforjac {v['repr']}; asdex "
                        f"{theirs.get(k, {}).get('asdex_repr', '-')}" for k, v in ours.items())
            + "\n")
    print(text)
    print("written to", write_result("sparse.md", text))


if __name__ == "__main__":
    main()
