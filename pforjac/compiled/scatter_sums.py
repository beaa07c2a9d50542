"""Sums of scatters into zeros in generated numpy code, added into one buffer.

A gradient through slices of one input (`x[1:] - x[:-1] ** 2`) is a sum of
`setitem_zeros` results: each a fresh array of zeros with one slice filled, added whole to
the next (`add(add(z1, z2), z3)`). Generated code adds each later term's values into the
slice of the running sum instead (`add_at(s, g, key)`: `s[key] += g`, in place), so the sum
needs one zeroed array, not one per term, and no pass over the entries a term leaves at
zero: the chained Rosenbrock's gradient at n=50 makes one array where it made five.

The same bits as the whole-array adds. An entry every term covers gets the same sum in the
same order. An entry some term leaves alone was `s + 0` there, which is `s` but for an exact
-0 (`-0 + 0` is +0): where the first term's -0 may reach such an entry (the entries it covers
and some other term does not), the last add adds 0 once more (`fix`), which gives what the
adds of 0 in between gave (a sum with a nonzero term is the same with or without them, a zero
one +0). Only where those entries form one box (a basic index); elsewhere the adds stay.
A term's values stay alive until its add: codegen's buffer analysis counts a scatter's result
as one that may share its input's memory, so no ufunc before the add writes into them.
"""
from __future__ import annotations

import math

import numpy as np

from ..program import Program

__all__ = ["scatter_sums", "add_at"]

_COVER_MAX = 1 << 22      # elements: the entries' coverage is worked out on boolean masks


def add_at(total: np.ndarray, g, key: tuple, fix: tuple | None = None) -> np.ndarray:
    """`total` with `g` added into `total[key]` in place (a basic index: a view), then 0
    added into `total[fix]` (an exact -0 there becomes +0, as a whole-array add makes it)."""
    view = total[key]
    np.add(view, g, out=view)
    if fix is not None:
        view = total[fix]
        np.add(view, _zeros(view), out=view)
    return total


_SMALL = 4096                 # elements: a fix box this small adds a kept array of zeros
_ZEROS: dict = {}             # (shape, dtype) -> read-only zeros (the boxes codegen made)


def _zeros(view: np.ndarray):
    """Zeros to add to `view`: an array of its shape where it is small (numpy adds a
    Python 0 through its scalar path, 1.3 us where an array operand costs 0.5), else 0."""
    if view.size > _SMALL:
        return 0
    key = (view.shape, view.dtype)
    zeros = _ZEROS.get(key)
    if zeros is None:
        zeros = np.zeros(view.shape, view.dtype)
        zeros.flags.writeable = False
        _ZEROS[key] = zeros
    return zeros


def scatter_sums(program: Program) -> tuple[dict[int, tuple], set[int]]:
    """({index of an add: (running sum, term's values, its key, fix or None)}, indices of the
    scatters those adds take the place of). A chain of adds qualifies where each adds a
    scatter into zeros (by a basic index, read by that add alone) to a running sum (the
    first scatter, or the chain's previous add, read by that add alone), all of one float
    or complex dtype and shape, and the entries that need `fix` form one box."""
    uses, made = _uses(program), {id(e.outputs[0]): k for k, e in enumerate(program.equations)}
    chain_of: dict[int, list] = {}     # id(running sum) -> its chain: [(add index, term)]
    heads: dict[int, object] = {}      # id(chain) -> its first scatter
    for k, eqn in enumerate(program.equations):
        if eqn.prim.name == "setitem_zeros" and _basic(eqn.params["key"]):
            chain_of[id(eqn.outputs[0])] = []
            heads[id(chain_of[id(eqn.outputs[0])])] = eqn
        elif eqn.prim.name == "add" and len(eqn.inputs) == 2:
            found = _term(program, eqn, chain_of, made, uses)
            if found is not None:
                total, term = found
                chain = chain_of.pop(id(total))
                chain.append((k, total, term))
                chain_of[id(eqn.outputs[0])] = chain
    chosen: dict[int, tuple] = {}
    needless: set[int] = set()
    for chain in {id(c): c for c in chain_of.values() if c}.values():
        fix = _fix(heads[id(chain)], [term for _, _, term in chain])
        if fix is False:
            continue
        for j, (k, total, term) in enumerate(chain):
            last = j == len(chain) - 1
            chosen[k] = (total, term.inputs[0], _view_key(term.params["key"]), fix if last else None)
            needless.add(made[id(term.outputs[0])])
    return chosen, needless


def _term(program: Program, eqn, chain_of: dict, made: dict, uses: dict):
    """(the running sum, the scatter equation) that add `eqn` adds, or None."""
    out = eqn.outputs[0]
    if out.dtype.kind not in "fc" or math.prod(out.shape) > _COVER_MAX or any(
            tuple(v.shape) != tuple(out.shape) or v.dtype != out.dtype for v in eqn.inputs):
        return None
    a, b = eqn.inputs
    for total, other in ((a, b), (b, a)):
        if total is other or id(total) not in chain_of or uses.get(id(total)) != 1:
            continue
        scatter = program.equations[made[id(other)]] if id(other) in made else None
        if scatter is not None and scatter.prim.name == "setitem_zeros" \
                and uses.get(id(other)) == 1 and _basic(scatter.params["key"]) \
                and scatter.inputs[0].dtype == out.dtype:
            return total, scatter
    return None


def _fix(head, terms: list):
    """The box of entries the first scatter covers and some term does not (None: no such
    entry), or False where those entries are not one box."""
    shape = tuple(head.outputs[0].shape)
    covers = [_cover(shape, e.params["key"]) for e in [head] + terms]
    alone = covers[0] & ~np.logical_and.reduce(covers[1:])
    if not alone.any():
        return None
    box = tuple(slice(int(i.min()), int(i.max()) + 1) for i in np.nonzero(alone))
    return box if alone[box].all() else False


def _cover(shape: tuple, key: tuple) -> np.ndarray:
    cover = np.zeros(shape, bool)
    cover[key] = True
    return cover


def _uses(program: Program) -> dict[int, int]:
    """{id(var): how many inputs read it}; a result of the program counts as more than one."""
    uses: dict[int, int] = {}
    for eqn in program.equations:
        for v in eqn.inputs:
            uses[id(v)] = uses.get(id(v), 0) + 1
    for v in program.outputs:
        uses[id(v)] = uses.get(id(v), 0) + 2
    return uses


def _basic(key) -> bool:
    """A key of ints, slices, None and Ellipsis: indexing by it gives a view."""
    return isinstance(key, tuple) and all(
        k is None or k is Ellipsis or type(k) in (int, slice) for k in key)


def _view_key(key: tuple) -> tuple:
    """`key` with an Ellipsis at the end where it has none: an entry indexed by ints alone
    is then a 0-d view, not a copy."""
    return key if any(k is Ellipsis for k in key) else key + (Ellipsis,)
