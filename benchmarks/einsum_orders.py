"""einsum of three or more operands: pforjac's planned contraction order vs numpy's.

For named contractions (chains, a bilinear form, a batched chain, a cubic feature map's
gradients as pfor makes them) and random ones (3-4 operands over letters a-f, sizes 1-64,
at most 2M index points), it times pforjac's einsum (`pforjac.ops.linalg._einsum_impl`:
the order `contraction_order` plans once per shapes) against `np.einsum(optimize=True)`
(numpy's greedy path, planned on every call) and one `np.einsum` call, side by side, and
checks the values agree. Median of several repetitions; prints the geometric mean and the
worst of pforjac's time over numpy's.

    python benchmarks/einsum_orders.py [--random N] [--seed S] [--no-write]
"""
from __future__ import annotations

import argparse
import math
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine_header, markdown_table, time_reps, write_result  # noqa: E402

from pforjac.ops._einsum_plan import contraction_order  # noqa: E402
from pforjac.ops.linalg import _einsum_impl  # noqa: E402


def named(rng) -> list[tuple[str, list[np.ndarray]]]:
    f32 = lambda *s: rng.standard_normal(s, dtype=np.float32)  # noqa: E731
    f64 = lambda *s: rng.standard_normal(s)  # noqa: E731
    a, ad = f32(128, 4), f32(8, 128, 4, 4, 4)
    return [("abijk,bj,bk->abi", [ad, a, a]), ("abijk,bi,bk->abj", [ad, a, a]),
            ("abijk,bi,bj->abk", [ad, a, a]), ("bi,bj,bk->bijk", [a, a, a]),
            ("ij,jk,kl->il", [f64(30, 40), f64(40, 50), f64(50, 5)]),
            ("ij,jk,kl->il", [f64(200, 300), f64(300, 100), f64(100, 50)]),
            ("bij,bjk,bkl->bil", [f64(32, 16, 16)] * 3),
            ("bi,ij,bj->b", [f64(256, 256)] * 3), ("ijk,k,j->i", [f64(30, 40, 50), f64(50), f64(40)])]


def random_cases(rng, count: int, seed: int) -> list[tuple[str, list[np.ndarray]]]:
    r, cases = random.Random(seed), []
    while len(cases) < count:
        size = {c: r.choice([1, 2, 3, 5, 8, 16, 32, 64]) for c in "abcdef"}
        ins = ["".join(r.sample("abcdef", r.randint(1, 4))) for _ in range(r.choice([3, 3, 4]))]
        letters = "".join(dict.fromkeys("".join(ins)))
        if math.prod(size[c] for c in letters) > 2_000_000:
            continue
        out = "".join(c for c in letters if r.random() < 0.4)
        cases.append((",".join(ins) + "->" + out,
                      [rng.standard_normal([size[c] for c in s]).astype(np.float32) for s in ins]))
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--random", type=int, default=120, help="random contractions (default 120)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-write", action="store_true", help="print only, don't write results/einsum_orders.md")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    cases = [(s, xs, "named") for s, xs in named(rng)] + \
        [(s, xs, "random") for s, xs in random_cases(rng, args.random, args.seed)]
    rows, ratios = [], {"named": [], "random": []}
    for spec, xs, kind in cases:
        order = contraction_order(spec, tuple(x.shape for x in xs))
        ours, want = _einsum_impl(*xs, subscripts=spec), np.einsum(spec, *xs, optimize=True)
        scale = max(1.0, float(np.abs(want).max(initial=0)))
        tol = 1e-4 if want.dtype == np.float32 else 1e-10
        ok = ours.shape == want.shape and bool(np.allclose(ours, want, rtol=tol, atol=tol * scale))
        reps = dict(reps=7, min_time=0.1, max_reps=2000)
        t_ours, _ = time_reps(lambda: _einsum_impl(*xs, subscripts=spec), **reps)
        t_numpy, _ = time_reps(lambda: np.einsum(spec, *xs, optimize=True), **reps)
        t_one, _ = time_reps(lambda: np.einsum(spec, *xs), **reps) if math.prod(
            d for x in xs for d in x.shape) < 1e9 else (float("nan"), None)
        ratios[kind].append(t_ours / t_numpy)
        rows.append([kind, f"`{spec}`", " ".join(str(x.shape) for x in xs), str(order or "one call"),
                     f"{t_ours * 1e3:.4f}", f"{t_numpy * 1e3:.4f}", f"{t_one * 1e3:.4f}",
                     f"{t_ours / t_numpy:.2f}", "ok" if ok else "MISMATCH"])
    summary = []
    for kind, r in ratios.items():
        if r:
            summary.append(f"{kind} ({len(r)}): geometric mean of pforjac/numpy "
                           f"{math.exp(sum(map(math.log, r)) / len(r)):.2f}, best {min(r):.2f}, worst {max(r):.2f}")
    text = "\n".join([
        "# einsum of three or more operands: planned order vs numpy", "",
        f"`python benchmarks/einsum_orders.py --random {args.random} --seed {args.seed}`", "",
        machine_header(), "",
        "Median ms of >= 7 calls (>= 0.1 s each); `numpy optimize` is `np.einsum(optimize=True)`, "
        "`numpy one call` is `np.einsum` without it.", "",
        *[f"- {s}" for s in summary], "",
        markdown_table(["kind", "subscripts", "shapes", "pforjac order", "pforjac ms", "numpy optimize ms",
                        "numpy one call ms", "pforjac / numpy optimize", "values"], rows), ""])
    print(text)
    if not args.no_write:
        print("wrote", write_result("einsum_orders.md", text))


if __name__ == "__main__":
    main()
