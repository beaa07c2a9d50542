"""Which rules every primitive has: `python -m pforjac.coverage`.

One row per primitive: impl, shape, vjp, jvp and pfor converter, each "yes",
"MISSING", a fallback ("per-iter": the op runs once per iteration under pfor),
or "n/a" with a reason (a non-differentiable op needs neither vjp nor jvp). A
rule an op deliberately lacks is declared with `declare_missing(op, rule, reason)`.

`python -m pforjac.coverage --strict` exits with status 1 when a built-in
differentiable primitive lacks a rule.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

from . import core

__all__ = ["RULES", "CoverageRow", "coverage", "missing", "declare_missing", "format_table",
           "main"]

RULES = ("impl", "shape", "vjp", "jvp", "converter")
declared_missing: dict[tuple[str, str], str] = {}   # (op name, rule) -> why it has none


def declare_missing(op, rule: str, reason: str) -> None:
    """Declares that `op` has no `rule` on purpose; the report shows `reason` instead."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    declared_missing[(core.primitive_of(op).name, rule)] = reason


@dataclass
class CoverageRow:
    op: str
    origin: str                     # "built-in" or "extend"
    differentiable: bool
    status: dict[str, str]          # rule -> "yes" | "MISSING" | "per-iter" | "n/a: reason"

    @property
    def missing(self) -> list[str]:
        return [r for r, s in self.status.items() if s == "MISSING"]


def _status(prim: core.Primitive, rule: str) -> str:
    from .pfor import converter_for
    has = {"impl": prim in core.impl_rules, "shape": prim in core.shape_rules,
           "vjp": prim in core.vjp_rules, "jvp": prim in core.jvp_rules,
           "converter": converter_for(prim) is not None}[rule]
    if has:
        return "yes"
    reason = declared_missing.get((prim.name, rule))
    if reason is not None:
        return f"n/a: {reason}"
    if rule in ("vjp", "jvp") and not prim.differentiable:
        return "n/a: not differentiable"
    return "per-iter" if rule == "converter" else "MISSING"


def coverage() -> list[CoverageRow]:
    """One row per declared primitive, in declaration order."""
    rows = []
    for name, prim in core.primitives.items():
        rows.append(CoverageRow(name, prim.origin, prim.differentiable,
                                {r: _status(prim, r) for r in RULES}))
    return rows


def missing(rows: list[CoverageRow] | None = None, builtin_only: bool = True) -> dict[str, list[str]]:
    """Op name -> rules it lacks without a declared reason (a converter falling back counts)."""
    rows = coverage() if rows is None else rows
    out = {}
    for row in rows:
        if builtin_only and row.origin != "built-in":
            continue
        lacking = row.missing + (["converter"] if row.status["converter"] == "per-iter" else [])
        if lacking:
            out[row.op] = lacking
    return out


def format_table(rows: list[CoverageRow]) -> str:
    width = max([len(r.op) for r in rows] + [9])
    header = f"{'primitive':{width}}  {'origin':8}  " + "  ".join(f"{r:9}" for r in RULES)
    lines = [header, "-" * len(header)]
    for row in rows:
        cells = [("n/a" if s.startswith("n/a") else s) for s in row.status.values()]
        line = f"{row.op:{width}}  {row.origin:8}  " + "  ".join(f"{c:9}" for c in cells)
        lines.append(line.rstrip())
    by_reason: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        for rule, s in row.status.items():
            if s.startswith("n/a"):
                by_reason.setdefault(s[5:], {}).setdefault(row.op, []).append(rule)
    lines.append("")
    for why, per_op in by_reason.items():
        items = ", ".join(f"{op} ({'/'.join(rules)})" for op, rules in per_op.items())
        lines.append(f"n/a, {why}: {items}")
    lacking = missing(rows, builtin_only=False)
    lines.append(f"{len(rows)} primitives; " + (
        "every rule present or declared n/a" if not lacking else
        "lacking: " + "; ".join(f"{op} ({', '.join(r)})" for op, r in lacking.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    import pforjac  # noqa: F401  (declares every built-in primitive and converter)
    rows = coverage()
    print(format_table(rows))
    if "--strict" in argv and missing(rows):
        return 1
    return 0


if __name__ == "__main__":
    from pforjac.coverage import main as _main   # the package's module holds the declarations
    sys.exit(_main())
