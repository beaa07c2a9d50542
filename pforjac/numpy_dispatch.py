"""numpy's dispatch protocols on Tensor: `np.sin(t)` runs `pforjac.sin`, `np.dot(t, a)`
runs `pforjac.dot`, under tapes, in traces and eagerly alike.

NEP 13 (`__array_ufunc__`) hands numpy's ufuncs to `UFUNCS`, NEP 18 (`__array_function__`)
its other functions to `FUNCTIONS`: one table each, numpy callable -> pforjac function with
numpy's signature. What a table lacks, or a keyword the pforjac op does not take (`out=`,
`where=`, `order=`, ...), or a ufunc method (`np.add.at`, `.reduce`, `.outer`), raises a
TypeError naming it whenever an argument is needed by a derivative (a recording tape tracks
it, or it is a trace's symbolic value). Otherwise numpy runs on the values and returns what
it returns (plain arrays), as before dispatch existed: nothing is dropped that anything needs.
"""
from __future__ import annotations

import sys

import numpy as np

from . import ops as pj
from .ops._einsum_forms import from_sublists
from .tensor import Tensor, as_tensor, conversion_error, needed_by

__all__ = ["UFUNCS", "FUNCTIONS", "PENDING", "implements", "install", "as_numpy_reads"]


def _positive(x):
    if as_tensor(x).dtype == np.bool_:
        raise TypeError("numpy.positive: bool input has no sign (numpy refuses it too); cast "
                        "it to a number type first")
    return x


UFUNCS = {
    np.add: pj.add, np.subtract: pj.subtract, np.multiply: pj.multiply,
    np.divide: pj.divide, np.power: pj.power, np.maximum: pj.maximum,
    np.minimum: pj.minimum, np.negative: pj.neg, np.positive: _positive,
    np.exp: pj.exp, np.log: pj.log, np.log1p: pj.log1p, np.expm1: pj.expm1, np.log2: pj.log2,
    np.log10: pj.log10, np.sqrt: pj.sqrt, np.square: pj.square, np.reciprocal: pj.reciprocal,
    np.absolute: pj.abs, np.sign: pj.sign, np.sin: pj.sin, np.cos: pj.cos, np.tan: pj.tan,
    np.arcsin: pj.arcsin, np.arccos: pj.arccos, np.arctan: pj.arctan, np.sinh: pj.sinh,
    np.cosh: pj.cosh, np.tanh: pj.tanh, np.arcsinh: pj.arcsinh, np.arccosh: pj.arccosh,
    np.arctanh: pj.arctanh, np.arctan2: pj.arctan2, np.floor: pj.floor, np.ceil: pj.ceil,
    np.rint: pj.round, np.logaddexp: pj.logaddexp, np.matmul: pj.matmul,
    np.equal: pj.equal, np.not_equal: pj.not_equal, np.less: pj.less,
    np.less_equal: pj.less_equal, np.greater: pj.greater, np.greater_equal: pj.greater_equal,
    np.logical_and: pj.logical_and, np.logical_or: pj.logical_or,
    np.logical_not: pj.logical_not,
}


def as_numpy_reads(value, any_number: bool = False):
    """A list or tuple of Python numbers as numpy reads it next to arrays (NEP 50): an array
    (float64, complex128 or int64), not a weak Python number, so `np.add(t32, [0.5])` is
    float64 as numpy's is and no list of floats is ever rounded to float32. Only lists holding
    a float or complex (or any list, with `any_number`: a ufunc's operands), since lists of
    ints may be axes, shapes or indices; anything else unchanged."""
    if not isinstance(value, (list, tuple)) or not value:
        return value
    if not _numbers_only(value):         # a list of operands (multi_dot's, concatenate's)
        return type(value)(as_numpy_reads(v, any_number) for v in value)
    if not any_number and not _holds_inexact(value):
        return value
    try:
        return np.asarray(value)
    except ValueError:                   # ragged: the function decides
        return value


def _numbers_only(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_numbers_only(v) for v in value)
    return isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)


def _holds_inexact(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_inexact(v) for v in value)
    return isinstance(value, (float, complex))


def _name(fn) -> str:
    """`numpy.linalg.norm`, `numpy.add.reduce`: a numpy callable as users write it."""
    module = getattr(fn, "__module__", None) or "numpy"
    return f"{module}.{fn.__name__}" if module.startswith("numpy") else fn.__name__


