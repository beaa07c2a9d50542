"""autograd's `util` helpers that user code imports."""
from __future__ import annotations

__all__ = ["func", "subval", "subvals"]


def func(f):
    """The function behind a method as its class holds it (the function itself here)."""
    return f


def subval(x, i, v):
    """`x` (a sequence) as a tuple with item `i` replaced by `v`."""
    x = list(x)
    x[i] = v
    return tuple(x)


def subvals(x, ivs):
    """`x` as a tuple with each (i, v) of `ivs` put in."""
    x = list(x)
    for i, v in ivs:
        x[i] = v
    return tuple(x)
