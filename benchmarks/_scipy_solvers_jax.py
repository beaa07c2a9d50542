"""The JAX side of benchmarks/scipy_solvers.py, run in the oracle Python (JAX, scipy): one
solve per workload named on the command line, each with freshly jitted derivatives (compile
included), after a warm-up solve that loads JAX's backend. Prints one JSON object
{workload: [wall seconds, CPU seconds, counts]}."""
from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.integrate as si  # noqa: E402
import scipy.optimize as so  # noqa: E402

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _scipy_solvers_problems as p  # noqa: E402


def minimize(method: str, n: int):
    value_grad = jax.jit(jax.value_and_grad(p.make_chained_rosenbrock(jnp)))

    def fun(x):
        v, g = value_grad(x)
        return float(v), np.asarray(g)
    return so.minimize(fun, p.rosen_start(n), method=method, jac=True)


def newton_cg(n: int):
    f = p.make_chained_rosenbrock(jnp)
    value_grad = jax.jit(jax.value_and_grad(f))
    hvp = jax.jit(lambda x, v: jax.jvp(jax.grad(f), (x,), (v,))[1])

    def fun(x):
        v, g = value_grad(x)
        return float(v), np.asarray(g)
    return so.minimize(fun, p.rosen_start(n), method="Newton-CG", jac=True,
                       hessp=lambda x, v: np.asarray(hvp(x, v)))


def least_squares():
    r_np = p.curve_residual
    jac = jax.jit(jax.jacfwd(p.make_curve_residual(jnp)))
    return so.least_squares(r_np, p.CURVE_X0, jac=lambda q: np.asarray(jac(q)))


def robertson(method: str, tol=p.ROBERTSON_TOL):
    rhs = p.robertson
    jac = jax.jit(jax.jacfwd(p.make_robertson(jnp), argnums=1))
    return si.solve_ivp(rhs, p.ROBERTSON_SPAN, p.ROBERTSON_Y0, method=method,
                        jac=lambda t, y: np.asarray(jac(t, y)), **tol)


SOLVES = {"BFGS, chained Rosenbrock n=50": lambda: minimize("BFGS", 50),
          "BFGS, chained Rosenbrock n=1000": lambda: minimize("BFGS", 1000),
          "L-BFGS-B, chained Rosenbrock n=50": lambda: minimize("L-BFGS-B", 50),
          "L-BFGS-B, chained Rosenbrock n=1000": lambda: minimize("L-BFGS-B", 1000),
          "Newton-CG (hessp), chained Rosenbrock n=1000": lambda: newton_cg(1000),
          "least_squares, 1000-point curve fit": least_squares,
          "solve_ivp Radau, Robertson": lambda: robertson("Radau"),
          "solve_ivp BDF, Robertson": lambda: robertson("BDF"),
          "solve_ivp Radau, Robertson, rtol 1e-8": lambda: robertson("Radau", p.ROBERTSON_TIGHT)}


def counts(res) -> str:
    keys = [("nit", "it"), ("nfev", "f"), ("njev", "jac"), ("nhev", "hess"), ("nlu", "LU")]
    return ", ".join(f"{label} {res[k]}" for k, label in keys if res.get(k) not in (None, 0))


def main():
    minimize("BFGS", 7)               # warm-up: JAX's backend, on another shape
    out = {}
    for name in sys.argv[1:]:
        wall, cpu = time.perf_counter(), time.process_time()
        res = SOLVES[name]()
        out[name] = [time.perf_counter() - wall, time.process_time() - cpu, counts(res)]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
