"""The numba backend of pforjac.function: results agree with the numpy backend to a few
ulps on the compiled workloads, in float64 and float32; an op without a lowering rule, or
a program numba refuses, runs on numpy with one warning naming it; a second process loads
the compiled code from the disk cache. (The per-primitive lowering table:
test_numba_lowering.py.)"""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import extend
from pforjac.compiled import numba_backend, numba_lowering
from pforjac.config import _Config
from pforjac.testing import isolated_registries

numba = pytest.importorskip("numba")


def _tanh_mlp_jacobian(x, w1, w2):
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.tanh(pj.tanh(x @ w1) @ w2)
    return g.batch_jacobian(y, x)


def _rosenbrock(x):
    return pj.numpy.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def _robertson(y):
    return pj.numpy.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                           0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                           3e7 * y[1] ** 2])


def _chain(x):
    return pj.exp(-x * x) * pj.sin(3.0 * x) + pj.log1p(x * x) / (1.0 + pj.cos(x) ** 2)


def _hessian_of(x):
    return pj.numpy.sum(pj.sin(x) * x ** 3)


_rng = np.random.default_rng(0)
_W1, _W2 = _rng.normal(size=(5, 8)) / 2, _rng.normal(size=(8, 3)) / 3
WORKLOADS = {
    "tanh_mlp_batch_jacobian": (lambda x: _tanh_mlp_jacobian(x, _W1.astype(x.dtype), _W2.astype(x.dtype)),
                                _rng.normal(size=(4, 5))),
    "rosenbrock_gradient": (pj.grad(_rosenbrock), np.linspace(-1.0, 1.5, 50)),
    "robertson_jacobian": (pj.jacrev(_robertson), np.array([0.9, 2e-5, 0.1])),
    "elementwise_chain": (_chain, _rng.uniform(-2, 2, size=(6, 7))),
    "hessian": (pj.hessian(_hessian_of), _rng.uniform(-1, 1, size=5)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_numba_agrees_with_numpy_to_a_few_ulps(name, dtype):
    f, x = WORKLOADS[name]
    x = x.astype(dtype)
    native = pj.function(f, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no fallback: the whole program lowers
        got = native(x)
    want = pj.function(f, backend="numpy")(x)
    compiled, = native._cache.values()
    assert compiled.backend == "numba"
    assert type(got) is np.ndarray and got.dtype == want.dtype == dtype and got.shape == want.shape
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(got, want, rtol=16 * eps, atol=16 * eps * np.abs(want).max())


def test_the_default_backend_is_settable_once_and_checked(monkeypatch):
    monkeypatch.setenv("PFORJAC_BACKEND", "numba")
    assert _Config().backend == "numba"
    monkeypatch.setenv("PFORJAC_BACKEND", "cuda")
    with pytest.raises(ValueError, match="PFORJAC_BACKEND.*'cuda'"):
        _Config()
    with pytest.raises(ValueError, match="pforjac.function.*'numbaa'"):
        pj.function(np.sin, backend="numbaa")
    saved = pj.config.backend
    try:
        pj.config.backend = "numba"
        f = pj.function(_chain)
        f(np.ones(3))
        assert next(iter(f._cache.values())).backend == "numba"
    finally:
        pj.config.backend = saved


def _cube_op():
    return extend.defop("test_numba_cube", lambda x: x * x * x, extend.same_shape,
                        vjp=lambda g, ans, x: g * 3.0 * x * x, elementwise=True,
                        domain=("real",))


def test_an_op_without_a_numba_rule_runs_between_numba_segments_with_one_warning():
    with isolated_registries():
        cube = _cube_op()
        f = pj.function(lambda x: pj.sin(cube(x)) + 1.0, backend="numba")
        x = np.linspace(-1, 1, 5)
        with pytest.warns(RuntimeWarning, match="no numba lowering.*test_numba_cube.*between "
                                                "numba segments") as record:
            got = f(x)
            f(x + 1.0)                           # (the same trace: no second warning)
            f(x[:3])                             # (a new trace of the same function: none)
        assert len([w for w in record if "numba" in str(w.message)]) == 1
        compiled = f._cache[next(iter(f._cache))]
        assert compiled.backend == "numba+numpy"
        assert [s.native for s in compiled.code.segments] == [False, True]
        np.testing.assert_array_equal(got, np.sin(x ** 3) + 1.0)


def test_a_program_numba_refuses_runs_on_numpy_with_the_cause():
    with isolated_registries():
        cube = _cube_op()
        numba_lowering.numba_rules[cube.prim] = lambda ctx, eqn, args: f"np.no_such_function({args[0]})"
        try:
            f = pj.function(lambda x: cube(x) * 2.0, backend="numba")
            with pytest.warns(RuntimeWarning, match="numba could not compile it.*no_such_function"):
                got = f(np.arange(3.0))
        finally:
            del numba_lowering.numba_rules[cube.prim]
        np.testing.assert_array_equal(got, 2.0 * np.arange(3.0) ** 3)


_CACHED_RUN = textwrap.dedent("""
    import sys, numpy as np, pforjac as pj
    print("numba" in sys.modules)           # (import pforjac does not start numba)
    from pforjac.compiled import numba_backend
    if sys.argv[1] == "load":      # the second process: no source generated, no numba compile
        numba_backend.numba_source = numba_backend.declined_equations = None
        numba_backend.numba_index.record = None
    f = pj.function(pj.grad(lambda x: pj.numpy.sum(pj.sin(x) * x)), backend="numba")
    print(np.round(f(np.linspace(0.0, 1.0, 4)), 12).tolist())
    stats = next(iter(f._cache.values())).code.dispatcher.stats
    print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()))
""")


def test_a_second_process_loads_the_compiled_code_from_the_disk_cache(tmp_path):
    env = dict(os.environ, PFORJAC_CACHE_DIR=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)        # numba's own variable would move the files elsewhere
    runs = [subprocess.run([sys.executable, "-c", _CACHED_RUN, step], env=env, capture_output=True,
                           text=True, check=True).stdout.splitlines() for step in ("compile", "load")]
    x = np.linspace(0.0, 1.0, 4)
    assert runs[0][0] == runs[1][0] == "False"
    assert runs[0][1] == runs[1][1] == str(np.round(np.cos(x) * x + np.sin(x), 12).tolist())
    assert runs[0][2] == "0 1" and runs[1][2] == "1 0"      # compiled, then loaded
    assert list((tmp_path / "numba" / "__pycache__").glob("pj_*.nbi"))
    assert len(list((tmp_path / "numba" / "index").iterdir())) == 1


_BROKEN_RUN = textwrap.dedent("""
    import warnings, numpy as np, pforjac as pj
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = pj.function(pj.grad(lambda x: pj.numpy.sum(pj.sin(x) ** 2)))
        print(f(np.linspace(0.0, 1.0, 5))[1])
    print(len(caught), caught[0].message if caught else "")
""")


def test_a_numba_that_fails_to_import_leaves_the_numpy_backend_with_a_warning(tmp_path):
    """numba found but failing to import (a build for another numpy): a function on the
    configured numba backend runs on numpy, with one warning naming the import's error."""
    (tmp_path / "numba").mkdir()
    (tmp_path / "numba" / "__init__.py").write_text('raise ImportError("Numba needs NumPy 1.x")\n')
    env = dict(os.environ, PFORJAC_BACKEND="numba", PFORJAC_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", _BROKEN_RUN], env=env, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert abs(float(out[0]) - np.sin(2 * 0.25)) <= 4e-16      # (the numpy backend: d sin^2 = sin 2x)
    assert out[1].startswith("1 ") and "numba cannot be imported (ImportError: Numba needs NumPy 1.x)" in out[1]


def test_variables_are_read_at_every_call_and_guards_refuse_nan_as_on_numpy():
    w = pj.Variable(np.linspace(0.5, 1.5, 4))
    f = pj.function(lambda x: pj.tanh(x * w) * 2.0, backend="numba")
    x = np.linspace(-1.0, 1.0, 4)
    np.testing.assert_allclose(f(x), np.tanh(x * w.numpy()) * 2.0, rtol=1e-15)
    w.assign(np.full(4, 3.0))
    np.testing.assert_allclose(f(x), np.tanh(x * 3.0) * 2.0, rtol=1e-15)
    assert next(iter(f._cache.values())).backend == "numba"
    hessian, x = WORKLOADS["hessian"]
    x = x.copy()
    x[1] = np.nan                           # the structure guards refuse it: the dense twin runs
    native, numpy = pj.function(hessian, backend="numba"), pj.function(hessian, backend="numpy")
    np.testing.assert_array_equal(native(x), numpy(x))
    compiled, = native._cache.values()
    assert compiled.backend == "numba" and compiled.dense is not None


def test_no_writable_numba_cache_leaves_the_numpy_backend_with_a_warning(monkeypatch, tmp_path):
    """numba's cache needs a directory it can write (the generated module's, else one under
    the home directory): where it finds none, importing the module fails, and the function
    runs on numpy with a warning saying what to set."""
    def refuse(digest, path):
        raise RuntimeError(f"cannot cache function 'program': no locator available for file '{path}'")
    monkeypatch.setattr(numba_backend, "_module", refuse)
    monkeypatch.setenv("PFORJAC_CACHE_DIR", str(tmp_path))
    f = pj.function(pj.grad(lambda x: pj.numpy.sum(x ** 3)), backend="numba")
    with pytest.warns(RuntimeWarning, match="numba cannot cache its code under .*no locator.*PFORJAC_CACHE_DIR"):
        got = f(np.arange(3.0))
    np.testing.assert_array_equal(got, 3.0 * np.arange(3.0) ** 2)
    assert next(iter(f._cache.values())).backend == "numpy"
