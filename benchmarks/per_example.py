"""Per-example gradients of an MLP with a dict of parameters: pforjac, JAX and torch.func.

    pj.function(pj.vmap(pj.grad(loss), in_axes=(None, 0, 0)))
    jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))     (eager: no compile)

on the workloads of `_per_example_workloads.py` (small: 451 parameters, batch 64;
medium: 2,632 parameters, batch 256; float32 and float64), pforjac on its numpy backend and,
where numba is installed, on its numba backend (`backend="numba"`). JAX and torch run in their own
Pythons as workers (`_per_example_worker.py`) that answer timing commands, so that every
round times the three in turn (medians over interleaved rounds); their gradients are
checked against pforjac's before timing.

    python benchmarks/per_example.py [--rounds R] [--reps N] [--threads T]
        [--jax-python /work/oracle/bin/python] [--torch-python /work/torchvenv/bin/python]

`--threads T` gives every library T threads (BLAS, OpenMP, XLA's Eigen pool off for 1,
numba) and pins the process and its workers to T cores, as compare.py does: on a loaded
machine one pinned thread each is the steadier comparison.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile



def _threads(argv) -> int | None:
    """`--threads T`, set in the environment (and the cores pinned) before numpy loads."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--threads", type=int, default=None)
    threads = parser.parse_known_args(argv)[0].threads
    if threads is None:
        return None
    if threads < (os.cpu_count() or 1) and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:threads]))
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        os.environ[var] = str(threads)
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false").strip()
    return threads


THREADS = _threads(sys.argv[1:])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blas_env  # noqa: E402
_blas_env.use_openblas_own_kernel()

import numpy as np  # noqa: E402

