"""Adjacent loops of a loop nest run as one, over views with those axes merged.

numba compiles a loop nest in time that grows with its depth (typing, lowering and
LLVM's passes per loop level: a three-level elementwise nest takes about twice as long
as one flat loop of as many elements), and a program's first compile is mostly its loop
nests. Two adjacent loops `i_k` and `i_m` (m = k + 1) run as one loop over their
product where every array the nest reads or writes indexes them as two consecutive
items `x[..., i_k, i_m, ...]` of a C-contiguous array whose axis under `i_m` is as long
as that loop, nothing else names them, and no statement sits between the two loops:
the array is then read through `K.merged_axes(x, p, p + 2)` (numba_views.py), a view
with those two axes as one, at the flat position `i_k`, which visits the same elements
in the same order. A broadcast operand (`b[i_m]` only), an offset (`x[1 + i_m]`), a
transposed read (`x[i_m, i_k]`) or an index array keeps its loops apart. A view is a
statement numba compiles too (10-15 ms, half a loop level), so outer loops (not the
innermost, whose merging lengthens the loop LLVM vectorizes) merge only where at most
`MAX_OUTER_VIEWS` arrays need a view for it: a sum of fifteen arrays stays a loop deeper.
"""
from __future__ import annotations

import re
from typing import Callable

__all__ = ["merged_loops"]

MAX_OUTER_VIEWS = 4
_ACCESS = re.compile(r"(?<![\w.])((?:v_\w+|t_\d+|C_\d+))\[([^\[\]]*)\]")


def merged_loops(nest, texts: list[str], shape_of: Callable[[str], tuple | None]):
    """(the extent of each loop kept, by axis; the texts rewritten; the lines making the
    views they read) for the nest whose statements are `texts`, or None where no two
    loops merge. `shape_of(name)`: the shape of a C-contiguous array, else None."""
    if 0 in nest.shape:
        return None
    extents = {k: d for k, d in enumerate(nest.shape) if d != 1}
    views = _Views(nest.fresh, shape_of)
    axes, last, merged = sorted(extents), {}, False
    at = 0
    while at < len(axes) - 1:
        k, m = axes[at], axes[at + 1]
        if m != last.get(k, k) + 1 or nest.levels[m] or nest.after[m] \
                or not _mergeable(texts, k, m, extents[m], views.shape) \
                or (at + 2 < len(axes) and _viewed(texts, k) > MAX_OUTER_VIEWS):
            at += 1
            continue
        texts = [_ACCESS.sub(lambda found: views.merge(found, k, m), text) for text in texts]
        extents[k] *= extents.pop(m)
        last[k] = m
        axes.pop(at + 1)
        merged = True
    return (extents, texts, views.lines(texts)) if merged else None


def _viewed(texts: list[str], k: int) -> int:
    """How many arrays `texts` index with `i_k` (each needs a view to merge its loop)."""
    return len({found.group(1) for text in texts for found in _ACCESS.finditer(text)
                if f"i_{k}" in found.group(2).split(", ")})


def _mergeable(texts: list[str], k: int, m: int, extent: int, shape) -> bool:
    """Whether every use of `i_k` and `i_m` in `texts` is an access `x[..., i_k, i_m, ...]`
    of a C-contiguous array `x` whose axis under `i_m` has `extent` elements."""
    ik, im = f"i_{k}", f"i_{m}"
    uses = [len(re.findall(rf"\b{i}\b", text)) for i in (ik, im) for text in texts]
    pairs = 0
    for text in texts:
        for found in _ACCESS.finditer(text):
            items = found.group(2).split(", ")
            if ik not in items and im not in items:
                continue
            p = items.index(ik) if ik in items else -1
            known = shape(found.group(1))
            if p < 0 or p + 1 >= len(items) or items[p + 1] != im or known is None \
                    or len(known) != len(items) or known[p + 1] != extent:
                return False
            pairs += 1
    half = len(uses) // 2
    return pairs > 0 and sum(uses[:half]) == pairs and sum(uses[half:]) == pairs


class _Views:
    """The merged views a nest reads through: (array, first axis, past the last) -> name."""

    def __init__(self, fresh: Callable[[], str], shape_of: Callable[[str], tuple | None]):
        self.fresh, self.shape_of = fresh, shape_of
        self.made: dict[str, tuple] = {}        # view name -> (array, lo, hi, shape)
        self.names: dict[tuple, str] = {}

    def shape(self, name: str) -> tuple | None:
        return self.made[name][3] if name in self.made else self.shape_of(name)

    def merge(self, found: re.Match, k: int, m: int) -> str:
        name, items = found.group(1), found.group(2).split(", ")
        if f"i_{k}" not in items:
            return found.group(0)
        p = items.index(f"i_{k}")
        base, lo, hi = name, p, p + 2
        if name in self.made and self.made[name][1] == p:       # (a view merging one more axis)
            base, lo, hi = self.made[name][0], p, self.made[name][2] + 1
        shape = self.shape(name)
        merged = shape[:p] + (shape[p] * shape[p + 1],) + shape[p + 2:]
        key = (base, lo, hi)
        if key not in self.names:
            self.names[key] = self.fresh()
            self.made[self.names[key]] = (base, lo, hi, merged)
        return f"{self.names[key]}[{', '.join(items[:p + 1] + items[p + 2:])}]"

    def lines(self, texts: list[str]) -> list[str]:
        """The lines making the views `texts` read (and the views those are made from)."""
        used = {found.group(1) for text in texts for found in _ACCESS.finditer(text)}
        for name in reversed(list(self.made)):
            if name in used:
                used.add(self.made[name][0])
        return [f"{name} = K.merged_axes({base}, {lo}, {hi})"
                for name, (base, lo, hi, _) in self.made.items() if name in used]
