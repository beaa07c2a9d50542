"""Forward mode vs reverse mode for `pforjac.jacobian`, on a tall and a wide Jacobian.

Reverse mode costs one vjp per output entry, forward mode one jvp per input
entry; pfor runs all of them at once, but the work still scales with the
number of rows (reverse) or columns (forward). The same three-layer network
(widths n_in -> 64 -> 512 -> n_out) is timed as R^8 -> R^4096 (tall: forward should win) and as R^4096 -> R^8 (wide:
reverse should win). What is timed is the whole `jacobian(func, x, ...)` call:
running func, tracing the body, vectorizing it, reshaping the result.

    python benchmarks/fwd_vs_rev.py             # writes results/fwd_vs_rev.md
    python benchmarks/fwd_vs_rev.py --reps 3 --no-loop
"""
from __future__ import annotations

import argparse
import os
import sys

# One BLAS thread unless told otherwise, set before numpy loads OpenBLAS (as loop_vs_pfor.py does).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine_header, markdown_table, time_reps, write_result  # noqa: E402

import pforjac as pj  # noqa: E402

HIDDEN = 64
WIDE = 512


def network(n_in: int, n_out: int, rng):
    """x -> W3 tanh(W2 tanh(W1 x + b1)) * sigmoid(sum(...)): a small MLP from R^n_in to R^n_out.

    The middle layer is wider than either end, so neither mode can shortcut: a reverse
    row (or forward column) costs a pass through every layer, and the mode with fewer
    rows or columns does less work (pfor's one-hot structure already turns the first
    product of either pass into a row lookup).
    """
    w1 = pj.constant(rng.standard_normal((HIDDEN, n_in)) / np.sqrt(n_in))
    b1 = pj.constant(rng.standard_normal(HIDDEN))
    w2 = pj.constant(rng.standard_normal((WIDE, HIDDEN)) / np.sqrt(HIDDEN))
    w3 = pj.constant(rng.standard_normal((n_out, WIDE)) / np.sqrt(WIDE))

    def f(x):
        h = pj.tanh(w2 @ pj.tanh(w1 @ x + b1))
        return pj.sin(w3 @ h) * pj.sigmoid(pj.sum(h))
    return f, rng.standard_normal(n_in)


MODES = [("forward (pfor)", dict(vectorize=True, strategy="forward-mode")),
         ("reverse (pfor)", dict(vectorize=True, strategy="reverse-mode")),
         ("reverse (row loop)", dict(vectorize=False, strategy="reverse-mode"))]


def run_case(n_in: int, n_out: int, reps: int, with_loop: bool, rng) -> list[str]:
    f, x = network(n_in, n_out, rng)
    results, times = {}, {}
    for label, mode in MODES:
        if not with_loop and not mode["vectorize"]:
            continue
        loop = not mode["vectorize"]
        times[label], _ = time_reps(lambda: pj.jacobian(f, x, **mode), 1 if loop and n_out > 64 else reps,
                                    warmup=0 if loop else 1)
        results[label] = pj.jacobian(f, x, **mode).numpy()
    first = next(iter(results.values()))
    for label, J in results.items():
        np.testing.assert_allclose(J, first, rtol=1e-9, atol=1e-12, err_msg=label)
    fwd, rev = times["forward (pfor)"], times["reverse (pfor)"]
    row = [f"R^{n_in} -> R^{n_out}", f"{n_out}x{n_in}"]
    row += [f"{times[label] * 1e3:,.1f}" if label in times else "-" for label, _ in MODES]
    winner = "forward" if fwd < rev else "reverse"
    row.append(f"{winner}, {max(fwd, rev) / min(fwd, rev):.1f}x")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--no-loop", action="store_true", help="skip the (slow) row-loop column")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = [run_case(8, 4096, args.reps, not args.no_loop, rng),
            run_case(4096, 8, args.reps, not args.no_loop, rng)]
    header = ["function", "Jacobian", *[f"{label} ms" for label, _ in MODES], "faster mode"]
    table = markdown_table(header, rows)
    text = (f"# Forward vs reverse mode: `pforjac.jacobian`, median wall time (ms)\n\n"
            f"{machine_header()}\n\n"
            f"float64 MLP `sin(W3 h) * sigmoid(sum(h))`, `h = tanh(W2 tanh(W1 x + b1))`, "
            f"widths n_in -> {HIDDEN} -> {WIDE} -> n_out; the whole `jacobian(f, x, ...)` call is timed; median of {args.reps} "
            f"runs (1 for the 4096-row loop). All modes give the same Jacobian (checked).\n\n"
            f"{table}\n\n"
            f"Forward mode does one jvp per input entry, reverse mode one vjp per output "
            f"entry: choose `strategy=\"forward-mode\"` (with `vectorize=True`) when the "
            f"inputs have fewer entries than the outputs, reverse mode otherwise.\n")
    print(text)
    print("wrote", write_result("fwd_vs_rev.md", text))


if __name__ == "__main__":
    main()
