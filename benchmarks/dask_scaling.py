"""pforjac.dask on a LocalCluster of 1 and 2 worker processes (1 thread each, loopback only).

Four workloads, each timed end to end as a user runs it (tracing on the client, shipping
the plan, the tasks, the result):
- a compute-bound Jacobian: R^256 -> R^5000 through a 512-wide tanh cell unrolled 80 times,
  reverse mode in chunks of 250 rows, gathered to the client (`compute`) and left on the
  cluster (`persist`); against the in-process `pforjac.jacobian(..., parallel_iterations=250)`;
- per-example Jacobians of a data set of a million rows (8 features -> 64 -> 4), made on
  the cluster (`dask.array.random`) in blocks of 62,500 rows and reduced there to each
  example's Frobenius norm; against the in-process batch_jacobian of the same blocks;
- the overhead on a small Jacobian (R^64 -> R^512), against the in-process call;
- a Jacobian larger than any worker's memory limit (16000 x 12000 float64, 1.4 GiB, on
  workers of 1 GiB each), reduced on the cluster to its column norms (or written with
  `to_zarr` where zarr is installed).

    python benchmarks/dask_scaling.py            # writes results/dask_scaling.md (~3 min)
    python benchmarks/dask_scaling.py --quick    # small sizes, one run each: does it run?
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")    # the client's in-process baseline too

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine_header, markdown_table, write_result  # noqa: E402

import pforjac as pj  # noqa: E402

SIZES = {"full": dict(n_in=256, width=512, depth=80, n_out=5000, k=250, rows=1_000_000,
                      block=62_500, big=(16000, 12000), big_limit="1GiB", reps=3),
         "quick": dict(n_in=64, width=128, depth=4, n_out=1000, k=100, rows=100_000,
                       block=25_000, big=(3000, 2000), big_limit="300MiB", reps=1)}


def deep_net(n_in: int, width: int, depth: int, n_out: int, seed: int = 0):
    """x -> head @ h_depth, h_k = tanh(W h_(k-1) + U x): a recurrent cell unrolled `depth`
    times, one shared W. Each Jacobian row costs `depth` products by W (compute-bound),
    while the plan shipped to the workers holds W, U and the head once."""
    rng = np.random.default_rng(seed)
    u = pj.constant(rng.standard_normal((width, n_in)) / np.sqrt(n_in))
    w = pj.constant(rng.standard_normal((width, width)) / np.sqrt(width))
    head = pj.constant(rng.standard_normal((n_out, width)) / np.sqrt(width))

    def f(x):
        drive = u @ x
        h = pj.tanh(drive)
        for _ in range(depth - 1):
            h = pj.tanh(w @ h + drive)
        return head @ h
    return f, rng.standard_normal(n_in)


def per_example_mlp(seed: int = 1):
    rng = np.random.default_rng(seed)
    w1 = pj.constant(rng.standard_normal((8, 64)) / np.sqrt(8))
    w2 = pj.constant(rng.standard_normal((64, 4)) / 8)
    return lambda x: pj.tanh(pj.tanh(x @ w1) @ w2)


def best(fn, reps: int) -> float:
    """The median wall time of `fn()` over `reps` runs (after one warm-up run)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def in_process(s: dict, f, x, k: int, xs, g) -> dict:
    def per_example():
        for start in range(0, xs.shape[0], s["block"]):
            xb = pj.constant(xs[start:start + s["block"]])
            with pj.GradientTape() as tape:
                tape.watch(xb)
                y = g(xb)
            j = tape.batch_jacobian(y, xb).numpy()
            np.sqrt((j * j).sum(axis=(1, 2)))
    small_f, small_x = deep_net(64, 128, 2, 512, seed=2)
    return {"deep": best(lambda: pj.jacobian(f, x, vectorize=True, parallel_iterations=k),
                         s["reps"]),
            "per_example": best(per_example, s["reps"]),
            "small": best(lambda: pj.jacobian(small_f, small_x, vectorize=True,
                                              parallel_iterations=128), s["reps"])}


def cluster(n_workers: int, memory_limit: str):
    from distributed import Client, LocalCluster
    c = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                     dashboard_address=None, worker_dashboard_address=None,
                     memory_limit=memory_limit)
    return c, Client(c)


