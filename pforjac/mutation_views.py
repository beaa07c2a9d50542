"""Views: what numpy returns as a view of `t` (`t[1:]`, `t[0]` of a matrix, `t.T`,
`t.reshape(...)`, `np.ravel(t)`) sees an assignment into `t` made after it was taken, and an
assignment into the view writes into `t`, as with numpy's views.

pforjac values never alias, so this is done by value: each such result keeps a link to
the tensor it came from (how to take it again, how to write it back). An assignment into
`t` rebinds every live view whose elements it overlaps to the view taken again from the
new `t`; one into a view writes the view's new value back into its base (an `index_update`,
or the inverse transpose or reshape), and from there into the base's own base and the
base's other overlapping views. Every step is a pforjac op, so derivatives follow.

Where pforjac's value would not be numpy's, the assignment is refused instead: the results
of numpy's other view-making functions (`swapaxes`, `moveaxis`, `squeeze`, `expand_dims`,
`flip`, `rot90`, the pieces of `split`, `diagonal`, `mT`), a reshape of a view that numpy
may have to copy (of a transpose or a strided slice) and a Fortran-order reshape are copies
here, kept "unlinked": an assignment into one while its tensor lives raises a TypeError
naming it (`check_unlinked`). Still unlike numpy, such a copy does not see a later
assignment into its tensor. Results of every other op are new values, as in numpy.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import ops
from .numpy_dispatch import FUNCTIONS
from .ops import indexing as ix
from .rebinding import rebind
from .tensor import Tensor, Variable
from .updates import updated

__all__ = ["base_of", "after_write", "region_of_key", "install"]

ALL = "all"       # an assignment into every element


class _Link:
    """A view's way back to its base: `kind` ("getitem", "transpose" or "reshape") and its
    argument (the key, the permutation, the view's shape) say how to take the view again
    from the base, write it back, and which flat range of the base it covers."""
    __slots__ = ("base", "kind", "arg")

    def __init__(self, base: Tensor, kind: str, arg):
        self.base, self.kind, self.arg = weakref.ref(base), kind, arg

    def take(self, base: Tensor) -> Tensor:
        if self.kind == "getitem":
            return ix.getitem(base, self.arg)
        return ops.transpose(base, self.arg) if self.kind == "transpose" else \
            ops.reshape(base, self.arg)

    def put(self, base: Tensor, view: Tensor) -> Tensor:
        if self.kind == "getitem":
            return updated(base, self.arg, view)
        if self.kind == "transpose":
            return ops.transpose(view, tuple(int(a) for a in np.argsort(self.arg)))
        return ops.reshape(view, tuple(base.shape))

    def bounds(self, shape: tuple):
        if self.kind != "getitem":
            return _whole(shape)
        key = self.arg if isinstance(self.arg, tuple) else (self.arg,)
        return region_of_key(shape, ix._normalize_key(key, len(shape)))


def _link(view: Tensor, base: Tensor, kind: str, arg) -> Tensor:
    if view is base or type(base) is Variable or type(view) is Variable:
        return view
    view._links = [_Link(base, kind, arg), []]
    links = getattr(base, "_links", None)
    if links is None:
        links = base._links = [None, []]
    views = links[1]
    if len(views) > 16 and len(views) & (len(views) - 1) == 0:   # now and then: drop the dead
        views[:] = [w for w in views if w() is not None]
    views.append(weakref.ref(view))
    return view


def _unlinked(out, base, name: str):
    """`out`, a copy where numpy gives a view of `base`: marked so that assignments that
    would make the two differ from numpy's are refused (check_unlinked)."""
    if isinstance(out, (list, tuple)):
        return type(out)(_unlinked(o, base, name) for o in out)
    if not isinstance(base, Tensor) or not isinstance(out, Tensor):
        return out
    return _link(out, base, "unlinked", name)


def check_unlinked(t: Tensor, what: str) -> None:
    """Refuses an assignment into `t` when `t` is such a copy of a tensor that still lives:
    numpy would write through to that tensor, pforjac would not. (The other direction, an
    assignment into the tensor while such a copy lives, is not refused: tapes keep
    temporaries alive, so a live copy does not mean the program reads it again.)"""
    link = (getattr(t, "_links", None) or (None,))[0]
    if link is not None and link.kind == "unlinked" and link.base() is not None:
        raise TypeError(f"{what}: this tensor is the result of {link.arg}, a view in numpy, "
                        f"which pforjac keeps as a copy: the assignment would not reach the "
                        f"tensor it was taken from. Assign into that tensor, or into a copy "
                        f"(.copy()) of this one")


def base_of(t: Tensor) -> Tensor | None:
    link = (getattr(t, "_links", None) or (None,))[0]
    return None if link is None else link.base()


def after_write(t: Tensor, region) -> None:
    """After `t` was rebound by an assignment into `region` of it (flat bounds, ALL or
    None for nothing): its overlapping views taken again, its new value written back into
    its base."""
    if region is None:
        return
    _refresh(t, region, skip=None)
    _write_back(t)


def _refresh(t: Tensor, region, skip) -> None:
    views = (getattr(t, "_links", None) or (None, ()))[1]
    for ref in list(views):
        w = ref()
        if w is None or w is skip or base_of(w) is not t or w._links[0].kind == "unlinked":
            continue
        link = w._links[0]
        if region is ALL or _overlap(link.bounds(tuple(t.shape)), region):
            rebind(w, link.take(t))
            _refresh(w, ALL, skip=None)


def _write_back(t: Tensor) -> None:
    base = base_of(t)
    if base is None or t._links[0].kind == "unlinked":
        return
    link = t._links[0]
    rebind(base, link.put(base, t))
    _refresh(base, link.bounds(tuple(base.shape)), skip=t)
    _write_back(base)


def _overlap(a, b) -> bool:
    if a is None or b is None:
        return False
    if a is ALL or b is ALL:
        return True
    return not (a[1] < b[0] or b[1] < a[0])


# -- the flat range a basic key covers ------------------------------------------------------
def region_of_key(shape: tuple, key: tuple):
    """(lowest, highest) flat position `key` (normalized, basic) selects in `shape`, or None
    if it selects nothing."""
    strides = np.cumprod((1,) + tuple(shape[:0:-1]))[::-1]
    lo = hi = 0
    axis = 0
    for k in key:
        if k is None:
            continue
        if isinstance(k, int):
            span = (k % shape[axis],) * 2
        else:
            r = range(*k.indices(shape[axis]))
            if not r:
                return None
            span = (min(r[0], r[-1]), max(r[0], r[-1]))
        lo, hi = lo + span[0] * strides[axis], hi + span[1] * strides[axis]
        axis += 1
    for a in range(axis, len(shape)):
        if shape[a] == 0:
            return None
        hi += (shape[a] - 1) * strides[a]
    return int(lo), int(hi)


def _whole(shape) -> tuple | None:
    return (0, int(np.prod(shape)) - 1) if int(np.prod(shape)) else None


# -- the view-making functions ----------------------------------------------------------------
def _is_view_key(key, ndim: int) -> bool:
    """numpy's rule: basic indexing gives a view, except when it picks one element (a
    scalar: a copy)."""
    if type(key) is slice:
        return True
    if type(key) is int:
        return ndim > 1
    key = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, (Tensor, np.ndarray, list, range, bool, np.bool_)) for k in key):
        return False
    ints = sum(1 for k in key if isinstance(k, (int, np.integer)))
    return not (ints == ndim and all(k is not Ellipsis and k is not None for k in key))


