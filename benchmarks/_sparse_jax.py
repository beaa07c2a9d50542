"""The JAX side of benchmarks/sparse_jacobians.py, run in a Python that has JAX, asdex and sparsejac
(JAX 0.11+ and asdex need Python 3.12: `python3.12 -m venv /tmp/sp312; /tmp/sp312/bin/pip
install jax asdex sparsejac scipy`). Prints one JSON object of medians (seconds)."""
from __future__ import annotations

import json
import os
import statistics
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)
import asdex  # noqa: E402
import sparsejac  # noqa: E402
from jax.experimental import sparse as jsparse  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sparse_workloads as w  # noqa: E402


def median_time(fn, rounds: int, reps: int = 20) -> float:
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


def ready(f):
    return lambda *a: jax.block_until_ready(f(*a))


def jacobian_rows(f, x, pattern, rounds, dense_ok):
    out = {}
    col = asdex.jacobian_coloring(f, x)
    out["asdex_prepare"] = median_time(lambda: asdex.jacobian_coloring(f, x), rounds, reps=1)
    out["asdex_colours"] = int(col.num_colors)
    out["asdex_repr"] = repr(col)
    jit_fn = ready(jax.jit(asdex.jacobian_from_coloring(f, col)))
    out["asdex_jit"] = median_time(lambda: jit_fn(x), rounds)
    csr_fn = asdex.jacobian_from_coloring(f, col, "scipy_csr")
    out["asdex_csr"] = median_time(lambda: csr_fn(x), rounds)
    sj = ready(jax.jit(sparsejac.jacfwd(f, sparsity=jsparse.BCOO.from_scipy_sparse(pattern))))
    out["sparsejac"] = median_time(lambda: sj(x), rounds)
    if dense_ok:
        dense = ready(jax.jit(jax.jacfwd(f)))
        out["jax_dense"] = median_time(lambda: dense(x), rounds, reps=3)
    return out


def hessian_rows(f, x, pattern, rounds):
    out = {}
    col = asdex.hessian_coloring(f, x)
    out["asdex_prepare"] = median_time(lambda: asdex.hessian_coloring(f, x), rounds, reps=1)
    out["asdex_colours"] = int(col.num_colors)
    out["asdex_repr"] = repr(col)
    jit_fn = ready(jax.jit(asdex.hessian_from_coloring(f, col)))
    out["asdex_jit"] = median_time(lambda: jit_fn(x), rounds)
    csr_fn = asdex.hessian_from_coloring(f, col, "scipy_csr")
    out["asdex_csr"] = median_time(lambda: csr_fn(x), rounds)
    sparsity = jsparse.BCOO.from_scipy_sparse(pattern)
    sj = ready(jax.jit(sparsejac.jacfwd(jax.grad(f), sparsity=sparsity)))
    out["sparsejac"] = median_time(lambda: sj(x), rounds)
    return out


def solve_ivp_brusselator(N: int, t_end: float, rounds: int = 3):
    """solve_ivp(BDF) with asdex's scipy CSR Jacobian: (median s, njev, success)."""
    from scipy.integrate import solve_ivp
    rhs, y0 = w.brusselator(jnp, N)
    fun_j = jax.jit(rhs)
    col = asdex.jacobian_coloring(lambda y, t: rhs(t, y), y0, 0.0)
    jac_csr = asdex.jacobian_from_coloring(lambda y, t: rhs(t, y), col, "scipy_csr")
    runs = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        sol = solve_ivp(lambda t, y: np.asarray(fun_j(t, y)), (0, t_end), y0, method="BDF",
                        jac=lambda t, y: jac_csr(y, t), rtol=1e-6, atol=1e-6)
        runs.append((time.perf_counter() - t0, int(sol.njev), bool(sol.success)))
    return statistics.median(r[0] for r in runs), runs[0][1], all(r[2] for r in runs)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    t_end = float(sys.argv[2]) if len(sys.argv) > 2 else 11.5
    from importlib.metadata import version
    results = {"jax": jax.__version__, "asdex": version("asdex"),
               "sparsejac": version("sparsejac")}
    for N in (32, 64):
        rhs, y0 = w.brusselator(jnp, N)
        results[f"brusselator_{N}"] = jacobian_rows(
            lambda y: rhs(0.0, y), jnp.asarray(y0), w.brusselator_pattern(N), rounds,
            dense_ok=N == 32)
    n = 10_000
    results["heat"] = jacobian_rows(w.heat(jnp), jnp.asarray(w.points(n)),
                                    w.tridiagonal(n), rounds, dense_ok=False)
    results["rosenbrock"] = hessian_rows(w.rosenbrock(jnp), jnp.asarray(w.points(n)),
                                         w.rosenbrock_pattern(n), rounds)
    if t_end > 0:
        results["solve_ivp"] = solve_ivp_brusselator(32, t_end)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
