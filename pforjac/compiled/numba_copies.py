"""Copies that permute axes, in generated numba code, as calls of kernels compiled once.

A transposed operand made C-contiguous for a product, or a transposed result, is a loop
nest of its own in the generated function (`t[i_0, i_1, i_2] = x[i_1, i_0, i_2]`), and
numba pays for every nest it compiles: typing, lowering, LLVM's loop passes and machine
code, 0.1-0.2 s for a four-level one (attention's gradient has five). `copy_calls`
replaces each such nest (a loop over every index of a new array whose one statement
stores an element of another array, read at a permutation of the loop indices) with a
call of `K.permute_into<rank>` (numba_copy_kernels.py): the same copy in the same order
(the target's elements in C order, each read where the nest read it), by a kernel numba
compiles once per machine and types (cached on disk, as `K.dot` is). Its loops read
through a view of the operand whose strides are in the nest's order, so LLVM vectorizes
a copy whose innermost axis stays innermost as it vectorized the nest.
"""
from __future__ import annotations

import re

__all__ = ["copy_calls"]

_LOOP = re.compile(r"^for (i_\d+) in range\((\d+)\):$")
_READ = re.compile(r"^(s_\w+) = (\w+)\[((?:i_\d+, )*i_\d+)\]$")
_STORE = re.compile(r"^(\w+)\[((?:i_\d+, )*i_\d+)\] = (s_\w+)$")
_RANKS = range(2, 6)        # ranks with a kernel


def copy_calls(lines: list[str]) -> list[str]:
    """`lines` (a function's body, top-level statements unindented) with each nest that
    copies one array into another at permuted indices a call of its kernel."""
    out, k = [], 0
    while k < len(lines):
        found = _permuted_copy(lines, k)
        if found is None:
            out.append(lines[k])
            k += 1
            continue
        call, k = found
        out.append(call)
    return out


_MADE = re.compile(r"^(\w+) = (?:K\.merged_axes\((\w+), \d+, \d+\)|(.*\bK\.empty\(.*))$")


def _fresh(before: list[str], target: str, source: str) -> bool:
    """Whether `target` is a new array (or a merged view of one) made by `before`, and
    `source` another array: the copy then reads nothing it writes."""
    target_base, new = _base(before, target)
    return new and target_base != _base(before, source)[0]


def _base(before: list[str], name: str) -> tuple[str, bool]:
    """(the array `name` views through merged axes, or itself; whether `before` made it
    new, by `K.empty`)."""
    for line in reversed(before):
        found = _MADE.match(line)
        if found is not None and found.group(1) == name:
            if found.group(2) is None:
                return name, True
            name = found.group(2)
    return name, False


def _permuted_copy(lines: list[str], start: int):
    """(the kernel call, the line after the nest) where a permuting copy's nest starts at
    `start` (a top-level `for`), else None."""
    loops, k = [], start
    while k < len(lines):
        found = _LOOP.match(lines[k].strip())
        if found is None or len(lines[k]) - len(lines[k].lstrip()) != 4 * len(loops):
            break
        loops.append(found.groups())
        k += 1
    if len(loops) not in _RANKS or k + 2 > len(lines):
        return None
    indent = " " * (4 * len(loops))
    body = lines[k:k + 2]
    read = _READ.match(body[0].removeprefix(indent))
    store = _STORE.match(body[1].removeprefix(indent))
    if not (body[0].startswith(indent) and body[1].startswith(indent) and read and store):
        return None
    after = lines[k + 2] if k + 2 < len(lines) else ""
    if after.startswith(" "):                # (more statements in the nest)
        return None
    order = [name for name, _ in loops]
    read_at, store_at = read.group(3).split(", "), store.group(2).split(", ")
    if store_at != order or sorted(read_at) != sorted(order) or store.group(3) != read.group(1) \
            or not _fresh(lines[:start], store.group(1), read.group(2)):
        return None
    axes = tuple(read_at.index(name) for name in order)       # (the operand's axis each loop reads)
    shape = tuple(int(size) for _, size in loops)
    return (f"K.permute_into{len(loops)}({store.group(1)}, {read.group(2)}, {axes}, {shape})",
            k + 2)
