"""Per-example gradients of an MLP with a dict of parameters: pforjac, JAX and torch.func.

    pj.function(pj.vmap(pj.grad(loss), in_axes=(None, 0, 0)))
    jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))
    torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))     (eager: no compile)

on the workloads of `_per_example_workloads.py` (small: 451 parameters, batch 64;
medium: 2,632 parameters, batch 256; float32 and float64). JAX and torch run in their own
Pythons as workers (`_per_example_worker.py`) that answer timing commands, so that every
round times the three in turn (medians over interleaved rounds); their gradients are
checked against pforjac's before timing.

    python benchmarks/per_example.py [--rounds R] [--reps N]
        [--jax-python /work/oracle/bin/python] [--torch-python /work/torchvenv/bin/python]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

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


def pforjac_runs() -> dict:
    per_example = pj.function(pj.vmap(pj.grad(w.make_loss(np)), in_axes=(None, 0, 0)))
    runs = {}
    for config in w.CONFIGS:
        args = w.make(*config)
        runs[config] = lambda args=args: per_example(*args)
        runs[config]()
    return runs


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


def time_pforjac(run, reps: int) -> float:
    import time
    start = time.perf_counter()
    for _ in range(reps):
        run()
    return (time.perf_counter() - start) / reps


def measure(runs: dict, workers: list, rounds: int, reps: int) -> dict:
    times = {(c, lib): [] for c in runs for lib in ["pforjac"] + [x.library for x in workers]}
    for _ in range(rounds):
        for config, run in runs.items():
            settle_threads()
            times[(config, "pforjac")].append(time_pforjac(run, reps))
            for worker in workers:
                settle_threads()
                times[(config, worker.library)].append(worker.ask("time", *config, reps)["seconds"])
    return ({key: statistics.median(t) for key, t in times.items()},
            {key: min(t) for key, t in times.items()})


def table(medians: dict, best: dict, libraries: list) -> str:
    """Medians, their ratios, and the ratio of the best rounds (less sensitive to load)."""
    rows = []
    for size, dtype in w.CONFIGS:
        layers, batch = w.SIZES[size]
        us = {lib: medians[((size, dtype), lib)] * 1e6 for lib in libraries}
        row = [f"{size} ({w.n_params(layers):,} params, batch {batch})", dtype]
        row += [f"{us[lib]:,.0f}" for lib in libraries]
        row += [f"{us['pforjac'] / us[lib]:.2f}x" for lib in libraries[1:]]
        row += [f"{best[((size, dtype), 'pforjac')] / best[((size, dtype), lib)]:.2f}x"
                for lib in libraries[1:]]
        rows.append(row)
    names = {"pforjac": "pforjac function(vmap(grad)) us", "jax": "JAX jit(vmap(grad)) us",
             "torch": "torch.func vmap(grad) us"}
    header = ["MLP", "dtype"] + [names[lib] for lib in libraries] + \
        [f"pforjac / {lib}" for lib in libraries[1:]] + \
        [f"best rounds, pforjac / {lib}" for lib in libraries[1:]]
    return markdown_table(header, rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--jax-python", default="/work/oracle/bin/python")
    parser.add_argument("--torch-python", default="/work/torchvenv/bin/python")
    args = parser.parse_args()
    runs = pforjac_runs()
    workers, skipped = [], []
    for library, python in (("jax", args.jax_python), ("torch", args.torch_python)):
        if not os.path.exists(python):
            skipped.append(f"{library} (no {python})")
            continue
        workers.append(Worker(library, python))
        check(workers[-1], runs)
    medians, best = measure(runs, workers, args.rounds, args.reps)
    for worker in workers:
        worker.close()
    libraries = ["pforjac"] + [x.library for x in workers]
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg())
    skipped = f" Skipped: {', '.join(skipped)}." if skipped else ""
    text = (f"# Per-example gradients: vmap(grad) of an MLP loss\n\n{machine_header()}\n\n"
            f"Medians of {args.rounds} interleaved rounds of {args.reps} calls; gradients "
            f"checked equal before timing; load average at the end {load}.{skipped}\n\n"
            f"{table(medians, best, libraries)}\n")
    print(text)
    print("written to", write_result("per_example.md", text))


if __name__ == "__main__":
    main()
