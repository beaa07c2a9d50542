"""The value an assignment into a Tensor makes: `t` with `t[key] = value` as a new tensor,
with numpy's indexing, casting and broadcasting rules (pforjac.mutation rebinds `t` to it).

A basic key becomes an `index_update` with that key; any advanced index (integer arrays,
a boolean mask, numpy reads it) becomes flat positions, the last write to a position
winning as in numpy; a mask or an integer scalar a trace computes becomes a `where`.
"""
from __future__ import annotations

import numpy as np

from . import ops
from .ops import indexing as ix
from .tensor import Tensor

__all__ = ["updated", "at_positions", "value_for", "is_index_array", "describe"]


def describe(t: Tensor) -> str:
    return f"the tensor {t.dtype.name}{list(t.shape)}"


def updated(t: Tensor, key, value) -> Tensor:
    """`t` with `t[key] = value`, as a new tensor (numpy's indexing and casting rules)."""
    key = key if isinstance(key, tuple) else (key,)
    if not any(is_index_array(k) for k in key):
        key = ix._normalize_key(key, t.ndim)
        if not any(is_index_array(k) for k in key):       # (a range becomes a list)
            return _basic(t, key, value)
    traced = [k for k in key if isinstance(k, Tensor) and k._trace is not None]
    if traced:
        return _traced_index(t, key, value)
    positions = np.arange(t.size).reshape(t.shape)[tuple(_concrete(k) for k in key)]
    return at_positions(t, positions, value)


def is_index_array(k) -> bool:
    return isinstance(k, (Tensor, np.ndarray, list, range)) or \
        isinstance(k, (bool, np.bool_))


def _concrete(k):
    return k.numpy() if isinstance(k, Tensor) else k


def _basic(t: Tensor, key: tuple, value) -> Tensor:
    shape = ix._view_of_shape(t.shape)[key].shape
    return ix.index_update(t, value_for(t, value, shape), key)


def at_positions(t: Tensor, positions: np.ndarray, value) -> Tensor:
    """The update at flat positions (any advanced index, read by numpy): the last value
    written to a position wins, as in numpy."""
    v = value_for(t, value, positions.shape)
    if positions.size == 0:
        return t
    flat_pos, v = positions.ravel().astype(np.intp), ops.reshape(v, (-1,))
    keep = _last_occurrences(flat_pos)
    if keep is not None:
        flat_pos, v = flat_pos[keep], ops.gather(v, keep)
    new = ix.index_update(ops.reshape(t, (-1,)), v, (flat_pos,))
    return ops.reshape(new, t.shape)


def _last_occurrences(pos: np.ndarray):
    """The indices that keep the last write to each position, or None if none repeats."""
    if pos.size < 2 or ix.distinct_indices(pos, max(int(pos.max()) + 1, 1)):
        return None
    _, first_from_end = np.unique(pos[::-1], return_index=True)
    return np.sort(pos.size - 1 - first_from_end)


def _traced_index(t: Tensor, key: tuple, value) -> Tensor:
    """An index a trace computes: a boolean mask over t's leading axes, or one integer
    scalar along the first axis, as a `where` (its shape is static)."""
    (k,) = key if len(key) == 1 else (None,)
    if k is not None and k.dtype == np.bool_ and tuple(k.shape) == tuple(t.shape[:k.ndim]):
        mask = ops.reshape(k, tuple(k.shape) + (1,) * (t.ndim - k.ndim))
        return _where(t, mask, value, t.shape[k.ndim:])
    if k is not None and k.ndim == 0 and k.dtype.kind in "iu" and t.ndim:
        n = t.shape[0]
        k = ops.where(ops.less(k, 0), k + k.dtype.type(n), k)
        hit = ops.equal(Tensor._from_array(np.arange(n, dtype=k.dtype)), k)
        return _where(t, ops.reshape(hit, (n,) + (1,) * (t.ndim - 1)), value, t.shape[1:])
    raise IndexError(
        f"t[index] = v with an index computed inside a trace (pforjac.function, a pfor body): "
        f"pforjac takes a boolean mask over t's leading axes or one integer scalar there; "
        f"write the update as pj.where(mask, v, t)")


def _where(t: Tensor, mask, value, inner: tuple) -> Tensor:
    v = value_for(t, value, None)
    if v.ndim > len(inner) and any(d != 1 for d in v.shape[:v.ndim - len(inner)]):
        raise ValueError(
            f"t[mask] = v with a mask computed inside a trace: v of shape {tuple(v.shape)} "
            f"would need the number of True entries, which only the data decides; pass a "
            f"value that broadcasts to {tuple(inner) or 'a scalar'}, or use pj.where(mask, v, t)")
    return ops.where(mask, v, t)


def value_for(t: Tensor, value, shape) -> Tensor:
    """`value` as a tensor of t's dtype (numpy's casting; a complex value into a real
    tensor is refused), broadcast to `shape` (None: left as it is)."""
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        value = _stacked(value)
    if isinstance(value, Tensor):
        if value.dtype.kind == "c" and t.dtype.kind != "c":
            raise TypeError(f"assigning a complex value into {describe(t)} would drop its "
                            f"imaginary part; take pj.real(v) first, or make the tensor complex")
        v = value if value.dtype == t.dtype else ops.cast(value, t.dtype)
    else:
        v = Tensor._from_array(_constant_of(value, t.dtype))
    return v if shape is None else _broadcast(v, tuple(shape))


def _constant_of(value, dtype) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        raise TypeError(f"assigning a complex value into a {np.dtype(dtype).name} tensor "
                        f"would drop its imaginary part; make the tensor complex")
    return array.astype(dtype)


def _broadcast(v: Tensor, shape: tuple) -> Tensor:
    if v.ndim > len(shape):                     # numpy drops leading axes of size 1
        extra = v.ndim - len(shape)
        if any(d != 1 for d in v.shape[:extra]):
            raise ValueError(f"could not broadcast the assigned value of shape "
                             f"{tuple(v.shape)} into the indexed shape {shape}")
        v = ops.reshape(v, tuple(v.shape[extra:]))
    if tuple(v.shape) == shape:
        return v
    try:
        np.broadcast_shapes(tuple(v.shape), shape)
    except ValueError:
        raise ValueError(f"could not broadcast the assigned value of shape {tuple(v.shape)} "
                         f"into the indexed shape {shape}") from None
    return ops.broadcast_to(v, shape)


def _holds_tensor(value) -> bool:
    return any(isinstance(v, Tensor) or isinstance(v, (list, tuple)) and _holds_tensor(v)
               for v in value)


def _stacked(value):
    """Nested lists holding Tensors, stacked (differentiably), as pforjac.numpy.array does."""
    if not isinstance(value, (list, tuple)):
        return value
    return ops.stack([_stacked(v) for v in value])
