"""The eager (recording tape) gradient of the chained Rosenbrock at n=50 next to autograd's:
`pj.grad(rosen)(x)` with `rosen` written in plain numpy (numpy dispatch) and with
`pforjac.numpy`, and `autograd.grad` of the same function.

Each variant runs in a worker process that times one block of calls when asked; every
round asks each worker once, in turn, so a load spike on this shared machine hits them
alike. `--before DIR` adds the same pforjac variants run from another checkout (DIR, its
root: a commit to compare against), in the same rounds. Figures are medians over the
rounds of the per-call CPU time of the worker (a descheduled process does not count it).

Run: python benchmarks/eager_grad.py [--rounds 9] [--calls 300] [--before /path/to/checkout]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _common import machine_header  # noqa: E402

ORACLE = "/work/oracle/bin/python"

WORKER = textwrap.dedent("""
    import gc, sys, time
    import numpy as onp
    which = sys.argv[1]
    if which == "autograd":
        import autograd, autograd.numpy as np
        grad = autograd.grad
    else:
        sys.path.insert(0, sys.argv[2])
        import pforjac as pj
        np = onp if which == "numpy dispatch" else pj.numpy
        grad = pj.grad

    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    g, x = grad(rosen), onp.linspace(-1.0, 1.5, 50)
    d = onp.zeros_like(x)                               # the closed form, to check
    d[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    d[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    assert onp.allclose(g(x), d, rtol=1e-12, atol=1e-12), which
    print(type(g(x)).__name__, flush=True)
    for line in sys.stdin:
        n = int(line)
        g(x)
        gc.disable()
        c = time.process_time()
        for _ in range(n):
            g(x)
        c = time.process_time() - c
        gc.enable()
        print(c / n, flush=True)
""")


class Worker:
    def __init__(self, python: str, which: str, root: str = ROOT):
        self.proc = subprocess.Popen([python, "-c", WORKER, which, root], cwd=root,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.result_type = self.proc.stdout.readline().strip()

    def time(self, n: int) -> float:
        self.proc.stdin.write(f"{n}\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def workers(before: str | None) -> dict:
    out = {}
    for label, root in [("pforjac", ROOT)] + ([("pforjac before", before)] if before else []):
        for which in ("numpy dispatch", "pforjac.numpy"):
            out[f"{label}, {which}"] = Worker(sys.executable, which, os.path.abspath(root))
    if os.path.exists(ORACLE):
        out["autograd"] = Worker(ORACLE, "autograd")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--before", help="the root of another pforjac checkout to compare")
    args = parser.parse_args()
    print(f"# {machine_header()}")
    ws = workers(args.before)
    times: dict = {name: [] for name in ws}
    try:
        for _ in range(args.rounds):
            for name, w in ws.items():
                times[name].append(w.time(args.calls))
    finally:
        for w in ws.values():
            w.close()
    print(f"# chained Rosenbrock n=50, grad per call: median CPU us over {args.rounds} "
          f"interleaved rounds of {args.calls} calls (min)")
    for name, ts in times.items():
        print(f"  {name:<36} {statistics.median(ts) * 1e6:8.1f}  ({min(ts) * 1e6:.1f})  "
              f"returns {ws[name].result_type}")


if __name__ == "__main__":
    main()
