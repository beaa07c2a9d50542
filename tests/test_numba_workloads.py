"""Every program of the benchmarks (benchmarks/zoo.py's 21 workloads, compare.py's, and the
derivatives scipy's solvers call in benchmarks/scipy_solvers.py) lowers to numba whole, with
no fallback and no warning, and computes what the numpy backend computes, to a few ulps in
float64 and float32 (summation orders differ: the tolerance scales with the result's
largest value), and, in float64, what JAX computes (tests/data/numba_workloads_jax.npz,
made by tests/data/make_numba_workloads_jax.py with the oracle's JAX).

Compile time: numba compiles a program of tens of equations in seconds (rnn16's 262 in
about a minute on the 2-core development VM), so the suite compiles four (the rules the
others use are checked one by one in test_numba_lowering.py);
PFORJAC_TEST_NUMBA_WORKLOADS=all compiles every one, in both dtypes. Whether every program
lowers is checked without compiling, for all of them."""
import os
import pathlib
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import pforjac as pj
from numba_workloads import benchmark_module, compare_workloads, scipy_problems
from pforjac.compiled.numba_codegen import numba_source

numba = pytest.importorskip("numba")

JAX_VALUES = pathlib.Path(__file__).resolve().parent / "data" / "numba_workloads_jax.npz"
PJ_OPS = SimpleNamespace(sigmoid=pj.sigmoid, tanh=pj.tanh, sin=pj.sin, exp=pj.exp, log=pj.log,
                         sum=pj.sum)


def _tape(kind: str, fwd, params: dict):
    """x -> the Jacobian (or Hessian) of fwd(x, Variables(params)), as compare.py takes it."""
    params = {k: pj.Variable(v) for k, v in params.items()}

    def run(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            if kind == "hessian":
                with pj.GradientTape() as inner:
                    inner.watch(x)
                    f = fwd(PJ_OPS, x, params)
                y = inner.gradient(f, x)
            else:
                y = fwd(PJ_OPS, x, params)
        return tape.batch_jacobian(y, x) if kind == "batch" else tape.jacobian(y, x)
    return run


def _workloads(dtype) -> dict:
    """name -> (function, its arguments) of every benchmark program, in `dtype`."""
    zoo = benchmark_module("zoo")
    out = {f"zoo.{w.name}": (zoo.tape_jacobian(w, True), (w.x,)) for w in zoo.make_workloads(dtype)}
    out.update({f"compare.{name}": (_tape(kind, f, p), (x,))
                for name, (kind, f, x, p) in compare_workloads(dtype).items()})
    derivative = {"grad": pj.grad, "jacfwd": pj.jacfwd,
                  "hvp": lambda f: (lambda x, v: pj.hvp(f, x, v)[1])}
    out.update({f"scipy.{name}": (derivative[kind](f), args)
                for name, (kind, f, args) in scipy_problems(pj.numpy, dtype).items()})
    return out


NAMES = sorted(_workloads(np.float64))
QUICK = {"compare.seed_batch_jacobian": (np.float64,), "scipy.rosenbrock_hvp": (np.float64,),
         "scipy.robertson_jacobian": (np.float64, np.float32)}
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


def test_a_matrix_holding_nan_runs_that_call_on_the_numpy_code():
    """numba's LAPACK bindings refuse NaN and inf; numpy's propagate them: such a call runs
    the numpy code (eigvalsh's own kernel gives NaN itself), and the next call is native."""
    def f(a):
        return pj.numpy.linalg.det(a) + pj.sum(pj.numpy.linalg.eigvalsh(a))
    native, numpy = pj.function(f, backend="numba"), pj.function(f, backend="numpy")
    a = np.array([[2.0, 0.5, 0.0], [0.5, 3.0, 0.1], [0.0, 0.1, 1.5]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(native(a), numpy(a), rtol=1e-14)
        bad = a.copy()
        bad[1, 1] = np.nan
        with np.errstate(invalid="ignore"):
            assert np.isnan(native(bad)) and np.isnan(numpy(bad))
        np.testing.assert_allclose(native(2 * a), numpy(2 * a), rtol=1e-14)
    compiled, = native._cache.values()
    assert compiled.backend == "numba"
