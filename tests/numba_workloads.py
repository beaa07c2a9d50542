"""The benchmark programs tests/test_numba_workloads.py runs on the numba backend, written
once against an op namespace `m` (pforjac's, or JAX's in tests/data/make_numba_workloads_jax.py):
benchmarks/zoo.py's 21 workloads (imported from there), compare.py's (repeated here at
small sizes: its module sets thread counts when imported) and the derivatives the scipy
solver benchmark passes to scipy (its problems, from benchmarks/_scipy_solvers_problems.py)."""
import importlib
import pathlib
import sys

import numpy as np

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_module(name: str):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


def _seed(m, x, p):
    h1 = m.sigmoid(x @ p["w1"] + p["b1"])
    return m.sigmoid(h1 @ p["w2"] + p["b2"]) @ p["w3"] + p["b3"]


def _mlp(m, x, p):
    h = m.tanh(m.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])
    return h @ p["w3"] + p["b3"]


def compare_workloads(dtype) -> dict:
    """name -> (kind, forward(m, x, params), x, params): compare.py's, at small sizes."""
    rng = np.random.default_rng(1)
    layers = lambda sizes: {f"{w}{k}": rng.normal(size=(i, o) if w == "w" else o) * i ** -0.5  # noqa: E731
                            for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:]), 1) for w in "wb"}
    work = {"seed_jacobian": ("full", _seed, rng.normal(size=(6, 20)), layers([20, 12, 8, 1])),
            "seed_batch_jacobian": ("batch", _seed, rng.normal(size=(6, 20)), layers([20, 12, 8, 1])),
            "mlp_batch_jacobian": ("batch", _mlp, rng.normal(size=(6, 20)), layers([20, 12, 8, 4])),
            "elementwise": ("batch", lambda m, x, p: m.sin(x) * m.exp(x) + x ** 2,
                            rng.normal(size=(4, 16)) * 0.5, {}),
            "hessian": ("hessian", lambda m, x, p: m.sum(m.log(1 + m.exp(p["a"] @ x))),
                        rng.normal(size=12), {"a": rng.normal(size=(30, 12)) / 4}),
            "exp_reducer": ("full", lambda m, x, p: m.sum(m.exp(x), axis=1), rng.random((8, 8)), {}),
            "small_batch_jacobian": ("batch", lambda m, x, p: x * x, np.array([[1., 2.], [3., 4.]]), {}),
            "small_jacobian": ("full", lambda m, x, p: x * x * x, np.array([[1., 2.], [3., 4.]]), {})}
    return {name: (kind, f, x.astype(dtype), {k: v.astype(dtype) for k, v in p.items()})
            for name, (kind, f, x, p) in work.items()}


def scipy_problems(xp, dtype) -> dict:
    """name -> (kind, f, args): the functions scipy's solvers differentiate in the benchmark
    ('grad' of f, 'hvp' of f at (x, v), 'jacfwd' of f in its first argument)."""
    problems = benchmark_module("_scipy_solvers_problems")
    sparse = benchmark_module("_sparse_workloads")
    x0 = problems.rosen_start(50).astype(dtype)
    robertson = problems.make_robertson(xp)
    brusselator, y0 = sparse.brusselator(xp, 8)
    return {"rosenbrock_gradient": ("grad", problems.make_chained_rosenbrock(xp), (x0,)),
            "rosenbrock_hvp": ("hvp", problems.make_chained_rosenbrock(xp), (x0, np.cos(x0))),
            "curve_jacobian": ("jacfwd", problems.make_curve_residual(xp),
                               (problems.CURVE_X0.astype(dtype),)),
            "robertson_jacobian": ("jacfwd", lambda y, t: robertson(t, y),
                                   (np.array([0.9, 2e-5, 0.1], dtype), np.asarray(0.0, dtype))),
            "brusselator_jacobian": ("jacfwd", lambda y, t: brusselator(t, y),
                                     (y0.astype(dtype), np.asarray(1.2, dtype)))}
