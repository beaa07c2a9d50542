"""What fell back during a block of code: `fallback_report()`.

pfor warns once per op and cause; a report records every occurrence while it is
active, so a user can find the one op that made a Jacobian slow:

    >>> import pforjac as pj
    >>> with pj.fallback_report() as report:
    ...     _ = pj.pfor(lambda i: pj.exp(pj.cast(i, "float32")), 3)
    >>> report.records
    []
"""
from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass

__all__ = ["fallback_report", "FallbackReport", "FallbackRecord", "record_fallback"]


@dataclass
class FallbackRecord:
    """One op and cause that fell back, with how often and over how many iterations."""
    kind: str        # "per-iteration" (one op looped) or "while-loop" (the whole body looped)
    op: str
    inputs: str      # shapes and stacked flags the op was called with
    cause: str
    count: int = 0
    iterations: int = 0

    def __str__(self) -> str:
        return (f"{self.kind:13} {self.op:16} x{self.count:<4} {self.iterations:>7} iterations  "
                f"{self.inputs}: {self.cause}")


class FallbackReport:
    """Records collected by `fallback_report()`, one per (kind, op, inputs, cause)."""

    def __init__(self):
        self._records: dict[tuple, FallbackRecord] = {}
        self._lock = threading.Lock()

    def add(self, kind: str, op: str, inputs: str, cause: str, iterations: int) -> None:
        key = (kind, op, inputs, cause)
        with self._lock:
            rec = self._records.setdefault(key, FallbackRecord(kind, op, inputs, cause))
            rec.count += 1
            rec.iterations += iterations

    @property
    def records(self) -> list[FallbackRecord]:
        return list(self._records.values())

    def ops(self) -> set[str]:
        """Names of the ops that fell back."""
        return {r.op for r in self._records.values()}

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self):
        return iter(self.records)

    def __str__(self) -> str:
        if not self._records:
            return "pfor fallback report: nothing fell back; every op was vectorized"
        lines = [f"pfor fallback report: {len(self._records)} op(s) fell back"]
        lines += [f"  {r}" for r in sorted(self._records.values(), key=lambda r: -r.iterations)]
        kinds = {r.kind for r in self._records.values()}
        if "per-iteration" in kinds:
            lines.append("  per-iteration: the op has no converter; add one with "
                         "@pforjac.extend.register_converter(op_name) (see CONTRIBUTING.md)")
        if "while-loop" in kinds:
            lines.append("  while-loop: the op's converter raised; fix it, "
                         "pforjac.testing.check_converter finds the failing stacked mix")
        return "\n".join(lines)

    def print(self, file=None) -> None:
        print(self, file=file or sys.stdout)


class _Active(threading.local):
    def __init__(self):
        self.reports: list[FallbackReport] = []


_active = _Active()


def record_fallback(kind: str, op: str, inputs: str, cause: str, iterations: int) -> None:
    """Called by the pfor driver whenever something falls back."""
    for report in _active.reports:
        report.add(kind, op, inputs, cause, iterations)


@contextlib.contextmanager
def private_report():
    """A report that alone sees the block's fallbacks (the user's reports don't):
    for pforjac's own trial vectorizations, which must not count twice."""
    saved = _active.reports
    _active.reports = [FallbackReport()]
    try:
        yield _active.reports[0]
    finally:
        _active.reports = saved


@contextlib.contextmanager
def fallback_report(print_on_exit: bool = False):
    """Records every pfor fallback inside the block (in this thread), warned or not.

    Args:
        print_on_exit: print the report when the block ends.

    Yields:
        A `FallbackReport`: `.records` lists (kind, op, inputs, cause, count,
        iterations); `str(report)` is a table, slowest first.

    Example:
        >>> import pforjac as pj
        >>> x = pj.constant([1., 2.])
        >>> with pj.fallback_report() as report:
        ...     with pj.GradientTape() as g:
        ...         g.watch(x)
        ...         y = pj.sin(x)
        ...     _ = g.jacobian(y, x)
        >>> len(report)
        0
    """
    report = FallbackReport()
    _active.reports.append(report)
    try:
        yield report
    finally:
        _active.reports.remove(report)
        if print_on_exit:
            report.print()