def _leaves(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from _leaves(v)


def _needed(args, kwargs) -> Tensor | None:
    """The first Tensor argument a derivative needs (see tensor.needed_by), or None."""
    for t in _leaves((*args, *kwargs.values())):
        if needed_by(t):
            return t
    return None


def _values(v):
    """`v` with every Tensor (in lists and tuples too) replaced by its numpy value."""
    if isinstance(v, Tensor):
        return v.numpy()
    if isinstance(v, (list, tuple)):
        return type(v)(_values(x) for x in v)
    return v


def _refused(what: str, args, kwargs, reason: str) -> None:
    """Raises if a derivative needs an argument of `what`, which pforjac can't run as asked."""
    t = _needed(args, kwargs)
    if t is not None:
        raise conversion_error(t, f"{what}: {reason}")


class _Writers:
    """numpy's calls that write into a Tensor (`out=` a Tensor, `np.add.at`), installed by
    pforjac.mutation_numpy, which sits above this module: they rebind the Tensor."""
    ufunc_out = with_out = ufunc_at = None


WRITERS = _Writers()


# -- NEP 13 --------------------------------------------------------------------------------

def array_ufunc(self, ufunc, method, *inputs, **kwargs):
    fn = UFUNCS.get(ufunc)
    inputs = tuple(v if method == "at" and k == 1 else as_numpy_reads(v, True)   # (`at`'s
                   for k, v in enumerate(inputs))          # indices: a tuple is one per axis)
    if fn is not None and method == "__call__" and not kwargs:
        return fn(*inputs)
    return _ufunc_otherwise(ufunc, method, inputs, kwargs)


_UFUNC_DEFAULTS = {"casting": "same_kind", "order": "K", "where": True, "subok": True,
                   "dtype": None, "signature": None}


# registrations waiting for a module pforjac does not import itself (pforjac.scipy.special's,
# for scipy.special): each is retried on a ufunc UFUNCS lacks, and dropped once it returns True
PENDING: list = []


def _lookup(ufunc):
    fn = UFUNCS.get(ufunc)
    if fn is None and PENDING:
        PENDING[:] = [register for register in PENDING if not register()]
        fn = UFUNCS.get(ufunc)
    return fn


def _ufunc_name(ufunc) -> str:
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, ufunc.__name__, None) is ufunc:
        return f"scipy.special.{ufunc.__name__}"
    return f"numpy.{ufunc.__name__}"


def _ufunc_otherwise(ufunc, method, inputs, kwargs):
    """A ufunc call the fast path can't take: a method, keywords, or no pforjac op."""
    what = _ufunc_name(ufunc) + ("" if method == "__call__" else f".{method}")
    out = kwargs.get("out")
    writes = out is not None and (any(isinstance(o, Tensor) for o in _leaves(out))
                                  or _needed(inputs, {}) is not None)
    if writes and method == "__call__" and _lookup(ufunc) is not None:
        return WRITERS.ufunc_out(what, _lookup(ufunc), inputs, kwargs)
    if method == "at" and isinstance(inputs[0], Tensor):
        return WRITERS.ufunc_at(what, ufunc, *inputs)
    fn = _lookup(ufunc)
    extra = sorted(k for k, v in kwargs.items() if not _is_default(k, v))
    if method != "__call__":
        reason = f"pforjac has no {ufunc.__name__}.{method}"
    elif fn is None:
        reason = "pforjac has no equivalent yet"
    elif extra:
        reason = f"pforjac's {ufunc.__name__} takes no {', '.join(extra)}"
    else:
        return fn(*inputs)
    _refused(what, inputs, kwargs, reason)
    return getattr(ufunc, method)(*_values(inputs), **{k: _values(v) for k, v in kwargs.items()})


def _is_default(key, value) -> bool:
    default = _UFUNC_DEFAULTS.get(key, ())
    return value is default or (isinstance(value, (str, bool)) and value == default)


# -- NEP 18 --------------------------------------------------------------------------------

def array_function(self, func, types, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is not None:
        if not kwargs and len(args) == 1 and type(args[0]) is Tensor:   # np.sum(t): nothing
            return fn(args[0])                                          # to read as numpy
        args = tuple(as_numpy_reads(v) for v in args)
        kwargs = {k: as_numpy_reads(v) for k, v in kwargs.items()}
        if isinstance(kwargs.get("out"), Tensor):
            return WRITERS.with_out(fn, args, dict(kwargs))
        return fn(*args, **kwargs)
    _refused(_name(func), args, kwargs, "pforjac has no equivalent yet")
    return func(*_values(args), **{k: _values(v) for k, v in kwargs.items()})


def _no_extra(name: str, out=None, **given) -> None:
    """Refuses numpy keywords the pforjac op does not take (`given`: those passed with a
    value other than numpy's default), by name."""
    extra = sorted(k for k, v in given.items() if v is not None and v is not np._NoValue)
    if out is not None:
        extra.insert(0, "out")
    if extra:
        raise TypeError(f"numpy.{name} on pforjac Tensors does not take {', '.join(extra)}: "
                        f"pforjac's op has no such option (out= takes a Tensor only: a numpy "
                        f"array can't hold one); call it without, then cast, mask or "
                        f"reorder with pforjac ops")


def _cast(a, dtype):
    return a if dtype is None else pj.cast(a, dtype)


def _castable(a, dtype, name: str):
    """`a`, if numpy's "same_kind" casting allows it to `dtype` (complex to float would drop
    the imaginary part, float to int the fraction); else numpy's TypeError, naming `name`."""
    a = as_tensor(a)
    if not np.can_cast(a.dtype, dtype, "same_kind"):
        raise TypeError(f"numpy.{name}: cannot cast {a.dtype.name} to {np.dtype(dtype).name} "
                        f"with casting='same_kind' (it would lose the imaginary part or the "
                        f"fraction); cast explicitly with pforjac.cast(x, dtype) first")
    return a


def _reduction(name: str):
    """np.sum, np.mean, np.prod: the Tensor method, which refuses `out=` and numpy's other
    keywords by name (the method takes `dtype` as a keyword)."""
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, **numpy_keywords):
        typed = {} if dtype is None else {"dtype": dtype}
        return getattr(as_tensor(a), name)(axis, keepdims, out=out, **typed, **numpy_keywords)
    reduce.__name__ = name
    return reduce


