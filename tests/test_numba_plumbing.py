"""The backend choice reaches everything that compiles: the loop cache of eager jacobians
and pforjac.sparse's prepared passes run native code when `pforjac.config.backend` (or
their `backend=` argument) says "numba", and their results agree with the numpy
backend's to a few ulps. (pforjac.function's own backend: test_numba_backend.py.)"""
import contextlib
import pickle
import warnings

import numpy as np
import pytest

import pforjac as pj
import pforjac.sparse as pjs
from pforjac import extend
from pforjac.compiled import loopcache
from pforjac.testing import isolated_registries

numba = pytest.importorskip("numba")
pytest.importorskip("scipy")

_W = np.random.default_rng(3).normal(size=(5, 4)) / 2


@contextlib.contextmanager
def _backend(name):
    saved = pj.config.backend
    pj.config.backend = name
    try:
        yield
    finally:
        pj.config.backend = saved


def _eager_jacobian(x, op=pj.tanh):
    with pj.GradientTape() as g:
        g.watch(x)
        y = op(x @ _W) * 2.0 + x[:, :4]
    return g.batch_jacobian(y, x).numpy()


def _counting(code, calls):
    def run(*args):
        calls.append(1)
        return code(*args)
    return run


@pytest.mark.unverified            # the cache's own course: compiled at the second sighting
def test_the_loop_cache_compiles_for_the_configured_backend_and_runs_it():
    loopcache.clear_cache()
    x = pj.constant(np.random.default_rng(0).normal(size=(3, 5)))
    with loopcache.caching(False):
        want = _eager_jacobian(x)
    with _backend("numba"), warnings.catch_warnings():
        warnings.simplefilter("error")       # the whole body lowers: no fallback warning
        for _ in range(2):                   # seen once, then compiled
            _eager_jacobian(x)
        info = loopcache.cache_info()
        assert info["compiled"] == info["numba"] == 1
        entry, = loopcache._cache.values()
        assert entry.backend == "numba" and hasattr(entry.code, "dispatcher")
        calls = []
        entry.code = _counting(entry.code, calls)
        got = _eager_jacobian(x)
    assert calls == [1]                      # the native code made this result
    assert loopcache.close_in_ulps(got, want)
    for _ in range(2):                       # the backend is part of the key: numpy code now
        np.testing.assert_array_equal(_eager_jacobian(x), want)
    info = loopcache.cache_info()
    assert info["compiled"] == 2 and info["numba"] == 1


def test_verifying_compares_native_cached_code_to_a_few_ulps():
    loopcache.clear_cache()
    x = pj.constant(np.random.default_rng(1).normal(size=(3, 5)))
    before = loopcache.verify_info()["compared"]
    with _backend("numba"), loopcache.verifying():
        got = _eager_jacobian(x)
        assert loopcache.cache_info()["numba"] == 1
    assert loopcache.verify_info()["compared"] == before + 1
    with loopcache.caching(False):
        np.testing.assert_array_equal(got, _eager_jacobian(x))   # the caller's: uncached
    a = np.array([1.0, np.nan, 1e300])
    assert loopcache.close_in_ulps(a * (1 + 4e-16), a)
    assert not loopcache.close_in_ulps(a * (1 + 1e-13), a)
    assert not loopcache.close_in_ulps(np.array([1.0, 2.0, 3.0]), a)       # NaN moved
    assert not loopcache.close_in_ulps(a[:2].astype(np.float32), a[:2])    # dtype


@pytest.mark.unverified
def test_a_cached_body_numba_cannot_take_runs_numpy_code_with_one_warning():
    with isolated_registries():
        square = extend.defop("test_plumbing_square", lambda x: x * x, extend.same_shape,
                              vjp=lambda g, ans, x: g * 2.0 * x, elementwise=True,
                              domain=("real",), pure_rules=True)
        cube = extend.defop("test_plumbing_cube", lambda x: x * x * x, extend.same_shape,
                            vjp=lambda g, ans, x: g * 3.0 * square(x), elementwise=True,
                            domain=("real",), pure_rules=True)     # (in the cached backward)
        loopcache.clear_cache()
        x = pj.constant(np.random.default_rng(2).normal(size=(3, 5)))
        with loopcache.caching(False):
            want = _eager_jacobian(x, cube)
        with _backend("numba"), pytest.warns(RuntimeWarning) as record:
            results = [_eager_jacobian(x, cube) for _ in range(3)]
        messages = [str(w.message) for w in record if "numba" in str(w.message)]
        assert len(messages) == 1 and "test_plumbing_square" in messages[0], messages
        assert "cached code" in messages[0]
        entry, = loopcache._cache.values()
        assert entry.backend != "numba"         # numpy code, whole or between numba segments
        assert loopcache.cache_info()["numba"] == (entry.backend != "numpy")
        for got in results:
            assert loopcache.close_in_ulps(got, want, ulps=0 if entry.backend == "numpy" else 16)


def _pairs(x):
    return x[:-1] * x[1:] + pj.sin(x[:-1])


_PAIRS = np.eye(6, dtype=bool)[:5] | np.eye(6, k=1, dtype=bool)[:5]


def _close(a, b):
    return loopcache.close_in_ulps(a.toarray(), b.toarray()) and \
        np.array_equal(a.indices, b.indices) and np.array_equal(a.indptr, b.indptr)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_prepared_jacobians_run_on_the_backend_asked_for(mode):
    x = np.linspace(0.1, 1.2, 6)
    native = pjs.prepare_jacobian(_pairs, x, mode=mode, sparsity=_PAIRS, backend="numba")
    numpy = pjs.prepare_jacobian(_pairs, x, mode=mode, sparsity=_PAIRS, backend="numpy")
    assert (native.backend, numpy.backend) == ("numba", "numpy")
    entry, = native._compiled._cache.values()
    calls = []
    entry.code = _counting(entry.code, calls)
    for point in (x, x[::-1] + 0.5):
        assert _close(native(point), numpy(point))
    assert calls == [1, 1]
    again = pickle.loads(pickle.dumps(native))      # keeps its backend
    assert again.backend == "numba" and _close(again(x), numpy(x)) and again.backend == "numba"


