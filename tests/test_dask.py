"""pforjac.dask on a real distributed.LocalCluster (two worker processes, loopback only),
started here once for the module and stopped at its end.

Results must equal the in-process call bit for bit, with the same chunking: a chunk of k
rows is the in-process `parallel_iterations=k` chunk, and a block of a per-example Jacobian
the in-process batch_jacobian of that block (BLAS may round products of other row counts
differently in their last bits).
"""
from __future__ import annotations

import os
import signal
import sys
import time

import numpy as np
import pytest

pytest.importorskip("dask.array", reason="pforjac[dask] is not installed")
distributed = pytest.importorskip("distributed", reason="pforjac[dask] is not installed")

import dask  # noqa: E402
import dask.array as da  # noqa: E402

import pforjac as pj  # noqa: E402
import pforjac.dask as pjd  # noqa: E402
from pforjac.dask import programs  # noqa: E402
from pforjac.memory import JacobianMemoryError  # noqa: E402

_MEMORY_LIMIT = 250 << 20         # per worker: below the dense result of the reduction test


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, worker_dashboard_address=None, memory_limit=_MEMORY_LIMIT)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _mlp(dtype, n_out=40, n_in=12, hidden=24, seed=0):
    rng = np.random.default_rng(seed)
    w1 = pj.constant(rng.standard_normal((hidden, n_in)).astype(dtype) / np.sqrt(n_in))
    w2 = pj.constant(rng.standard_normal((n_out, hidden)).astype(dtype) / np.sqrt(hidden))
    x = rng.standard_normal(n_in).astype(dtype)
    return (lambda v: pj.tanh(w2 @ pj.tanh(w1 @ v)) * pj.sum(v * v)), x


def _in_process(f, x, k, mode):
    strategy = "reverse-mode" if mode == "reverse" else "forward-mode"
    return np.asarray(pj.jacobian(f, x, vectorize=True, strategy=strategy, parallel_iterations=k))