from _common import machine_header, markdown_table, settle_threads, write_result  # noqa: E402
import _per_example_workloads as w  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pforjac as pj  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Worker:
    """A library's worker process (see `_per_example_worker.py`)."""

    def __init__(self, library: str, python: str):
        self.library = library
        worker = os.path.join(HERE, "_per_example_worker.py")
        self.proc = subprocess.Popen([python, worker, library], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self._reply()                                          # {"ready": library}

    def _reply(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.library} worker stopped (see its stderr above)")
        return json.loads(line)

    def ask(self, *words) -> dict:
        self.proc.stdin.write(" ".join(str(x) for x in words) + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def pforjac_runs(backend: str = "numpy") -> dict:
    per_example = pj.function(pj.vmap(pj.grad(w.make_loss(np)), in_axes=(None, 0, 0)),
                              backend=backend)
    runs = {}
    for config in w.CONFIGS:
        args = w.make(*config)
        runs[config] = lambda args=args: per_example(*args)
        runs[config]()
    return runs


def numba_runs(runs: dict) -> dict | None:
    """The numba backend's runs, checked equal to the numpy backend's (float32: to 1e-5,
    float64: to 1e-12); None without numba."""
    import importlib.util
    if importlib.util.find_spec("numba") is None:
        return None
    theirs = pforjac_runs("numba")
    for config, run in theirs.items():
        tol = 1e-5 if config[1] == "float32" else 1e-12
        ours = runs[config]()
        for k, v in run().items():
            np.testing.assert_allclose(v, ours[k], rtol=tol, atol=tol, err_msg=f"numba {config} {k}")
    return theirs


def check(worker: Worker, runs: dict) -> None:
    """The worker's gradients equal pforjac's (float32: to 1e-4, float64: to 1e-10)."""
    with tempfile.TemporaryDirectory() as tmp:
        for (size, dtype), run in runs.items():
            path = os.path.join(tmp, f"{size}_{dtype}.npz")
            worker.ask("grads", size, dtype, path)
            theirs, ours = np.load(path), run()
            tol = 1e-4 if dtype == "float32" else 1e-10
            for k in theirs.files:
                np.testing.assert_allclose(np.asarray(ours[k]), theirs[k], rtol=tol, atol=tol,
                                           err_msg=f"{worker.library} {size} {dtype} {k}")


def time_pforjac(run, reps: int) -> dict:
    """Wall-clock and process CPU time per call, as the workers report theirs."""
    import time
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(reps):
        run()
    return {"seconds": (time.perf_counter() - start) / reps, "cpu": (time.process_time() - cpu) / reps}


def measure(runs: dict, workers: list, rounds: int, reps: int, numba: dict | None) -> tuple:
    """(medians, best rounds, CPU-time medians) per (config, library)."""
    ours = ["pforjac"] + (["numba"] if numba else [])
    times = {(c, lib): [] for c in runs for lib in ours + [x.library for x in workers]}
    for _ in range(rounds):
        for config, run in runs.items():
            settle_threads()
            times[(config, "pforjac")].append(time_pforjac(run, reps))
            if numba:
                settle_threads()
                times[(config, "numba")].append(time_pforjac(numba[config], reps))
            for worker in workers:
                settle_threads()
                times[(config, worker.library)].append(worker.ask("time", *config, reps))
    return ({key: statistics.median(t["seconds"] for t in ts) for key, ts in times.items()},
            {key: min(t["seconds"] for t in ts) for key, ts in times.items()},
            {key: statistics.median(t["cpu"] for t in ts) for key, ts in times.items()})


_NAMES = {"pforjac": "pforjac function(vmap(grad))", "numba": "pforjac, numba backend",
          "jax": "JAX jit(vmap(grad))", "torch": "torch.func vmap(grad)"}


def table(medians: dict, best: dict, cpu: dict, ours: list, theirs: list) -> str:
    """Medians, the ratios of ours to JAX's (the target), of the best rounds and of the
    median CPU time per call (the last two less sensitive to load)."""
    pairs = [(a, b) for a in ours for b in theirs if b == "jax"]
    rows = []
    for size, dtype in w.CONFIGS:
        layers, batch = w.SIZES[size]
        key = (size, dtype)
        row = [f"{size} ({w.n_params(layers):,} params, batch {batch})", dtype]
        row += [f"{medians[(key, lib)] * 1e6:,.0f}" for lib in ours + theirs]
        row += [f"{medians[(key, a)] / medians[(key, b)]:.2f}x" for a, b in pairs]
        row += [f"{best[(key, a)] / best[(key, b)]:.2f}x" for a, b in pairs]
        row += [f"{cpu[(key, a)] / cpu[(key, b)]:.2f}x" for a, b in pairs]
        rows.append(row)
    header = ["MLP", "dtype"] + [f"{_NAMES[lib]} us" for lib in ours + theirs] + \
        [f"{a} / {b}" for a, b in pairs] + [f"best rounds, {a} / {b}" for a, b in pairs] + \
        [f"CPU time, {a} / {b}" for a, b in pairs]
    return markdown_table(header, rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--jax-python", default="/work/oracle/bin/python")
    parser.add_argument("--torch-python", default="/work/torchvenv/bin/python")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for every library, and as many cores pinned")
    args = parser.parse_args()
    header = machine_header()            # (its load average is the one at the start)
    runs = pforjac_runs()
    numba = numba_runs(runs)
    workers = []
    skipped = [] if numba else ["pforjac's numba backend (no numba)"]
    for library, python in (("jax", args.jax_python), ("torch", args.torch_python)):
        if not os.path.exists(python):
            skipped.append(f"{library} (no {python})")
            continue
        workers.append(Worker(library, python))
        check(workers[-1], runs)
    medians, best, cpu = measure(runs, workers, args.rounds, args.reps, numba)
    for worker in workers:
        worker.close()
    ours = ["pforjac"] + (["numba"] if numba else [])
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    skipped = f" Skipped: {', '.join(skipped)}." if skipped else ""
    text = (f"# Per-example gradients: vmap(grad) of an MLP loss\n\n{header}\n\n"
            f"Medians of {args.rounds} interleaved rounds of {args.reps} calls"
            f"{'' if THREADS is None else f', {THREADS} thread(s) each, pinned'}; gradients "
            f"checked equal before timing; load average at the end {load}.{skipped}\n\n"
            f"{table(medians, best, cpu, ours, [x.library for x in workers])}\n")
    print(text)
    print("written to", write_result("per_example.md", text))


if __name__ == "__main__":
    main()