def test_the_configured_backend_is_read_at_preparation_and_an_argument_wins():
    x = np.linspace(0.1, 1.2, 6)
    with _backend("numba"):
        p = pjs.prepare_jacobian(_pairs, x, mode="forward", sparsity=_PAIRS)
        explicit = pjs.prepare_jacobian(_pairs, x, mode="forward", sparsity=_PAIRS,
                                        backend="numpy")
    assert (p.backend, explicit.backend) == ("numba", "numpy")
    assert pickle.loads(pickle.dumps(p))._backend == "numba"    # (pinned at preparation)
    with pytest.raises(ValueError, match="prepare_hessian: backend: unknown backend 'cuda'"):
        pjs.prepare_hessian(lambda v: pj.sum(v * v), x, backend="cuda")


def _chain_energy(x):
    return pj.sum(x[1:] * x[:-1] ** 2) + pj.sum(pj.cos(x))


def test_prepared_hessians_and_ode_jacobians_run_native_code():
    x = np.linspace(-1.0, 1.0, 7)
    native = pjs.prepare_hessian(_chain_energy, x, backend="numba")
    numpy = pjs.prepare_hessian(_chain_energy, x, backend="numpy")
    assert (native.backend, numpy.backend) == ("numba", "numpy")
    assert _close(native(x + 0.3), numpy(x + 0.3))

    def rhs(t, y):
        return pj.concat([-t * y[:1], y[:-1] * y[1:]], 0)
    with _backend("numba"):
        ode = pjs.prepare_ode_jacobian(rhs, 0.5, x)
    assert ode.backend == "numba"
    want = np.zeros((7, 7))
    want[0, 0] = -0.25                           # d(-t y0)/dy0 at t = 0.25
    for k in range(1, 7):                        # d(y[k-1] y[k]) / dy[k-1], dy[k]
        want[k, k - 1], want[k, k] = x[k], x[k - 1]
    np.testing.assert_allclose(ode.scipy_jac()(0.25, x).toarray(), want, rtol=1e-15)


def _plans(array, kind):
    """The chunk programs a dask array's graph holds (its plan key)."""
    values = dict(array.__dask_graph__()).values()
    return [v for v in values if isinstance(v, kind)]


def test_dask_chunk_programs_run_native_code_in_the_clients_process():
    dask = pytest.importorskip("dask")
    import pforjac.dask as pjd
    from pforjac.dask.artifact import ChunkProgram
    from pforjac.dask.programs import JacobianPlan
    x = np.linspace(0.2, 1.0, 5)

    def f(v):
        return pj.tanh(_W.T @ v) * pj.sum(v * v)
    native = pjd.jacobian(f, x, chunk_size=2, backend="numba")
    (plan,) = _plans(native, JacobianPlan)
    (program,) = plan.programs.values()               # (4 rows: two chunks of 2)
    assert program.backend == "numba"
    calls = []
    program._native = _counting(program._native, calls)
    with dask.config.set(scheduler="synchronous"):
        got = native.compute()
        want = pjd.jacobian(f, x, chunk_size=2, backend="numpy").compute()
    assert calls == [1, 1] and loopcache.close_in_ulps(got, want)
    cloudpickle = pytest.importorskip("cloudpickle")   # (how dask ships a plan)
    shipped = cloudpickle.loads(cloudpickle.dumps(program))   # another process: numpy code
    assert shipped.backend == "numpy"
    np.testing.assert_array_equal(shipped(np.arange(2, 4, dtype=np.int32))[0], want[2:4])
    with _backend("numba"):
        per_example = pjd.batch_jacobian(lambda v: pj.sin(v) * 2.0, np.ones((4, 3)), chunk_size=2)
    (programs,) = _plans(per_example, dict)
    assert [p.backend for p in programs.values()] == ["numba"]
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_allclose(per_example.compute()[3], np.diag(2.0 * np.cos(np.ones(3))),
                                   rtol=1e-15)
    with pytest.raises(ValueError, match="pforjac.dask.jacobian: backend: unknown backend"):
        pjd.jacobian(f, x, backend="cuda")
    assert isinstance(program, ChunkProgram)


def test_an_elementwise_result_a_broadcast_reads_is_computed_once_not_per_copy():
    from pforjac.compiled.numba_codegen import numba_source
    f = pj.function(lambda a, b: pj.tanh(a + 1.0) * b, backend="numba")
    a, b = np.linspace(-1.0, 1.0, 4), np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(f(a, b), np.tanh(a + 1.0) * b, rtol=1e-15)
    lines = numba_source(f.program(a, b)).splitlines()
    tanh = [k for k, line in enumerate(lines) if "np.tanh" in line]
    add = [k for k, line in enumerate(lines) if " + v_" in line]      # (a + 1.0: an operator)
    product = [k for k, line in enumerate(lines) if "range(3)" in line]
    # tanh of the (4,) values is computed in the loop of its add (fused with it), before
    # the (3, 4) product's loops, not inside them (which would compute it once per row)
    assert len(tanh) == 1 and len(add) == 1 and len(product) == 1
    assert add[0] < tanh[0] < product[0]
    assert "range(4)" in [line for line in lines[:tanh[0]] if "for " in line][-1]
