"""numpy's einsum forms made explicit at the API boundary, so that `einsum_p`, its rules, its
converter and its planner only ever see subscripts that name every axis of every operand.

- The interleaved form `einsum(a, [0, 1], b, [1, 2], [0, 2])` (integers in [0, 52), Ellipsis
  allowed) becomes the string `'AB,BC->AC'` (0-25 are 'A'-'Z', 26-51 'a'-'z', so that the
  implicit output's alphabetical order is the integers' order, as numpy's).
- `'...'` becomes named axes: each operand's ellipsis covers its axes the letters leave over,
  right-aligned and broadcast as numpy broadcasts shapes; the output's `'...'` (implicit: the
  broadcast ellipsis axes first, then the letters used once, sorted) stands for all of them.
- An axis of size 1 that other operands have longer is broadcast, as np.einsum does: the
  operand is read without it (`squeezed`), since it is constant along that axis.

Pure Python on shapes: `explicit` says what to bind and which axes to squeeze.
"""
from __future__ import annotations

import numbers
import string

__all__ = ["from_sublists", "explicit"]

_LABELS = string.ascii_uppercase + string.ascii_lowercase


def from_sublists(args) -> tuple[str, list]:
    """(subscripts, operands) of `einsum(op0, sub0, op1, sub1, ..., [out])`."""
    has_out = len(args) % 2 == 1
    pairs, out = (args[:-1], args[-1]) if has_out else (args, None)
    operands, subs = list(pairs[0::2]), list(pairs[1::2])
    words = [_word(s, f"the sublist of operand {k}") for k, s in enumerate(subs)]
    spec = ",".join(words)
    return (spec if out is None else spec + "->" + _word(out, "the output sublist")), operands


def _word(sublist, what: str) -> str:
    word = ""
    for s in sublist:
        if s is Ellipsis:
            word += "..."
        elif isinstance(s, numbers.Integral) and not isinstance(s, bool) and 0 <= s < len(_LABELS):
            word += _LABELS[s]
        else:
            raise ValueError(f"einsum: {what} holds {s!r}; a subscript is an int in [0, 52) or "
                             f"Ellipsis")
    return word


def explicit(subscripts: str, shapes) -> tuple[str, list[tuple[int, ...]]]:
    """(explicit subscripts over the operands once squeezed, each operand's axes to squeeze)."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum '{subscripts}' names {len(terms)} operands, got {len(shapes)} "
                         f"(shapes {', '.join(str(tuple(s)) for s in shapes)})")
    fresh = [c for c in _LABELS if c not in spec]
    ell = max([len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes)
               if "..." in t] or [0])
    ins = [_named(t, tuple(s), k, fresh[:ell], subscripts) for k, (t, s) in enumerate(zip(terms, shapes))]
    dots = "".join(fresh[:ell])
    if arrow:
        _check_dots(out, "the output", subscripts)
        if ell and "..." not in out and "..." in lhs:
            raise ValueError(f"einsum '{subscripts}': the operands' '...' covers {ell} axes but "
                             f"the output has no '...'; write '...' in the output (or sum them)")
        out = out.replace("...", dots)
    else:
        letters = "".join(ins).translate({ord(c): None for c in dots})
        out = dots + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins, squeezes = _broadcast(ins, shapes, subscripts, dots)
    return ",".join(ins) + "->" + out, squeezes


def _check_dots(term: str, what: str, subscripts: str) -> None:
    if term.count(".") != 3 * term.count("...") or term.count("...") > 1:
        raise ValueError(f"einsum '{subscripts}': {what} ('{term}') has a '.' that is not part "
                         f"of one ellipsis '...'")
    if not all(c in _LABELS for c in term.replace("...", "")):
        raise ValueError(f"einsum '{subscripts}': {what} ('{term}') holds a subscript that is "
                         f"not a letter")


def _named(term: str, shape: tuple, k: int, dots: list, subscripts: str) -> str:
    _check_dots(term, f"operand {k}", subscripts)
    letters = term.replace("...", "")
    if len(letters) > len(shape) or ("..." not in term and len(letters) != len(shape)):
        raise ValueError(f"einsum '{subscripts}': operand {k} has shape {shape} ({len(shape)} "
                         f"axes) but its subscripts '{term}' name {len(letters)}"
                         + ("" if "..." in term else "; write '...' for axes left unnamed"))
    n = len(shape) - len(letters)
    return term.replace("...", "".join(dots[len(dots) - n:]))


def _broadcast(ins: list[str], shapes, subscripts: str, dots: str):
    """Drops from each operand its size-1 axes that another operand has longer; a size an
    axis has in two operands, neither of them 1, is an error naming both."""
    size: dict[str, tuple[int, int]] = {}
    for k, (term, shape) in enumerate(zip(ins, shapes)):
        for c in {c for c in term if term.count(c) > 1}:
            if len({d for e, d in zip(term, shape) if e == c}) > 1:
                raise ValueError(f"einsum '{subscripts}': operand {k} (shape {tuple(shape)}) "
                                 f"repeats axis '{c}' over axes of different sizes")
        for c, d in zip(term, shape):
            seen = size.setdefault(c, (d, k))
            if d != seen[0] and 1 not in (d, seen[0]):
                what = "a '...' axis" if c in dots else f"axis '{c}'"
                raise ValueError(f"einsum '{subscripts}': {what} has size {seen[0]} in operand "
                                 f"{seen[1]} (shape {tuple(shapes[seen[1]])}) and {d} in operand "
                                 f"{k} (shape {tuple(shape)}); they must agree or be 1")
            if seen[0] == 1 and d != 1:
                size[c] = (d, k)
    squeezes, named = [], []
    for term, shape in zip(ins, shapes):
        drop = tuple(i for i, (c, d) in enumerate(zip(term, shape))
                     if d == 1 and size[c][0] != 1 and term.count(c) == 1)
        squeezes.append(drop)
        named.append("".join(c for i, c in enumerate(term) if i not in drop))
    return named, squeezes
