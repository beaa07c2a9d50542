"""autograd's `flatten(value) -> (1-D array, unflatten)` for nests of tuples, lists and
dicts (sorted keys) holding arrays or scalars."""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tree import tree_flatten, tree_unflatten

__all__ = ["flatten", "flatten_func"]


def flatten(value):
    leaves, tree = tree_flatten(value)
    shapes = [np.shape(v) for v in leaves]
    sizes = [int(np.prod(s)) for s in shapes]
    import pforjac.numpy as pnp
    parts = [pnp.ravel(v) if isinstance(v, Tensor) else np.ravel(v) for v in leaves]
    flat = pnp.concatenate(parts) if any(isinstance(p, Tensor) for p in parts) else \
        (np.concatenate(parts) if parts else np.array([]))

    def unflatten(vector):
        out, start = [], 0
        for shape, size in zip(shapes, sizes):
            out.append(vector[start:start + size].reshape(shape))
            start += size
        return tree_unflatten(tree, out)
    return flat, unflatten


def flatten_func(func, example):
    _ex, unflatten = flatten(example)

    def _func(_x, *args):
        return flatten(func(unflatten(_x), *args))[0]
    return _func, unflatten, _ex
