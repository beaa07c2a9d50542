"""Overhead of numpy's dispatch protocols: `np.sin(t)` (NEP 13) and `np.sum(t)` (NEP 18)
against the pforjac calls they run, eager, and under a recording tape.

    python benchmarks/dispatch.py        # prints medians in microseconds and the ratios
"""
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pforjac as pj  # noqa: E402


def medians_us(first, second, repeats: int = 201, number: int = 200) -> tuple:
    """Medians over `repeats` runs of the time per call of `first` and of `second`, in
    microseconds; the two alternate run by run, so load on the machine hits both alike."""
    times = ([], [])
    for _ in range(repeats):
        for fn, out in zip((first, second), times):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            out.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(times[0]), statistics.median(times[1])


class _NoOp:
    """An object whose `__array_ufunc__` does nothing: np.sin on it costs numpy's own
    dispatch machinery alone, the floor under any NEP 13 implementation."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return None


def main() -> None:
    t = pj.constant(np.linspace(0.0, 1.0, 16))
    y0 = np.linspace(1.0, 2.0, 16)
    pairs = [
        ("sin", lambda: np.sin(t), lambda: pj.sin(t)),
        ("add ndarray", lambda: np.add(t, y0), lambda: pj.add(t, y0)),
        ("sum", lambda: np.sum(t), lambda: pj.sum(t)),
        ("dot ndarray", lambda: np.dot(t, y0), lambda: pj.dot(t, y0)),
        ("ndarray * t", lambda: y0 * t, lambda: t * y0),
    ]
    print(f"{'op':<14}{'numpy call us':>15}{'pforjac us':>12}{'ratio':>8}")
    for name, via_numpy, direct in pairs:
        a, b = medians_us(via_numpy, direct)
        print(f"{name:<14}{a:>15.2f}{b:>12.2f}{a / b:>8.2f}")
    with pj.GradientTape() as tape:
        tape.watch(t)
        a, b = medians_us(lambda: np.sin(t), lambda: pj.sin(t), number=50)
    print(f"{'sin (tape)':<14}{a:>15.2f}{b:>12.2f}{a / b:>8.2f}")
    noop = _NoOp()
    floor, call = medians_us(lambda: np.sin(noop), lambda: len(()))
    print(f"numpy's NEP 13 floor (a no-op __array_ufunc__): {floor - call:.2f} us per call")


if __name__ == "__main__":
    main()
