"""Random array programs on the numba backend against the numpy backend, over the inputs
the fuzzer programs of tests/fuzz do not draw: integer, unsigned and boolean dtypes
mixed with floats, broadcast shapes with length-1 and length-0 axes, 0-d values, and
inputs laid out in Fortran order, with negative or doubled strides, read-only or as
broadcast views. A program is a chain of elementwise ops (integer division and power
among them), reductions, scans, sorts, transposes, slices and casts, drawn from a seed.

Results are compared exactly where numpy's are integers or booleans, and to 16 ulps of
the largest magnitude for floats (of float32 where a float32 or a narrow integer took
part: numpy's float32 loops are not correctly rounded), with NaN, infinities and the
signs of zeros exactly (complex values: each part so, to ulps of the largest modulus:
numpy's complex abs, a SIMD loop, differs from hypot by an ulp). A program numpy refuses
is skipped; one numba runs in segments or on numpy counts its warning. `python -m tests.numba_array_fuzz --programs 500` runs
a profile (test_review6_numba.py runs a few seeds).
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import pforjac as pj

P = pj.numpy
UNARY = {
    "tanh": lambda a: pj.tanh(a), "exp": lambda a: pj.exp(a * 0.1), "neg": lambda a: -a,
    "abs": lambda a: pj.abs(a), "square": lambda a: a * a, "relu": lambda a: pj.relu(a),
    "sign": lambda a: pj.sign(a), "sqrt_abs": lambda a: pj.sqrt(pj.abs(a)),
    "cube": lambda a: a ** 3, "transpose": lambda a: pj.transpose(a),
    "sum0": lambda a: P.sum(a, axis=0) if a.ndim else a,
    "sum_last": lambda a: P.sum(a, axis=-1, keepdims=True) if a.ndim else a,
    "max_last": lambda a: P.max(a, axis=-1) if a.ndim and a.shape[-1] else a,
    "reverse": lambda a: a[::-1] if a.ndim else a, "drop1": lambda a: a[1:] if a.ndim else a,
    "cumsum": lambda a: P.cumsum(a, axis=-1) if a.ndim else a,
    "sort": lambda a: P.sort(a, axis=-1) if a.ndim else a,
    "to_f32": lambda a: pj.cast(a, np.float32), "to_f64": lambda a: pj.cast(a, np.float64),
    "to_i32": lambda a: pj.cast(a, np.int32) if a.dtype.kind != "f" else a,
    "expand": lambda a: a[None], "flatten": lambda a: pj.reshape(a, (-1,)),
    "pow_half": lambda a: a ** 0.5, "reciprocal": lambda a: 1.0 / a, "sin": lambda a: pj.sin(a),
    "sort_stable": lambda a: P.sort(a, axis=-1, kind="stable") if a.ndim and a.dtype.kind != "c" else a,
    "argmax": lambda a: P.argmax(a, axis=-1) if a.ndim and a.shape[-1] and a.dtype.kind != "c" else a,
    "to_c128": lambda a: pj.cast(a, np.complex128), "log": lambda a: pj.log(a),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "maximum": pj.maximum, "minimum": pj.minimum, "where": lambda a, b: pj.where(a > b, a, b),
    "div": lambda a, b: a / (pj.abs(b) + 1), "floordiv": lambda a, b: a // (pj.abs(b) + 1),
    "mod": lambda a, b: a % (pj.abs(b) + 1), "fmod": lambda a, b: pj.fmod(a, pj.abs(b) + 1),
    "less": lambda a, b: pj.cast(a < b, a.dtype) + b,
    "hypot": lambda a, b: pj.hypot(pj.cast(a, np.float64), b),
    "true_div": lambda a, b: a / b, "pow": lambda a, b: pj.abs(a) ** (b * 0.5 if b.dtype.kind in "fc" else b),
}
DTYPES = (np.float64, np.float64, np.float32, np.int64, np.int32, np.int8, np.uint8,
          np.uint64, np.bool_, np.complex128, np.complex64)
NARROW = ("float32", "int8", "uint8", "int32", "bool", "to_f32", "to_i32", "complex64")


def _shape(rng) -> tuple:
    sizes = [1, 2, 3, 5, 0] if rng.random() < 0.1 else [1, 2, 3, 4, 6]
    return tuple(int(rng.choice(sizes)) for _ in range(int(rng.integers(0, 4))))


def _broadcastable(rng, shape: tuple) -> tuple:
    s = [1 if rng.random() < 0.35 else d for d in shape]
    return tuple(s[int(rng.integers(0, len(s) + 1)) if s else 0:])


def _value(rng, shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(max(info.min, -50), min(info.max, 50) + 1, shape).astype(dtype)
        if v.size and rng.random() < 0.3:
            v.flat[0] = info.max if rng.random() < 0.5 else info.min
        return v
    v = (rng.standard_normal(shape) * 3).astype(dtype)
    if dtype.kind == "c":
        v = v + 1j * (rng.standard_normal(shape) * 3).astype(dtype)
    if v.size and rng.random() < 0.3:
        v.flat[int(rng.integers(v.size))] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0])
    return v


def _laid_out(rng, a: np.ndarray) -> np.ndarray:
    """`a` in another memory layout (same values)."""
    r = rng.random()
    if a.ndim == 0 or r >= 0.7:
        return a
    if r < 0.2:
        return np.asfortranarray(a)
    if r < 0.35:
        return np.flip(np.ascontiguousarray(np.flip(a)))
    if r < 0.5:
        return np.repeat(a, 2, axis=-1)[..., ::2]
    if r < 0.6:
        return np.broadcast_to(a, a.shape)            # (a read-only view)
    b = a.copy()
    b.flags.writeable = False
    return b


def program(seed: int):
    """(fn, args, description) of the program drawn from `seed`."""
    rng = np.random.default_rng(seed)
    shape, n = _shape(rng), int(rng.integers(1, 4))
    shapes = [shape] + [_broadcastable(rng, shape) for _ in range(n - 1)]
    args = [_laid_out(rng, _value(rng, s, DTYPES[int(rng.integers(len(DTYPES)))])) for s in shapes]
    steps = [(str(rng.choice(list(UNARY))), None) if rng.random() < 0.5 else
             (str(rng.choice(list(BINARY))), int(rng.integers(10 ** 6)))
             for _ in range(int(rng.integers(1, 7)))]

    def fn(*xs):
        values = list(xs)
        for name, other in steps:
            last = values[-1]
            values.append(UNARY[name](last) if other is None
                          else BINARY[name](last, values[other % len(values)]))
        return (values[-1], values[len(values) // 2]) if len(values) > 2 else (values[-1],)
    text = (f"shapes {[a.shape for a in args]} dtypes {[a.dtype.name for a in args]} "
            f"strides {[a.strides for a in args]} steps {steps}")
    return fn, args, text


def difference(got, want, eps: float, scale: float = 0.0) -> str | None:
    """None if `got` is `want` (see the module's doc), else what differs (`scale`: at least
    the magnitude ulps are counted at)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype} against {want.shape} {want.dtype}"
    if want.dtype.kind == "c":      # (each part's NaN, inf, zeros; values to ulps of the largest |z|)
        scale = np.abs(want[np.isfinite(want)]).max(initial=0.0)
        return difference(got.real, want.real, eps, scale) or difference(got.imag, want.imag, eps, scale)
    if want.dtype.kind != "f":
        return None if np.array_equal(got, want) else "integers differ"
    infinite, zeros = np.isinf(want), (want == 0) & (got == 0)
    if not (np.array_equal(np.isnan(got), np.isnan(want))
            and np.array_equal(got[infinite], want[infinite])
            and np.array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))):
        return "NaN, infinities or signed zeros differ"
    finite = np.isfinite(want)
    if not finite.any():
        return None
    scale = max(np.abs(want[finite]).max(), scale)
    err = np.abs(got[finite].astype(np.float64) - want[finite]).max()
    return None if err <= 16 * eps * scale else f"{err / (eps * scale):.1f} ulps apart"