def _getitem(x, key):
    out = ix.getitem(x, key)
    if out is x or not _is_view_key(key, x.ndim):
        return out
    return _link(out, x, "getitem", key)


def _permuted(x, out, perm) -> Tensor:
    return _link(out, x, "transpose", perm)


def _transpose(x, axes=None):
    out = ops.transpose(x, axes)
    ndim = x.ndim
    perm = tuple(reversed(range(ndim))) if axes is None else tuple(a % ndim for a in axes)
    return _permuted(x, out, perm) if isinstance(x, Tensor) else out


def _order(args, kwargs) -> str:
    """The `order` a reshape or ravel call asks for (numpy's last positional string)."""
    return kwargs.get("order", args[-1] if args and isinstance(args[-1], str) else "C")


def _reshaped(x, out, order: str = "C") -> Tensor:
    """`out`, x reshaped, linked as x's view where numpy surely gives one (x C-contiguous);
    unlinked where numpy may copy or view depending on strides (Fortran order, a reshape of
    a transpose or a strided slice)."""
    if not isinstance(x, Tensor) or not isinstance(out, Tensor):
        return out
    if order == "F" or not _c_contiguous(x):
        return _unlinked(out, x, "a reshape numpy may copy or view (order='F', or of a "
                                 "non-contiguous view)")
    return _link(out, x, "reshape", tuple(out.shape))