def _extremum(name: str, method: str):
    def reduce(a, axis=None, out=None, keepdims=False, **numpy_keywords):
        return getattr(as_tensor(a), method)(axis, keepdims, out=out, **numpy_keywords)
    reduce.__name__ = name
    return reduce


def _spread(fn, name: str):
    def reduce(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
               correction=np._NoValue, **numpy_keywords):
        _no_extra(name, out, **numpy_keywords)
        ddof = ddof if correction is np._NoValue else correction   # (the array API's name)
        if dtype is not None:
            a = _castable(a, dtype, name)
        return fn(_cast(a, dtype), axis, bool(keepdims), ddof)
    reduce.__name__ = name
    return reduce


def _arg(fn, name: str):
    def arg(a, axis=None, out=None, *, keepdims=False):
        _no_extra(name, out, keepdims=keepdims or None)
        return fn(a, axis)
    arg.__name__ = name
    return arg


def _cumsum(a, axis=None, dtype=None, out=None):
    _no_extra("cumsum", out)
    return _cast(pj.cumsum(_cast(a, dtype), axis), dtype)


def _joined(fn, name: str):
    def join(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
        _no_extra(name, out, casting=None if casting == "same_kind" else casting)
        arrays = [_cast(_castable(a, dtype, name), dtype) for a in arrays] \
            if dtype is not None else list(arrays)
        if axis is None:
            return fn([pj.reshape(a, (-1,)) for a in arrays], 0)
        return fn(arrays, axis)
    join.__name__ = name
    return join


def _where(condition, *branches):
    if not branches:        # np.nonzero(condition), where its value is known (pforjac.numpy)
        return FUNCTIONS[np.nonzero](condition)
    if len(branches) != 2:
        raise TypeError("numpy.where takes the condition alone (np.nonzero) or with both "
                        "branches: np.where(c, x, y)")
    return pj.where(condition, *branches)


def _reshape(a, /, shape=None, order="C", *, newshape=None, copy=None):
    _no_extra("reshape", copy=copy)
    return reshaped(a, newshape if shape is None else shape, order, "reshape")


def _ravel(a, order="C"):
    return reshaped(a, (-1,), order, "ravel")


def reshaped(a, shape, order: str, name: str):
    """`a` reshaped reading and writing its entries in `order`: "C" (last index fastest),
    "F" (first index fastest); "A" and "K" are "C" for a Tensor, whose entries are in C
    order (numpy's memory-layout orders)."""
    if order in ("C", "A", "K", None):
        return pj.reshape(a, shape)
    if order != "F":
        raise ValueError(f"numpy.{name}: order must be one of 'C', 'F', 'A' or 'K', got {order!r}")
    a = as_tensor(a)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    flipped = pj.reshape(pj.transpose(a), shape[::-1])
    return pj.transpose(flipped)


def _take(a, indices, axis=None, out=None, mode="raise"):
    _no_extra("take", out, mode=None if mode == "raise" else mode)
    return pj.gather(pj.reshape(a, (-1,)), indices, 0) if axis is None else \
        pj.gather(a, indices, axis)


def _dot(a, b, out=None):
    """np.dot: a product with a scalar, matmul up to a 2-D `b`, else a sum over a's last and
    b's second-to-last axis."""
    if out is not None:
        _no_extra("dot", out)
    a_ndim, b_ndim = _ndim(a), _ndim(b)
    if a_ndim == 0 or b_ndim == 0:
        return pj.multiply(a, b)
    if b_ndim <= 2:
        return pj.matmul(a, b)
    left, right = "abcdefghijklm"[:a_ndim], "nopqrstuvwxyz"[:b_ndim]
    right = right[:-2] + left[-1] + right[-1]
    return pj.einsum(f"{left},{right}->{left[:-1]}{right[:-2]}{right[-1]}", a, b)


def _ndim(v) -> int:
    return v.ndim if isinstance(v, (Tensor, np.ndarray)) else np.ndim(v)


def _einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """np.einsum; `optimize` is accepted and ignored (pforjac picks its own contraction order)."""
    _no_extra("einsum", out, order=None if order == "K" else order,
              casting=None if casting == "safe" else casting)
    if dtype is None:
        return pj.einsum(*operands)
    subscripts, operands = (operands[0], operands[1:]) if isinstance(operands[0], str) \
        else from_sublists(operands)
    return pj.einsum(subscripts, *[_cast(o, dtype) for o in operands])


def _like(fn, name: str, fill):
    def like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
        _no_extra(name, order=None if order == "K" else order, device=device)
        if shape is not None:       # (a Tensor to assign into: np.zeros_like(x, shape=6))
            return as_tensor(np.full(shape, fill, a.dtype if dtype is None else dtype))
        return _cast(fn(a), dtype)
    like.__name__ = name
    return like


def _clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
          max=np._NoValue, **numpy_keywords):
    _no_extra("clip", out, **numpy_keywords)
    low = min if a_min is np._NoValue else a_min
    high = max if a_max is np._NoValue else a_max
    return pj.clip(a, None if low is np._NoValue else low, None if high is np._NoValue else high)


