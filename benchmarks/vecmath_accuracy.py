"""Every float32 value through the numba backend's float32 kernels (numba_vecmath.py):
the largest distance, in ulps, from the correctly rounded value (the float64 function
rounded once) and from numpy's float32 result, with how many values sit at each distance,
and whether NaN, signed zeros and the subnormal results agree. numpy's float32 sigmoid
(the numpy backend's) gives 0 where the true value is below the smallest normal, where
the kernel keeps the subnormal: those values are counted apart.

    python benchmarks/vecmath_accuracy.py [names] [--step N]   # every N-th bit pattern
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import pforjac as pj
from pforjac.compiled import numba_kernels as K
from pforjac.compiled.numba_vecmath import FLOAT32_KERNELS

REFERENCE = dict(exp=np.exp, tanh=np.tanh, log=np.log,
                 sigmoid=lambda v: 1.0 / (1.0 + np.exp(-v)),
                 softplus=lambda v: np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v))))
NUMPY32 = dict(exp=np.exp, tanh=np.tanh, log=np.log,
               sigmoid=pj.function(pj.sigmoid, backend="numpy"),
               softplus=pj.function(pj.softplus, backend="numpy"))


def ulps(a, b):
    """|a - b| in float32 ulps (steps between them, across 0); 0 where both are NaN (the
    work done only where the bits differ: most values agree)."""
    ia, ib = np.asarray(a, np.float32).view(np.int32), np.asarray(b, np.float32).view(np.int32)
    out = np.zeros(ia.shape, np.int64)
    at = np.flatnonzero(ia != ib)
    ja, jb = (i[at].astype(np.int64) for i in (ia, ib))
    ja, jb = (np.where(j < 0, -(j & 0x7FFFFFFF), j) for j in (ja, jb))
    nan_a, nan_b = np.isnan(a[at]), np.isnan(b[at])
    out[at] = np.where(nan_a & nan_b, 0, np.where(nan_a | nan_b, 2**40, np.abs(ja - jb)))
    return out


def kernel_loop(name):
    kernel = getattr(K, f"{name}_f32")

    @numba.njit
    def loop(x, out):
        for i in range(x.size):
            out[i] = kernel(x[i])
    return loop


def check(name: str, step: int, chunk: int = 1 << 25) -> dict:
    loop, tiny = kernel_loop(name), np.finfo(np.float32).tiny
    hist = {key: np.zeros(8, np.int64) for key in ("exact", "numpy", "numpy_vs_exact")}
    worst, flushed, signs = {}, 0, 0
    for start in range(0, 1 << 32, chunk):
        x = (np.arange(0, chunk, step, dtype=np.uint32) + np.uint32(start)).view(np.float32)
        got = np.empty_like(x)
        loop(x, got)
        with np.errstate(all="ignore"):
            exact = REFERENCE[name](x.astype(np.float64)).astype(np.float32)
            numpy32 = NUMPY32[name](x)
        gone = (numpy32 == 0) & (exact != 0) & (np.abs(exact) < tiny)
        flushed += int(gone.sum())
        zero = (exact == 0) & ~np.isnan(exact)
        signs += int((np.signbit(got[zero]) != np.signbit(exact[zero])).sum())
        for key, (a, b) in dict(exact=(got, exact), numpy=(got, numpy32),
                                numpy_vs_exact=(numpy32, exact)).items():
            u = np.where(gone, 0, ulps(a, b)) if key != "exact" else ulps(a, b)
            hist[key] += np.bincount(np.minimum(u, 7), minlength=8)
            i = int(u.argmax())
            if u[i] > worst.get(key, (-1,))[0]:
                worst[key] = (int(u[i]), float(x[i]), float(a[i]), float(b[i]))
    return dict(hist=hist, worst=worst, flushed=flushed, zero_sign_mismatches=signs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(FLOAT32_KERNELS))
    parser.add_argument("--step", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"{(1 << 32) // args.step} float32 values (every {args.step}th bit pattern); "
          "ulps: counts at distance 0, 1, 2, ..., 7+")
    for name in args.names:
        t0 = time.perf_counter()
        r = check(name, args.step)
        print(f"\n{name} ({time.perf_counter() - t0:.0f} s): zero-sign mismatches {r['zero_sign_mismatches']}, "
              f"numpy's float32 flushed to 0 (counted apart) {r['flushed']}")
        for key, h in r["hist"].items():
            print(f"  {key:15s} max {r['worst'][key][0]} ulp (at x={r['worst'][key][1]!r}: "
                  f"{r['worst'][key][2]!r} vs {r['worst'][key][3]!r}); counts {h.tolist()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
