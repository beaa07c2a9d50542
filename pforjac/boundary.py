"""The boundary with numpy: numpy in, numpy out at top level; Tensors for code still being
differentiated.

The rule, in one place for every entry point (`grad`, `jacobian`, `pforjac.function`, ...):

- at top level (no GradientTape recording, no trace open: nothing could differentiate the
  result further) and given no Tensor among its arguments (numpy arrays, Python numbers,
  lists of numbers), an entry point returns numpy: each Tensor in its result (the same
  pytree, auxiliary data included) becomes a read-only numpy array of the same dtype, a
  0-d one a numpy scalar (as `np.sum` returns: `np.float64`, `np.float32`);
- given a Tensor anywhere in its arguments, or called inside a tape or a trace, it returns
  Tensors as before, so derivatives compose (`pj.grad(pj.grad(f))`, `pj.jacobian` of a
  `pj.grad`, a `pj.function` of a `pj.hessian`).

The arrays are read-only views of the results, without a copy, as `Tensor.numpy()` and JAX's
`np.asarray` give; `np.array(r)` is a writable copy. scipy's solvers read them as they are.

Use `numpy_boundary` on a function that returns Tensors to give it the rule:

    >>> import numpy as np, pforjac as pj
    >>> from pforjac.boundary import numpy_boundary
    >>> square = numpy_boundary(lambda x: pj.constant(x) ** 2)
    >>> square(np.array([1.0, 2.0]))
    array([1., 4.])
    >>> type(square(pj.constant([3.0])))
    <class 'pforjac.tensor.Tensor'>
"""
from __future__ import annotations

import functools
import numbers
from typing import Callable

import numpy as np

from .state import _state
from .tensor import Tensor
from .tree import tree_flatten, tree_unflatten

__all__ = ["at_top_level", "returns_numpy", "as_numpy", "numpy_boundary", "numpy_result",
           "numbers_as_array"]


def at_top_level() -> bool:
    """True when no GradientTape records and no trace is open in this thread: a result
    made now can't be differentiated by anything around the call."""
    return not (_state.tapes or _state.traces)


def returns_numpy(args: tuple, kwargs: dict | None = None) -> bool:
    """Whether a call with these arguments returns numpy: at top level and no Tensor among
    the leaves of `args` and `kwargs` (a Tensor anywhere, even mixed with arrays: Tensors)."""
    if _state.tapes or _state.traces:
        return False
    if not kwargs:
        for a in args:       # the common call, positional arrays or a dict of parameters:
            if type(a) is not np.ndarray and type(a) is not float and not (   # no flattening
                    type(a) is dict and all(type(v) is np.ndarray for v in a.values())):
                break
        else:
            return True
    leaves, _ = tree_flatten((args, kwargs or {}))
    return not any(isinstance(leaf, Tensor) for leaf in leaves)


def as_numpy(tree):
    """`tree` with each Tensor leaf replaced by its read-only numpy array (0-d: a numpy
    scalar of its dtype); other leaves (auxiliary data: strings, ints, arrays) as they are."""
    if isinstance(tree, Tensor):
        return _numpy_leaf(tree)
    if type(tree) is tuple and all(type(v) is Tensor for v in tree):   # (value, grad)
        return tuple([_numpy_leaf(v) for v in tree])
    leaves, structure = tree_flatten(tree)
    if not any(isinstance(leaf, Tensor) for leaf in leaves):
        return tree
    return tree_unflatten(structure, [_numpy_leaf(v) if isinstance(v, Tensor) else v
                                      for v in leaves])


def _numpy_leaf(t: Tensor):
    arr = t.numpy()
    return arr[()] if arr.ndim == 0 else arr


def numpy_result(arr: np.ndarray):
    """An array computed for the caller (a compiled function's output) as the boundary
    hands it out, without making a Tensor: a read-only view that can't be made writable
    again (its owner is a read-only memoryview: the array may be a buffer pforjac reuses),
    a 0-d one a numpy scalar."""
    if arr.ndim == 0:
        return arr[()]
    return np.asarray(memoryview(arr).toreadonly()) if arr.dtype.kind not in "OMm" else arr


def numpy_boundary(entry: Callable) -> Callable:
    """`entry` with the numpy-in, numpy-out rule (module docstring): its results come back
    as numpy (`as_numpy`) when `returns_numpy` holds for its arguments, as Tensors
    otherwise. The decision is taken before the call, from the arguments and the context
    stack, so it costs a few attribute reads for positional arrays.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> from pforjac.boundary import numpy_boundary
        >>> @numpy_boundary
        ... def total(x):
        ...     return pj.constant(x).sum()
        >>> total(np.array([1.0, 2.0], np.float32))
        np.float32(3.0)
    """
    @functools.wraps(entry)
    def at_the_boundary(*args, **kwargs):
        if returns_numpy(args, kwargs):
            return as_numpy(entry(*args, **kwargs))
        return entry(*args, **kwargs)
    return at_the_boundary


def numbers_as_array(value):
    """A list (nested lists) of Python numbers as the array numpy makes of it; anything
    else (a tuple or list holding arrays or Tensors: a pytree) unchanged."""
    if isinstance(value, list) and value and _numbers_only(value):
        return np.asarray(value)
    return value


def _numbers_only(value) -> bool:
    if isinstance(value, list):
        return all(_numbers_only(v) for v in value)
    return isinstance(value, numbers.Number) and not isinstance(value, (bool, np.bool_))