def _round(a, decimals=0, out=None):
    """np.round: integers come back as they are, in their dtype (np.rint would make them
    floats)."""
    _no_extra("round", out, decimals=decimals or None)
    a = as_tensor(a)
    return a if a.dtype.kind in "iu" else pj.round(a)


def _swapaxes(a, axis1, axis2):
    return pj.swapaxes(a, axis1, axis2)


def _broadcast_to(array, shape, subok=False):
    return pj.broadcast_to(array, shape)


def _matrix_transpose(x, /):
    return pj.swapaxes(x, -1, -2)


def _pad(array, pad_width, mode="constant", **kwargs):
    _no_extra("pad", mode=None if mode == "constant" else mode,
              **{k: v for k, v in kwargs.items() if k != "constant_values"})
    return pj.pad(array, pad_width, kwargs.get("constant_values", 0.0))


FUNCTIONS = {
    np.sum: _reduction("sum"), np.mean: _reduction("mean"), np.prod: _reduction("prod"),
    np.max: _extremum("max", "max"), np.min: _extremum("min", "min"),
    np.amax: _extremum("amax", "max"), np.amin: _extremum("amin", "min"),
    np.var: _spread(pj.var, "var"), np.std: _spread(pj.std, "std"),
    np.argmax: _arg(pj.argmax, "argmax"), np.argmin: _arg(pj.argmin, "argmin"),
    np.cumsum: _cumsum, np.concatenate: _joined(pj.concat, "concatenate"),
    np.stack: _joined(pj.stack, "stack"), np.where: _where, np.reshape: _reshape,
    np.ravel: _ravel, np.take: _take, np.dot: _dot, np.einsum: _einsum, np.clip: _clip,
    np.round: _round, np.around: _round, np.pad: _pad,
    np.zeros_like: _like(pj.zeros_like, "zeros_like", 0),
    np.ones_like: _like(pj.ones_like, "ones_like", 1),
    np.transpose: pj.transpose, np.split: pj.split, np.tile: pj.tile,
    np.expand_dims: pj.expand_dims, np.squeeze: pj.squeeze, np.swapaxes: _swapaxes,
    np.moveaxis: pj.moveaxis, np.flip: pj.flip, np.roll: pj.roll, np.broadcast_to: _broadcast_to,
    np.linalg.matmul: lambda x1, x2, /: pj.matmul(x1, x2),
    np.matrix_transpose: _matrix_transpose, np.linalg.matrix_transpose: _matrix_transpose,
    # queries: no values read, nothing to differentiate
    np.shape: lambda a: tuple(a.shape), np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
}


def implements(*numpy_callables):
    """Registers the decorated function, written with numpy's signature, as what each of
    `numpy_callables` (a ufunc goes to UFUNCS, any other callable to FUNCTIONS) runs on
    Tensors. A callable registered twice is refused: one implementation per numpy name.

        @implements(np.linalg.solve)
        def solve(a, b): ...
    """
    def register(fn):
        for target in numpy_callables:
            table = UFUNCS if isinstance(target, np.ufunc) else FUNCTIONS
            if target in table:
                raise ValueError(f"{_name(target)} already has a pforjac implementation "
                                 f"({table[target]!r}); one per numpy function")
            table[target] = fn
        return fn
    return register


def install() -> None:
    Tensor.__array_ufunc__ = array_ufunc
    Tensor.__array_function__ = array_function


install()
