"""Small per-op loops, the shape of autograd's rnn/lstm examples, under HIPS autograd and
under pforjac.autograd: `python benchmarks/autograd_loops.py [--autograd-python PY]
[--rounds 5]`.

The loop is 50 steps of `h = tanh(dot(h, W) + b)` on a (1, 20) state, then `sum(h)`:
150 small ops. Timed: its gradient with respect to W (`grad`), and the loop itself on
numpy arrays outside any derivative (`forward`), where autograd calls numpy directly.
Each round runs both libraries, one process each, one after the other; the table gives
each library's median over rounds of its best-of-20 time, and the time per op.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPS = 50


def worker(which: str) -> dict:
    import timeit

    import numpy as onp
    if which == "autograd":
        import autograd.numpy as np
        from autograd import grad
    else:
        import pforjac.autograd.numpy as np
        from pforjac.autograd import grad
    rs = onp.random.RandomState(0)
    W, b, x0 = rs.randn(20, 20) * 0.3, rs.randn(20), rs.randn(1, 20)

    def loop(W):
        h = x0
        for _ in range(STEPS):
            h = np.tanh(np.dot(h, W) + b)
        return np.sum(h)
    gradient = grad(loop)
    value = float(onp.sum(gradient(W)))
    return {"grad": min(timeit.repeat(lambda: gradient(W), number=1, repeat=20)),
            "forward": min(timeit.repeat(lambda: loop(W), number=1, repeat=20)),
            "check": value}


def run(python: str, which: str) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([python, os.path.abspath(__file__), "--worker", which],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--autograd-python", default="/work/oracle/bin/python")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    pythons = {"autograd": args.autograd_python, "pforjac.autograd": sys.executable}
    results: dict = {name: [] for name in pythons}
    for _ in range(args.rounds):
        for name, python in pythons.items():
            results[name].append(run(python, name))
    checks = {name: rs[0]["check"] for name, rs in results.items()}
    print(f"gradients agree: {abs(checks['autograd'] - checks['pforjac.autograd']) < 1e-9} "
          f"({checks})\n")
    print("| library | grad ms | grad us/op | forward ms | forward us/op |")
    print("| --- | --- | --- | --- | --- |")
    for name, rs in results.items():
        g = statistics.median(r["grad"] for r in rs)
        f = statistics.median(r["forward"] for r in rs)
        ops = 3 * STEPS
        print(f"| {name} | {g * 1e3:.2f} | {g / ops * 1e6:.1f} | {f * 1e3:.3f} | "
              f"{f / ops * 1e6:.2f} |")


if __name__ == "__main__":
    main()
