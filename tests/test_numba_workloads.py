"""Every program of the benchmarks (benchmarks/zoo.py's 21 workloads, compare.py's, and the
derivatives scipy's solvers call in benchmarks/scipy_solvers.py) lowers to numba whole, with
no fallback and no warning, and computes what the numpy backend computes, to a few ulps in
float64 and float32 (summation orders differ: the tolerance scales with the result's
largest value), and, in float64, what JAX computes (tests/data/numba_workloads_jax.npz,
made by tests/data/make_numba_workloads_jax.py with the oracle's JAX).

Compile time: numba compiles a program of tens of equations in seconds (rnn16's 262 in
about a minute on the 2-core development VM), so the suite compiles a few programs that
exercise the rules the others use (sigmoid, softplus, einsum, indexing with None, the
solvers' derivatives); PFORJAC_TEST_NUMBA_WORKLOADS=all compiles every one, in both dtypes.
Whether every program lowers is checked without compiling, for all of them."""
import importlib
import os
import pathlib
import sys
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_codegen import numba_source

numba = pytest.importorskip("numba")

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"
JAX_VALUES = pathlib.Path(__file__).resolve().parent / "data" / "numba_workloads_jax.npz"


def _benchmark_module(name: str):
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)


# -- compare.py's forward functions (its module sets thread counts when imported) ------------
def _seed(x, p):
    h1 = pj.sigmoid(x @ p["w1"] + p["b1"])
    return pj.sigmoid(h1 @ p["w2"] + p["b2"]) @ p["w3"] + p["b3"]


def _mlp(x, p):
    h = pj.tanh(pj.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])
    return h @ p["w3"] + p["b3"]


def _compare_workloads(dtype) -> dict:
    """name -> (kind, forward(x, params), x, params): compare.py's, at small sizes."""
    rng = np.random.default_rng(1)
    layers = lambda sizes: {f"{w}{k}": rng.normal(size=(i, o) if w == "w" else o) * i ** -0.5
                            for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:]), 1) for w in "wb"}
    work = {"seed_jacobian": ("full", _seed, rng.normal(size=(6, 20)), layers([20, 12, 8, 1])),
            "seed_batch_jacobian": ("batch", _seed, rng.normal(size=(6, 20)), layers([20, 12, 8, 1])),
            "mlp_batch_jacobian": ("batch", _mlp, rng.normal(size=(6, 20)), layers([20, 12, 8, 4])),
            "elementwise": ("batch", lambda x, p: pj.sin(x) * pj.exp(x) + x ** 2,
                            rng.normal(size=(4, 16)) * 0.5, {}),
            "hessian": ("hessian", lambda x, p: pj.sum(pj.log(1 + pj.exp(p["a"] @ x))),
                        rng.normal(size=12), {"a": rng.normal(size=(30, 12)) / 4}),
            "exp_reducer": ("full", lambda x, p: pj.sum(pj.exp(x), axis=1), rng.random((8, 8)), {}),
            "small_batch_jacobian": ("batch", lambda x, p: x * x, np.array([[1., 2.], [3., 4.]]), {}),
            "small_jacobian": ("full", lambda x, p: x * x * x, np.array([[1., 2.], [3., 4.]]), {})}
    return {name: (kind, f, x.astype(dtype), {k: v.astype(dtype) for k, v in p.items()})
            for name, (kind, f, x, p) in work.items()}


def _tape(kind: str, fwd, params: dict):
    """x -> the Jacobian (or Hessian) of fwd(x, Variables(params)), as compare.py takes it."""
    params = {k: pj.Variable(v) for k, v in params.items()}

    def run(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            if kind == "hessian":
                with pj.GradientTape() as inner:
                    inner.watch(x)
                    f = fwd(x, params)
                y = inner.gradient(f, x)
            else:
                y = fwd(x, params)
        return tape.batch_jacobian(y, x) if kind == "batch" else tape.jacobian(y, x)
    return run


def _workloads(dtype) -> dict:
    """name -> (function, its arguments) of every benchmark program, in `dtype`."""
    zoo, problems = _benchmark_module("zoo"), _benchmark_module("_scipy_solvers_problems")
    out = {f"zoo.{w.name}": (zoo.tape_jacobian(w, True), (w.x,)) for w in zoo.make_workloads(dtype)}
    out.update({f"compare.{name}": (_tape(kind, f, p), (x,))
                for name, (kind, f, x, p) in _compare_workloads(dtype).items()})
    rosen, x0 = problems.chained_rosenbrock, problems.rosen_start(50).astype(dtype)
    robertson = lambda y, t: pj.jacfwd(lambda z: problems.robertson(t, z))(y)    # noqa: E731
    brusselator, y0, _ = problems.brusselator(8)
    out.update({
        "scipy.rosenbrock_gradient": (pj.grad(rosen), (x0,)),
        "scipy.rosenbrock_hvp": (lambda x, v: pj.hvp(rosen, x, v)[1], (x0, np.cos(x0))),
        "scipy.curve_jacobian": (pj.jacfwd(problems.curve_residual),
                                 (problems.CURVE_X0.astype(dtype),)),
        "scipy.robertson_jacobian": (robertson, (np.array([0.9, 2e-5, 0.1], dtype),
                                                 np.asarray(0.0, dtype))),
        "scipy.brusselator_jacobian": (lambda y, t: pj.jacfwd(lambda z: brusselator(t, z))(y),
                                       (y0.astype(dtype), np.asarray(1.2, dtype)))})
    return out


NAMES = sorted(_workloads(np.float64))
QUICK = {"compare.seed_batch_jacobian": (np.float64, np.float32),
         "zoo.attention_batch": (np.float64,), "zoo.logreg_hessian": (np.float32,),
         "scipy.robertson_jacobian": (np.float64, np.float32),
         "scipy.rosenbrock_hvp": (np.float64,), "zoo.lj_hessian": ()}
COMPILED = [(name, dtype) for name in NAMES for dtype in (np.float64, np.float32)
            if os.environ.get("PFORJAC_TEST_NUMBA_WORKLOADS") == "all" or dtype in QUICK.get(name, ())]


def test_every_benchmark_program_lowers_whole():
    """The whole list at once, so that a failure names every program that does not lower."""
    failed = {}
    for name, (f, args) in _workloads(np.float64).items():
        try:
            numba_source(pj.function(f).program(*args))
        except Exception as e:     # NotLowered names the ops; anything else is a failure too
            failed[name] = f"{type(e).__name__}: {e}"
    assert not failed, failed


@pytest.mark.parametrize("name, dtype", COMPILED, ids=lambda v: getattr(v, "__name__", v))
def test_benchmark_program_on_numba_agrees_with_numpy(name, dtype):
    f, args = _workloads(dtype)[name]
    native = pj.function(f, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no fallback, no other warning
        got = np.asarray(native(*args))
    compiled, = native._cache.values()
    assert compiled.backend == "numba"
    want = np.asarray(pj.function(f, backend="numpy")(*args))
    assert got.dtype == want.dtype == dtype and got.shape == want.shape
    scale = np.abs(want).max()
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(got, want, rtol=64 * eps, atol=64 * eps * scale)
    if dtype == np.float64 and JAX_VALUES.exists():
        with np.load(JAX_VALUES) as stored:
            if name in stored:
                np.testing.assert_allclose(got, stored[name], rtol=1e-10, atol=1e-10 * scale)
