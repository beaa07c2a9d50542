"""The numba backend's parallel elementwise loops: an elementwise chain of at least
`pforjac.config.parallel_min_size` elements runs in a helper compiled with
`parallel=True`, whose results equal the serial code's bit for bit (no reduction is
split across threads); the thread count is `pforjac.config.num_threads`, read at every
call; one thread, or a smaller array, compiles no parallel loop."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_codegen import numba_source, parallel_helpers
from pforjac.config import _Config

numba = pytest.importorskip("numba")


def _chain(x, y):
    z = x * y
    return pj.exp(-z) + pj.cos(y) ** 2, pj.numpy.sum(z)


@pytest.fixture
def settings():
    saved = pj.config.num_threads, pj.config.parallel_min_size
    yield pj.config
    pj.config.num_threads, pj.config.parallel_min_size = saved


def _code(f):
    return next(iter(f._cache.values())).code


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba runs one thread here")
def test_large_elementwise_loops_run_in_parallel_with_the_serial_results(settings):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, (40, 50)), rng.uniform(0, 1, 50)     # y: broadcast along rows
    settings.parallel_min_size = 1000
    settings.num_threads = 1                    # one thread: the serial code
    serial = pj.function(_chain, backend="numba")
    want = serial(x, y)
    settings.num_threads = 2
    parallel = pj.function(_chain, backend="numba")
    got = parallel(x, y)
    assert not _code(serial).parallel and _code(parallel).parallel
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]                    # the sum is not split across threads
    settings.num_threads = 1                    # read at the call
    np.testing.assert_array_equal(parallel(x, y)[0], want[0])
    assert numba.get_num_threads() == 1
    settings.num_threads = numba.config.NUMBA_NUM_THREADS + 1
    with pytest.raises(ValueError, match="pforjac.config.num_threads is .*NUMBA_NUM_THREADS"):
        parallel(x, y)
    settings.num_threads = None
    parallel(x, y)
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS


def test_small_arrays_stay_serial_and_any_broadcast_runs_in_parallel(settings):
    f = pj.function(_chain, backend="numpy")
    f(np.ones((40, 50)), np.ones((40, 1)))          # y stretched along an axis of length 1
    program = next(iter(f._cache.values())).program
    assert parallel_helpers(numba_source(program, "p", None, 41)) == 2   # (z, and the sum of exp and cos)
    assert parallel_helpers(numba_source(program, "p", None, 2001)) == 0
    f(np.ones((40, 50)), np.ones(50))               # y broadcast as a row: parallel loops
    program = f._cache[next(reversed(f._cache))].program
    assert parallel_helpers(numba_source(program, "p", None, 51)) == 2   # (not y's 50 alone)
    assert parallel_helpers(numba_source(program, "p", None, 2001)) == 0  # (2000 elements)


def test_the_thread_settings_are_checked(monkeypatch):
    monkeypatch.setenv("PFORJAC_NUM_THREADS", "3")
    assert _Config().num_threads == 3
    monkeypatch.setenv("PFORJAC_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="PFORJAC_NUM_THREADS.*positive integer"):
        _Config()
    config = _Config.__new__(_Config)
    for bad in (0, -2, 1.5, True, "x"):
        with pytest.raises(ValueError, match="pforjac.config.num_threads"):
            config.num_threads = bad
    with pytest.raises(ValueError, match="parallel_min_size: expected a positive integer, got None"):
        config.parallel_min_size = None


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba runs one thread here")
def test_a_program_calling_blas_has_no_parallel_loops(settings):
    """BLAS's threads spin between its calls and take the cores a parallel loop's threads
    need: the same large chain gets its parallel helper alone, not after a product."""
    settings.num_threads = 2
    settings.parallel_min_size = 1000
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(200, 40)), rng.normal(size=(40, 40))

    def chain_alone(x, w):
        return pj.tanh(x * w[0]) * 2.0 + x

    def after_a_product(x, w):
        return pj.tanh((x @ w) * w[0]) * 2.0 + x
    for fn, helpers in ((chain_alone, 1), (after_a_product, 0)):
        f = pj.function(fn, backend="numba")
        np.testing.assert_allclose(f(x, w), pj.function(fn, backend="numpy")(x, w), rtol=1e-13, atol=1e-14)
        source = numba_source(f.program(x, w), "p", None, 1000)
        assert parallel_helpers(source) == helpers
        assert ("K.dot(" in source) == (helpers == 0)
        assert _code(f).parallel == bool(helpers)


def test_an_einsum_without_a_sum_keeps_the_parallel_loops(settings):
    """A program whose equations may call BLAS with the library's threads is generated
    serial first; one whose source then calls no BLAS (an einsum without a summed letter
    is a loop) is generated again with its parallel helper."""
    settings.num_threads = 2
    settings.parallel_min_size = 1000
    x = np.linspace(0.0, 1.0, 200 * 60).reshape(200, 60)

    def product_free(x):
        return pj.numpy.einsum("ij,ij->ij", x, x) * pj.tanh(x) + x
    f = pj.function(product_free, backend="numba")
    program = f.program(x)
    from pforjac.compiled.numba_codegen import _threaded_blas
    assert _threaded_blas(program)          # (the einsum's bound: 12,000 multiply-adds)
    calls = []
    source = numba_source(program, "p", None, 1000, calls)
    assert parallel_helpers(source) == 1 and "K.dot(" not in source
    np.testing.assert_allclose(f(x), pj.function(product_free, backend="numpy")(x), rtol=1e-14)


@pytest.mark.parametrize("fn", [
    lambda x, w: pj.tanh(x @ w),
    lambda x, w: pj.matmul(pj.numpy.reshape(x, (4, 50, 40)), w) * 2.0,
    lambda x, w: pj.numpy.einsum("ij,jk->ik", x, w),
    lambda x, w: pj.numpy.linalg.solve(w + 40.0 * pj.numpy.eye(40), pj.transpose(x)),
    lambda x, w: pj.numpy.linalg.slogdet(w @ pj.transpose(w) + pj.numpy.eye(40))[1] * x,
    lambda x, w: pj.numpy.linalg.pinv(x[:40]) @ w[:, :2],
])
def test_every_blas_call_comes_from_a_rule_giving_its_bound(fn):
    """The parallel loops are dropped by the rules' bounds alone: a rule whose code calls
    BLAS or LAPACK must give one (`lowers(..., blas=)`)."""
    from pforjac import core
    from pforjac.compiled.numba_codegen import _BLAS_CALL
    from pforjac.compiled.numba_lowering import blas_work
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(200, 40)), rng.normal(size=(40, 40))
    program = pj.function(fn, backend="numba").program(x, w)
    calling = [e.prim.name for e in program.equations
               if _BLAS_CALL.search(numba_source(_only(program, e), "p"))]
    assert calling and all(core.primitive_named(name) in blas_work for name in calling)


def _only(program, eqn):
    """A program of the one equation `eqn` of `program` (its inputs made the inputs)."""
    from pforjac.program import Program
    return Program(list(eqn.inputs), [], [], [eqn], list(eqn.outputs))
