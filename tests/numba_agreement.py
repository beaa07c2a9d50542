"""The numba backend against the numpy backend on the same programs: fuzzer programs
(tests/fuzz) and workloads of the compiled-function tests, each run through
`pforjac.function` on both backends and compared to a few ulps (of the result's
largest magnitude: summation order may differ). The test (test_numba_agreement.py) runs
a sample; `python -m tests.numba_agreement --programs 300` a longer profile, printing
every mismatch with its program.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

import pforjac as pj

ULPS = 16


def compare(got, want, dtype) -> str | None:
    """None if `got` equals `want` to ULPS ulps of the largest |want| (NaN where NaN, the
    same infinities), else what differs."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype} against {want.shape} {want.dtype}"
    finite = np.isfinite(want)
    if not np.array_equal(np.isnan(got), np.isnan(want)) or \
            not np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]):
        return "NaN or infinities differ"
    if not finite.any():
        return None
    eps = np.finfo(dtype).eps
    scale = np.abs(want[finite]).max()
    err = np.abs(got[finite].astype(np.float64) - want[finite])
    bad = err > ULPS * eps * np.maximum(np.abs(want[finite]), scale)
    if bad.any():
        return f"{int(bad.sum())} of {bad.size} entries differ, worst by {err.max() / (eps * scale):.1f} ulps of the largest"
    return None


def run_both(fn, args, dtype) -> tuple[str | None, str]:
    """(the mismatch or None, the numba backend the code ran on) for `fn(*args)`."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        native = pj.function(fn, backend="numba")
        try:
            want = pj.function(fn, backend="numpy")(*args)
        except Exception as e:       # noqa: BLE001  (the numpy backend refuses: so must numba)
            try:
                native(*args)
            except type(e):
                return None, "error on both"
            return f"numpy raises {type(e).__name__}, numba does not", "?"
        got = native(*args)
    backend = native._cache[next(iter(native._cache))].backend
    leaves_got, leaves_want = pj.tree_util.tree_leaves(got), pj.tree_util.tree_leaves(want)
    for g, w in zip(leaves_got, leaves_want):
        problem = compare(g, w, dtype)
        if problem:
            return problem, backend
    return None, backend


# -- fuzzer programs -------------------------------------------------------------------------
def fuzz_cases(seeds):
    """(name, fn, args, dtype) of fuzzer programs: their Jacobian (batch Jacobian for batch
    programs) and their forward value, as pforjac.function compiles them."""
    from fuzz import generator, interp
    from fuzz.paths import eager_only, program_fn, tape_batch_jacobian, tape_jacobian
    for seed in seeds:
        program = generator.generate(seed)
        if eager_only(program) or program["dtype"] == "float16":
            continue
        f = program_fn(program)
        jac = (tape_batch_jacobian if program["batch"] else tape_jacobian)(f)
        x = interp.x_value(program)
        yield f"fuzz seed {seed}", (lambda x, f=f, jac=jac: (f(x), jac(x))), (x,), x.dtype, program


def run_fuzz(seeds, report=print) -> list:
    """The mismatches [(name, problem, backend, program source)] on `seeds`."""
    from fuzz import interp
    found = []
    for name, fn, args, dtype, program in fuzz_cases(seeds):
        problem, backend = run_both(fn, args, dtype)
        if problem:
            found.append((name, problem, backend, interp.source(program)))
            report(f"{name} [{program['dtype']}, {backend}]: {problem}\n{interp.source(program)}")
    return found


def main() -> None:
    # (run as `python -m tests.numba_agreement`, tests/ is not on the path pytest gives the
    # tests, and the fuzzer is imported as `fuzz` from there)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    found = run_fuzz(range(args.first_seed, args.first_seed + args.programs))
    print(f"{len(found)} mismatches in {args.programs} fuzzer programs "
          f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