def on_cluster(s: dict, f, x, k: int, xd, g, client) -> dict:
    import dask.array as da
    import pforjac.dask as pjd
    from distributed import wait
    small_f, small_x = deep_net(64, 128, 2, 512, seed=2)

    def persisted():
        J = pjd.jacobian(f, x, chunk_size=k).persist()
        wait(J)
        del J

    xd = xd.persist()             # the data set lives on the cluster
    wait(xd)

    def per_example():
        J = pjd.batch_jacobian(g, xd)
        da.sqrt((J * J).sum(axis=(1, 2))).compute()
    return {"deep": best(lambda: pjd.jacobian(f, x, chunk_size=k).compute(), s["reps"]),
            "deep_persist": best(persisted, s["reps"]),
            "per_example": best(per_example, s["reps"]),
            "small": best(lambda: pjd.jacobian(small_f, small_x, chunk_size=128).compute(),
                          s["reps"])}


def larger_than_memory(s: dict) -> tuple[str, float]:
    import dask.array as da
    import pforjac.dask as pjd
    n, m = s["big"]
    f, x = deep_net(m, 16, 1, n, seed=3)
    c, client = cluster(2, s["big_limit"])
    try:
        J = pjd.jacobian(f, x, chunk_size=500)
        t0 = time.perf_counter()
        try:
            import zarr  # noqa: F401
            where = tempfile.mkdtemp()
            J.to_zarr(os.path.join(where, "J.zarr"))
            shutil.rmtree(where)
            how = "written with to_zarr"
        except ImportError:
            da.sqrt((J * J).sum(axis=0)).compute()
            how = "reduced to its column norms (zarr is not installed)"
        elapsed = time.perf_counter() - t0
    finally:
        client.close()
        c.close()
    return (f"{n} x {m} float64 ({J.nbytes / 2**30:.2f} GiB) on 2 workers of {s['big_limit']} "
            f"each, {how}"), elapsed


def report(s: dict, base: dict, runs: dict, big: tuple) -> str:
    rows = []
    names = {"deep": f"Jacobian {s['n_out']} x {s['n_in']} of a {s['depth']}-step recurrent "
                     f"net (compute-bound), gathered",
             "deep_persist": "the same, left on the cluster (persist)",
             "per_example": f"per-example Jacobians of {s['rows']:,} rows, reduced",
             "small": "small Jacobian 512 x 64 (overhead)"}
    for key, label in names.items():
        one, two = runs[1][key], runs[2][key]
        ref = base.get(key, base["deep"] if key == "deep_persist" else None)
        rows.append([label, f"{ref:.3f}", f"{one:.3f}", f"{two:.3f}", f"{one / two:.2f}x",
                     f"{one / ref:.2f}x"])
    table = markdown_table(["workload", "in-process s", "1 worker s", "2 workers s",
                            "1 -> 2 workers", "1 worker / in-process"], rows)
    return (f"# pforjac.dask: 1 and 2 workers (LocalCluster, processes, 1 thread each)\n\n"
            f"{machine_header()}\n\n{table}\n\nMedian of {s['reps']} runs after a warm-up. "
            f"Larger than a worker's memory: {big[0]}: {big[1]:.2f} s.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one run each")
    s = SIZES["quick" if parser.parse_args().quick else "full"]
    import dask
    import dask.array as da
    # the plan (its weights: 23 MiB here) is in the graph once: distributed's warning about
    # large graphs, meant for data repeated in many tasks, says nothing here
    dask.config.set({"distributed.admin.large-graph-warning-threshold": "1GiB"})
    f, x = deep_net(s["n_in"], s["width"], s["depth"], s["n_out"])
    g = per_example_mlp()
    xd = da.random.default_rng(0).standard_normal((s["rows"], 8), chunks=(s["block"], 8))
    base = in_process(s, f, x, s["k"], xd.compute(scheduler="sync"), g)
    runs = {}
    for n_workers in (1, 2):
        c, client = cluster(n_workers, "4GiB")
        try:
            runs[n_workers] = on_cluster(s, f, x, s["k"], xd, g, client)
        finally:
            client.close()
            c.close()
    text = report(s, base, runs, larger_than_memory(s))
    print(text)
    if s is SIZES["full"]:
        print("written to", write_result("dask_scaling.md", text))


if __name__ == "__main__":
    main()
