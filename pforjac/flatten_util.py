"""`ravel_pytree`: a pytree of arrays as one flat vector, and the function back.

As `jax.flatten_util.ravel_pytree`: the leaves, each flattened in C order, are joined
in `tree_flatten`'s order, in the leaves' common dtype (`np.result_type`); `unravel`
splits such a vector, reshapes the pieces and casts each back to its leaf's dtype.
Both are written with pforjac's ops, so derivatives flow through them (a Jacobian of
`f(unravel(theta))` with respect to the flat `theta`, the Gauss-Newton matrix of a
model with a dict of parameters). Numpy leaves give a numpy vector; `unravel` of a
numpy vector gives numpy leaves, of a Tensor gives Tensors.

Example:
    >>> import numpy as np
    >>> from pforjac.flatten_util import ravel_pytree
    >>> flat, unravel = ravel_pytree({"w": np.ones((2, 2)), "b": np.zeros(2)})
    >>> flat.tolist()
    [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    >>> unravel(np.arange(6.0))["w"].tolist()
    [[2.0, 3.0], [4.0, 5.0]]
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import ops
from .tensor import Tensor, as_tensor
from .tree_util import tree_flatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable]:
    """`(flat, unravel)` for `pytree` (see the module's docstring)."""
    leaves, treedef = tree_flatten(pytree)
    shapes = [tuple(np.shape(x)) for x in leaves]
    dtypes = [_dtype(x) for x in leaves]
    dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float32)
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    if any(isinstance(x, Tensor) for x in leaves):
        # (a Python float leaf goes to the common dtype: as_tensor alone makes it float32)
        flat = ops.concat([ops.reshape(ops.cast(x if isinstance(x, Tensor) else as_tensor(
            np.asarray(x, dtype)), dtype), (-1,)) for x in leaves], axis=0) if leaves \
            else ops.zeros((0,), dtype)
    else:
        flat = np.concatenate([np.ravel(np.asarray(x, dtype)) for x in leaves]) if leaves \
            else np.zeros((0,), dtype)

    def unravel(vector):
        if tuple(np.shape(vector)) != (sum(sizes),):
            raise ValueError(f"ravel_pytree's unravel: expected a flat vector of "
                             f"{sum(sizes)} entries, got shape {tuple(np.shape(vector))}")
        bounds = np.cumsum(sizes)[:-1].tolist()
        if isinstance(vector, Tensor):
            parts = ops.split(vector, bounds, axis=0) if len(sizes) > 1 else [vector]
            pieces = [ops.cast(ops.reshape(p, s), d) for p, s, d in zip(parts, shapes, dtypes)]
        else:
            parts = np.split(np.asarray(vector), bounds)
            pieces = [np.reshape(p, s).astype(d) for p, s, d in zip(parts, shapes, dtypes)]
        return treedef.unflatten(pieces)
    return flat, unravel


def _dtype(x) -> np.dtype:
    if isinstance(x, Tensor):
        return x.dtype
    return np.result_type(x)