def _c_contiguous(x: Tensor) -> bool:
    """Whether numpy's array for `x` would be C-contiguous: not a view, a reshape of one
    that is, or a basic slice that keeps whole trailing axes (ints first, then at most one
    step-1 slice, then whole axes)."""
    link = (getattr(x, "_links", None) or (None,))[0]
    if link is None or link.base() is None:
        return True
    if link.kind == "reshape":
        return _c_contiguous(link.base())
    if link.kind != "getitem":
        return False
    base = link.base()
    key = ix._normalize_key(link.arg if isinstance(link.arg, tuple) else (link.arg,), base.ndim)
    axes = [k for k in key if k is not None]
    axis, partial = 0, False
    for k in axes:
        if isinstance(k, int):
            if partial:
                return False
        else:
            r = range(*k.indices(base.shape[axis]))
            whole = r.step == 1 and len(r) == base.shape[axis]
            if partial and not whole or r.step != 1 and len(r) > 1:
                return False
            partial = partial or not whole
        axis += 1
    return _c_contiguous(base)


def _getstate(t: Tensor):
    """Pickling: a view's links (weak references) stay behind; the tensor is its value."""
    import copyreg
    names = [n for n in copyreg._slotnames(type(t)) if n != "_links"]
    return None, {n: getattr(t, n) for n in names if hasattr(t, n)}


def install() -> None:
    """Wraps the view-making methods and numpy functions of Tensor to link their results."""
    Tensor.__getstate__ = _getstate
    Tensor.__getitem__ = _getitem
    Tensor.T = property(lambda self: _transpose(self))
    transpose_method, reshape_method = Tensor.transpose, Tensor.reshape

    def transpose(self, *axes):
        out = transpose_method(self, *axes)
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        perm = tuple(reversed(range(self.ndim))) if not axes else \
            tuple(int(a) % self.ndim for a in axes)
        return _permuted(self, out, perm)
    Tensor.transpose = transpose
    Tensor.reshape = lambda self, *shape, **kw: _reshaped(self, reshape_method(self, *shape, **kw),
                                                          _order(shape, kw))
    for fn in (np.reshape, np.ravel):
        FUNCTIONS[fn] = _linking_reshape(FUNCTIONS[fn])
    FUNCTIONS[np.transpose] = lambda a, axes=None: _transpose(a, axes)
    for fn in _NUMPY_VIEWS:
        if fn in FUNCTIONS:
            FUNCTIONS[fn] = _unlinking(FUNCTIONS[fn], f"np.{fn.__name__}")
    for name in ("swapaxes", "squeeze", "diagonal"):
        method = Tensor.__dict__.get(name)
        if callable(method):            # (numpy-method descriptors go through FUNCTIONS)
            setattr(Tensor, name, _unlinking(method, f"Tensor.{name}"))
    mT = Tensor.mT
    Tensor.mT = property(lambda self: _unlinked(mT.fget(self), self, "Tensor.mT"))


# numpy functions that return views pforjac computes as copies (see the module docstring)
_NUMPY_VIEWS = (np.swapaxes, np.moveaxis, np.squeeze, np.expand_dims, np.atleast_2d,
                np.atleast_3d, np.flip, np.fliplr, np.flipud, np.rot90, np.split,
                np.array_split, np.hsplit, np.vsplit, np.dsplit, np.diagonal,
                getattr(np, "matrix_transpose", np.swapaxes))


def _unlinking(fn, name: str):
    def view_maker(a, *args, **kwargs):
        return _unlinked(fn(a, *args, **kwargs), a, name)
    view_maker.__name__ = getattr(fn, "__name__", name.rsplit(".", 1)[-1])
    view_maker.__doc__ = fn.__doc__
    return view_maker


def _linking_reshape(fn):
    def reshape(a, *args, **kwargs):
        return _reshaped(a, fn(a, *args, **kwargs), _order(args, kwargs))
    reshape.__name__ = fn.__name__
    return reshape
