"""The arguments of a `pforjac.function` call: which leaves are inputs, the trace signature
they make, and the quick key of positional arrays and Tensors (the general path's
shortcut; `lean_call.py` has the numpy-only one)."""
from __future__ import annotations

import numpy as np

from ..tensor import SymbolicTensor, Tensor, Variable, constant
from ..tree import tree_flatten, tree_unflatten

__all__ = ["is_input", "as_input", "arrays_as_tensors", "quick_key", "quick_arrays",
           "structure_key", "signature", "stand_in"]


def is_input(leaf) -> bool:
    """Tensors (not Variables), numpy arrays and their subclasses, and other array-likes
    (anything with `__array__` but numpy scalars, which are Python values): what eager ops
    take as arrays is an input here too, read at every call, never baked in."""
    if isinstance(leaf, Tensor):
        return not isinstance(leaf, Variable)
    return isinstance(leaf, np.ndarray) or (hasattr(type(leaf), "__array__")
                                            and not isinstance(leaf, np.generic))


def arrays_as_tensors(tree):
    """`tree` with its array inputs (numpy arrays, array-likes: not Tensors) made Tensors."""
    leaves, structure = tree_flatten(tree)
    return tree_unflatten(structure, [constant(as_input(leaf)) if is_input(leaf)
                                      and not isinstance(leaf, Tensor) else leaf
                                      for leaf in leaves])


def as_input(leaf) -> np.ndarray:
    """A Tensor's array as it is; a numpy array C-ordered, as `pforjac.constant` copies it
    (a product reading an input rounds by its layout: the call must give eager's bits); an
    ndarray subclass (np.matrix, a masked array) or another array-like (a torch tensor) as
    the plain array `np.asarray` makes of it, as eager ops do."""
    if isinstance(leaf, Tensor):
        return leaf.numpy()
    if type(leaf) is not np.ndarray:
        leaf = np.asarray(leaf)
    return leaf if leaf.flags.c_contiguous else np.ascontiguousarray(leaf)


def quick_key(args: tuple):
    """The signature of positional numpy arrays / constant Tensors, or plain dicts of numpy
    arrays under str keys (a model's parameters), alone (no flattening), or None for any
    other call."""
    key = ["quick"]
    for a in args:
        if type(a) is np.ndarray:
            key.append((a.shape, a.dtype.str))
        elif type(a) is Tensor:
            arr = a.numpy()
            key.append((arr.shape, arr.dtype.str))
        elif type(a) is dict and all(type(k) is str and type(v) is np.ndarray
                                     for k, v in a.items()):
            key.append(("dict",) + tuple((k, a[k].shape, a[k].dtype.str) for k in sorted(a)))
        else:
            return None
    return tuple(key)


def quick_arrays(args: tuple) -> list:
    """The input arrays of a call `quick_key` accepted, in flattening order (dicts by
    sorted keys)."""
    arrays = []
    for a in args:
        if type(a) is dict:
            arrays.extend(as_input(a[k]) for k in sorted(a))
        else:
            arrays.append(as_input(a))
    return arrays


def structure_key(node):
    """The arguments' nesting as a hashable key: container types themselves (two namedtuple
    classes of one name are different signatures), dict keys by type and repr."""
    return node._key()


def signature(leaves) -> tuple[tuple, list, list]:
    """(the trace signature, the input arrays, the Variable arguments)."""
    key, arrays, variables = [], [], []
    for leaf in leaves:
        if isinstance(leaf, SymbolicTensor):
            raise TypeError("a pforjac.function can't be called with symbolic values; call it "
                            "eagerly, or call the undecorated function inside another trace")
        if is_input(leaf):
            arr = as_input(leaf)
            key.append(("tensor", arr.shape, arr.dtype.str))
            arrays.append(arr)
        elif isinstance(leaf, Variable):    # by shape and dtype, and which are the same one
            same = next((j for j, v in enumerate(variables) if v is leaf), len(variables))
            key.append(("variable", leaf.shape, leaf.dtype.str, leaf.trainable, same))
            variables.append(leaf)
        else:
            try:
                hash(leaf)
            except TypeError:
                raise TypeError(f"pforjac.function: argument {leaf!r:.60} is neither a tensor nor "
                                f"hashable, so it can't be part of the trace signature") from None
            key.append(("value", type(leaf).__name__, value_key(leaf)))
    return tuple(key), arrays, variables


def stand_in(v: Variable) -> Variable:
    """A Variable like `v` (its value when traced, trainable, name) of another identity."""
    twin = object.__new__(Variable)
    twin._value, twin.trainable, twin.name = v._value, v.trainable, v.name
    twin._snapshot = twin._handed = twin._trace = None
    return twin


def value_key(leaf):
    """A Python value as the trace signature sees it: floats by their bits, so -0.0 is not
    0.0 (x / s differs) and a NaN is keyed by its bits, not by itself (NaN != NaN would
    trace every call): numpy's arithmetic carries a NaN's sign and payload into results."""
    if isinstance(leaf, (float, np.floating)):
        if leaf != leaf:
            return "nan " + np.float64(leaf).tobytes().hex()
        if isinstance(leaf, np.floating) and leaf.dtype.itemsize > 8:    # long double: every
            return np.format_float_scientific(leaf, unique=True, sign=True)   # digit it has
        return float(leaf).hex()
    if isinstance(leaf, (complex, np.complexfloating)):
        return tuple(value_key(part) for part in (leaf.real, leaf.imag))
    return leaf
