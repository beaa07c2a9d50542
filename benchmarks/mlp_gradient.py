"""tape.gradient of an MLP loss vs the same forward+backward written by hand in numpy.

MLP 784 -> 256 -> 128 -> 10, tanh, softmax cross-entropy via log_softmax, batch 256,
float32, weights and biases as pj.Variable. Both sides compute the loss and its
gradient w.r.t. all six parameters per repetition; the ratio of the medians is the
engine's overhead over hand-written numpy (target: <= 2.0).

    python benchmarks/mlp_gradient.py [--reps N] [--batch B]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine_header, markdown_table, time_reps, write_result  # noqa: E402

import pforjac as pj  # noqa: E402

F32 = np.float32
SIZES = [(784, 256), (256, 128), (128, 10)]


def make_params(rng):
    params = []
    for i, o in SIZES:
        params.append((rng.standard_normal((i, o)).astype(F32) * F32(i ** -0.5), np.zeros(o, F32)))
    return params


def pforjac_loss_and_grads(x, onehot, variables):
    with pj.GradientTape() as tape:
        h = x
        for k, (w, b) in enumerate(variables):
            h = pj.matmul(h, w) + b
            if k < len(variables) - 1:
                h = pj.tanh(h)
        loss = -pj.sum(onehot * pj.log_softmax(h, axis=-1)) / float(x.shape[0])
    flat = [v for wb in variables for v in wb]
    return loss, tape.gradient(loss, flat)


def numpy_loss_and_grads(x, onehot, params):
    (w1, b1), (w2, b2), (w3, b3) = params
    n = x.shape[0]
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    logits = h2 @ w3 + b3
    shifted = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    logp = shifted - lse
    loss = -(onehot * logp).sum() / F32(n)
    dlogits = (np.exp(logp) - onehot) / F32(n)
    dw3, db3 = h2.T @ dlogits, dlogits.sum(axis=0)
    dz2 = (dlogits @ w3.T) * (1 - h2 * h2)
    dw2, db2 = h1.T @ dz2, dz2.sum(axis=0)
    dz1 = (dz2 @ w2.T) * (1 - h1 * h1)
    dw1, db1 = x.T @ dz1, dz1.sum(axis=0)
    return loss, [dw1, db1, dw2, db2, dw3, db3]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=30, help="timed repetitions per side (median)")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--no-write", action="store_true", help="don't write results/mlp_gradient.md")
    args = p.parse_args(argv)

    rng = np.random.default_rng(0)
    params = make_params(rng)
    x_np = rng.standard_normal((args.batch, 784)).astype(F32)
    onehot_np = np.eye(10, dtype=F32)[rng.integers(0, 10, args.batch)]
    x, onehot = pj.constant(x_np), pj.constant(onehot_np)
    variables = [(pj.Variable(w), pj.Variable(b)) for w, b in params]

    loss_pj, grads_pj = pforjac_loss_and_grads(x, onehot, variables)
    loss_np, grads_np = numpy_loss_and_grads(x_np, onehot_np, params)
    names = ["W1", "b1", "W2", "b2", "W3", "b3"]
    diffs = []
    for name, a, b in zip(names, grads_pj, grads_np):
        a = np.asarray(a.numpy())
        if a.shape != b.shape or a.dtype != b.dtype:
            raise AssertionError(f"{name}: pforjac {a.dtype}{a.shape} vs numpy {b.dtype}{b.shape}")
        rel = float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))
        if rel > 1e-4:
            raise AssertionError(f"{name}: gradients disagree, max rel diff {rel:.3g}")
        diffs.append(rel)
    loss_diff = abs(float(loss_pj) - float(loss_np))

    t_pj, times_pj = time_reps(lambda: pforjac_loss_and_grads(x, onehot, variables), args.reps,
                               warmup=3)
    t_np, times_np = time_reps(lambda: numpy_loss_and_grads(x_np, onehot_np, params), args.reps,
                               warmup=3)
    ratio = t_pj / t_np
    header = machine_header()
    print(header)
    print(f"loss {float(loss_pj):.6f} (|pforjac - numpy| = {loss_diff:.2g}); max relative "
          f"gradient difference {max(diffs):.2g} over {', '.join(names)}")
    table = markdown_table(
        ["what", "batch", "reps", "median ms", "min ms", "max ms"],
        [["pforjac tape.gradient (forward + backward)", args.batch, args.reps, f"{t_pj * 1e3:.2f}",
          f"{min(times_pj) * 1e3:.2f}", f"{max(times_pj) * 1e3:.2f}"],
         ["hand-written numpy (forward + backward)", args.batch, args.reps, f"{t_np * 1e3:.2f}",
          f"{min(times_np) * 1e3:.2f}", f"{max(times_np) * 1e3:.2f}"]])
    verdict = "meets" if ratio <= 2.0 else "MISSES"
    summary = f"ratio of medians pforjac / numpy = {ratio:.2f} ({verdict} the <= 2.0 target)"
    print(table)
    print(summary)
    if not args.no_write:
        text = (f"# MLP gradient: pforjac tape.gradient vs hand-written numpy\n\n"
                f"`python benchmarks/mlp_gradient.py --reps {args.reps} --batch {args.batch}`\n\n"
                f"{header}\n\nMLP 784-256-128-10, tanh, softmax cross-entropy (log_softmax), "
                f"float32, gradient w.r.t. all weights and biases (pj.Variable). Gradients agree "
                f"with numpy to a max relative difference of {max(diffs):.2g}.\n\n{table}\n\n"
                f"{summary}\n")
        print("wrote", write_result("mlp_gradient.md", text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
