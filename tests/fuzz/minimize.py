"""Shrinking a mismatching program to a small one that still mismatches the same way.

A mismatch's signature is its path family (without `#2`, `=k`, options) and what
differed. `minimize` tries, greedily and until nothing helps or time runs out: dropping
the lines after an earlier value (truncation), making a line an identity, dropping the
special values one by one and widening the dtype to float64; after each success, dead
lines are removed and the values renumbered.
"""
from __future__ import annotations

import re
import time

import numpy as np

from . import interp
from .ops import Ref


def signature(record: dict) -> tuple:
    path = re.sub(r"(#\d+|=\d+|\(.*\))", "", record["path"])
    return path, record["what"]


def _reproduces(program: dict, seed: int, sig: tuple) -> bool:
    from .check import check_program
    try:
        with np.errstate(all="ignore"):
            interp.run_ref(program, Ref(np), interp.x_value(program))
        out = check_program(seed, program)
    except Exception:       # noqa: BLE001  (a candidate numpy refuses: not a reproducer)
        return False
    return any(signature(m) == sig for m in out.mismatches)


def compact(program: dict) -> dict:
    """Reads through identity lines, drops lines the output does not read; renumbers."""
    lines = _through_identities(program["lines"])
    needed = {len(lines)}
    for k in range(len(lines), 0, -1):
        if k in needed:
            needed.update(_reads(lines[k - 1]))
    keep = [k for k in range(1, len(lines) + 1) if k in needed]
    renumber = {0: 0, **{old: new for new, old in enumerate(keep, 1)}}
    new = [_renamed(lines[k - 1], renumber) for k in keep]
    return dict(program, lines=new)


def _through_identities(lines: list) -> list:
    """Each read of an identity line's value reads its first argument instead (a value or a
    constant); the output (the last line) stays."""
    source = {}
    out = []
    for k, line in enumerate(lines, 1):
        line = _renamed(line, source, keep_others=True)
        first = line["args"][0] if line["args"] else None
        if line["op"] == "identity" and k < len(lines) and isinstance(first, dict):
            source[k] = first
        out.append(line)
    return out


def _reads(line: dict) -> set:
    out = set()
    for a in line["args"]:
        for b in (a if isinstance(a, list) else [a]):
            if isinstance(b, dict) and "v" in b:
                out.add(b["v"])
    return out


def _renamed(line: dict, renumber: dict, keep_others: bool = False) -> dict:
    def one(a):
        if isinstance(a, dict) and "v" in a:
            if keep_others and a["v"] not in renumber:
                return a
            new = renumber[a["v"]]
            return new if isinstance(new, dict) else {"v": new}
        if isinstance(a, list) and a and isinstance(a[0], dict):
            return [one(b) for b in a]
        return a
    return dict(line, args=[one(a) for a in line["args"]])


def _candidates(program: dict):
    lines = program["lines"]
    for k in range(1, len(lines)):
        yield dict(program, lines=lines[:k])
    for k in range(len(lines)):
        if lines[k]["op"] != "identity":
            yield dict(program, lines=lines[:k] + [dict(lines[k], op="identity")] + lines[k + 1:])
    special = program.get("special") or []
    for k in range(len(special)):
        yield dict(program, special=special[:k] + special[k + 1:] or None)
    if program["dtype"] != "float64":
        yield dict(program, dtype="float64")


def minimize(record: dict, seconds: float = 30.0, trials: int = 300) -> dict:
    """The smallest program found that still gives `record`'s signature of mismatch, within
    `trials` candidates checked (and `seconds`, a safety cap)."""
    sig, seed = signature(record), record["seed"]
    best = record["program"]
    deadline = time.time() + seconds
    improved = True
    while improved and time.time() < deadline and trials > 0:
        improved = False
        for candidate in _candidates(best):
            candidate = compact(candidate)
            if time.time() > deadline or trials <= 0:
                break
            if _size(candidate) >= _size(best):
                continue
            trials -= 1
            if _reproduces(candidate, seed, sig):
                best, improved = candidate, True
                break
    return best


def _size(program: dict) -> tuple:
    real = sum(1 for line in program["lines"] if line["op"] != "identity")
    return (real, len(program["lines"]), len(program.get("special") or []),
            program["dtype"] != "float64")