def _scheduler_idle(client, timeout=5.0) -> bool:
    """No task known to the scheduler (nothing running, nothing held) within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode, k", [("reverse", 16), ("forward", 5)])
def test_jacobian_equals_the_in_process_chunks_bit_for_bit(client, dtype, mode, k):
    f, x = _mlp(dtype)
    J = pjd.jacobian(f, x, chunk_size=k, mode=mode)
    assert isinstance(J, da.Array) and J.shape == (40, 12) and J.dtype == dtype
    n = 40 if mode == "reverse" else 12
    assert J.npartitions == -(-n // k)
    got = J.compute()
    assert np.array_equal(got, _in_process(f, x, k, mode))


def test_shapes_of_several_axes_and_the_threaded_scheduler(client):
    rng = np.random.default_rng(3)
    w = pj.constant(rng.standard_normal((6, 3, 2)))
    x = rng.standard_normal((3, 2))

    def f(v):
        return pj.reshape(pj.sin(pj.sum(w * v, axis=(1, 2))), (2, 3)) * pj.sum(v)
    ref = _in_process(f, x, 4, "reverse")
    J = pjd.jacobian(f, x, chunk_size=4)
    assert J.shape == (2, 3, 3, 2)
    with dask.config.set(scheduler="threads"):         # no cluster: the default scheduler
        assert np.array_equal(J.compute(), ref)
    assert np.array_equal(J.compute(), ref)            # and the client's


def test_the_program_is_traced_once_and_shipped_once(client, monkeypatch):
    traces = []
    original = programs.trace_compiled
    monkeypatch.setattr(programs, "trace_compiled",
                        lambda *a, **k: traces.append(1) or original(*a, **k))
    f, x = _mlp(np.float64, n_out=200, n_in=300, hidden=64, seed=1)
    before = client.run(pjd.compile_count)
    J = pjd.jacobian(f, x, chunk_size=9)           # 22 chunks of 9 rows and one of 2
    assert len(traces) == 2                        # one program per chunk length
    graph = dict(J.__dask_graph__())
    plans = [getattr(v, "value", v) for v in graph.values()]      # (a DataNode or the object)
    plans = [v for v in plans if isinstance(v, programs.JacobianPlan)]
    assert len(plans) == 1 and J.npartitions == 23
    import cloudpickle
    plan_bytes = len(cloudpickle.dumps(plans[0]))
    assert plan_bytes > 64 * 300 * 8                # it holds the weights
    assert len(cloudpickle.dumps(graph)) < plan_bytes + 23 * 1024   # not once per task
    assert np.array_equal(J.compute(), _in_process(f, x, 9, "reverse"))
    compiled = {w: n - before[w] for w, n in client.run(pjd.compile_count).items()}
    assert sum(compiled.values()) >= 2 and all(n <= 2 for n in compiled.values()), compiled


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batch_jacobian_block_by_block(client, dtype):
    rng = np.random.default_rng(2)
    w = pj.constant(rng.standard_normal((5, 4)).astype(dtype))
    x = rng.standard_normal((23, 4)).astype(dtype)

    def f(v):
        return pj.tanh(v @ pj.transpose(w)) * pj.sum(v * v, axis=1, keepdims=True)
    xd = da.from_array(x, chunks=((10, 10, 3), (2, 2)))     # other axes: made one chunk
    J = pjd.batch_jacobian(f, xd)
    assert J.chunks == ((10, 10, 3), (5,), (4,)) and J.dtype == dtype
    blocks = []
    for s, e in ((0, 10), (10, 20), (20, 23)):
        xb = pj.constant(x[s:e])
        with pj.GradientTape() as tape:
            tape.watch(xb)
            y = f(xb)
        blocks.append(tape.batch_jacobian(y, xb).numpy())
    assert np.array_equal(J.compute(), np.concatenate(blocks))
    split = pjd.batch_jacobian(f, x, chunk_size=10)            # a numpy input: split by rows
    assert split.chunks[0] == (10, 10, 3)
    assert np.array_equal(split.compute(), np.concatenate(blocks))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_sparse_jacobian_by_colour_groups(client, dtype, mode):
    pjs = pytest.importorskip("pforjac.sparse", reason="pforjac.sparse is not on this branch")
    if not hasattr(pjs, "prepare_jacobian"):
        pytest.skip("pforjac.sparse.prepare_jacobian is not on this branch")
    rng = np.random.default_rng(8)
    n, width = 96, 8
    w = pj.constant(rng.standard_normal((width, width)).astype(dtype))
    x = rng.standard_normal(n).astype(dtype)

    def f(v):                       # block-diagonal, plus a dense column of v[0]
        return pj.reshape(pj.tanh(pj.reshape(v, (n // width, width)) @ w), (-1,)) * pj.exp(v[0])
    pattern = np.kron(np.eye(n // width), np.ones((width, width))) > 0
    pattern[:, 0] = True
    prepared = pjs.prepare_jacobian(f, x, mode=mode, sparsity=pattern)
    want = prepared(x)
    for k in (1, 3):
        got = pjd.sparse_jacobian(prepared, x, f, chunk_size=k)
        assert got.format == want.format and got.dtype == want.dtype
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
        assert np.array_equal(got.data, want.data)


def test_a_chunk_too_large_for_a_worker_names_the_chunk_size_to_use(client):
    rng = np.random.default_rng(4)
    w = pj.constant(rng.standard_normal((3000, 8)))
    x = rng.standard_normal(5000)

    def f(v):
        return w @ pj.tanh(pj.reshape(v, (8, 625)))[:, 0]
    with pytest.raises(JacobianMemoryError, match=r"chunk_size=\d+ \(or fewer\)") as e:
        pjd.jacobian(f, x, chunk_size=3000)         # 3000 x 5000 float64: 120 MB a chunk
    assert "3000 output rows" in str(e.value)
    assert _scheduler_idle(client)                  # nothing was submitted
    k = int(str(e.value).split("chunk_size=")[1].split()[0])
    assert 0 < k < 3000
    assert pjd.jacobian(f, x, chunk_size=k).npartitions == -(-3000 // k)   # accepted


def test_a_failed_computation_leaves_nothing_on_the_cluster(client):
    f, x = _mlp(np.float64, n_out=60, seed=7)

    def fails_on_the_third(block, block_info=None):
        if block_info[0]["chunk-location"][0] == 2:
            raise ArithmeticError("this chunk fails")
        return block
    J = pjd.jacobian(f, x, chunk_size=6).map_blocks(fails_on_the_third, dtype=np.float64)
    with pytest.raises(ArithmeticError, match="this chunk fails"):
        J.compute()
    assert _scheduler_idle(client)      # the other chunks and the plan released


def test_a_jacobian_larger_than_a_worker_reduces_on_the_cluster(client):
    n = m = 6000                                    # 288 MB dense, each worker 250 MiB
    hidden = 16
    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((hidden, m)) / np.sqrt(m)
    w2 = rng.standard_normal((n, hidden)) / np.sqrt(hidden)
    x = rng.standard_normal(m)
    t1, t2 = pj.constant(w1), pj.constant(w2)
    J = pjd.jacobian(lambda v: pj.tanh(t2 @ pj.tanh(t1 @ v)), x, chunk_size=500)
    assert J.nbytes > _MEMORY_LIMIT
    norms = da.sqrt((J * J).sum(axis=0)).compute()
    h = np.tanh(w1 @ x)                             # closed form: J = D2 W2 D1 W1
    g = (1 - np.tanh(w2 @ h) ** 2)[:, None] * w2 * (1 - h ** 2)[None, :]
    want = np.sqrt(np.einsum("ij,ik,kj->j", w1, g.T @ g, w1))
    assert np.allclose(norms, want, rtol=1e-10, atol=0)
    assert _scheduler_idle(client)


def test_a_worker_killed_mid_computation_is_survived(client):
    f, x = _mlp(np.float64, n_out=60, seed=6)
    ref = _in_process(f, x, 6, "reverse")

    def slow(block):                                # long enough to be killed during it
        time.sleep(0.4)
        return block
    J = pjd.jacobian(f, x, chunk_size=6).map_blocks(slow, dtype=np.float64)
    future = client.compute(J)
    pids = client.run(os.getpid)
    victim = _busy_worker(client)
    os.kill(pids[victim], signal.SIGKILL)
    assert np.array_equal(future.result(timeout=120), ref)
    del future
    assert _scheduler_idle(client)
    client.wait_for_workers(2, timeout=60)          # the nanny restarted it:
    assert pids[victim] not in client.run(os.getpid).values()   # a new process


def _busy_worker(client, timeout=30.0) -> str:
    """A worker that is running a task now."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = [w for w, keys in client.processing().items() if keys]
        if busy:
            time.sleep(0.1)
            return busy[0]
        time.sleep(0.02)
    raise AssertionError("no worker started a task")


def test_without_dask_the_error_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "pforjac.dask" or m.startswith("pforjac.dask.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r"pip install 'pforjac\[dask\]'"):
        import pforjac.dask  # noqa: F401