def _run(fn, args, backend: str):
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        try:
            out = pj.function(fn, backend=backend)(*args)
        except Exception as e:       # noqa: BLE001  (the numpy backend refuses: skipped)
            return None, f"{type(e).__name__}: {e}", []
    return out, None, [str(w.message) for w in caught if "numba" in str(w.message)]


def check(seed: int) -> tuple[str | None, list]:
    """(what differs on the program of `seed`, or None; the numba backend's warnings)."""
    fn, args, text = program(seed)
    want, refused, _ = _run(fn, args, "numpy")
    if refused:
        return None, []
    got, error, warned = _run(fn, args, "numba")
    if error:
        return f"seed {seed}: numba raised {error} ({text})", warned
    narrow = any(word in text for word in NARROW)
    for k, (g, w) in enumerate(zip(pj.tree_util.tree_leaves(got), pj.tree_util.tree_leaves(want))):
        eps = np.finfo(np.float32 if narrow else np.float64).eps
        problem = difference(g, w, eps if np.asarray(w).dtype.kind in "fc" else 0.0)
        if problem:
            return f"seed {seed}, output {k}: {problem} ({text})", warned
    return None, warned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=300)
    parser.add_argument("--first-seed", type=int, default=0)
    options = parser.parse_args()
    start, found, warned = time.perf_counter(), 0, 0
    for seed in range(options.first_seed, options.first_seed + options.programs):
        problem, warnings_ = check(seed)
        warned += bool(warnings_)
        if problem:
            found += 1
            print(problem, flush=True)
    print(f"{found} mismatches in {options.programs} programs ({warned} not wholly on numba), "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
