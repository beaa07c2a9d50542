"""Pytrees for PyTorch's functional API (`jacobian`, `hessian`, `vjp`, `jvp`, `hvp`).

PyTorch's form stays as it is: `inputs` a Tensor (or numpy array) or a tuple of them,
`func(*inputs)`. Any other `inputs` (a dict of parameters, a namedtuple, a registered
dataclass, a tuple holding such) is a pytree: `func` is called with it (with a tuple's
items as its arguments, as PyTorch does), and the results nest as JAX's do: an output's
structure outside, the inputs' inside; `v` has the structure of the outputs (`vjp`)
or of the inputs (`jvp`, `hvp`).

Example:
    >>> import numpy as np, pforjac as pj
    >>> params = {"w": np.array([1.0, 2.0]), "b": np.array(0.5)}
    >>> J = pj.jacobian(lambda p: np.tanh(p["w"] * 0.0 + p["b"]), params)
    >>> sorted(J), J["w"].shape, J["b"].shape
    (['b', 'w'], (2, 2), (2,))
"""
from __future__ import annotations

import functools

import numpy as np

from .tensor import Tensor
from .tree_util import flatten_up_to, tree_flatten, tree_structure, treedef_is_leaf

__all__ = ["pytree_inputs"]


def _is_array(value) -> bool:
    return isinstance(value, (Tensor, np.ndarray, np.generic))


def _plain(inputs) -> bool:
    """PyTorch's own form (checked there): one leaf (an array), or a flat tuple or list of
    leaves."""
    if inputs is None or treedef_is_leaf(tree_structure(inputs)):
        return True
    return type(inputs) in (tuple, list) and \
        all(treedef_is_leaf(tree_structure(v)) for v in inputs)


def _leaf(value, fn_name: str):
    if _is_array(value):
        return value
    array = np.asarray(value)
    if array.dtype == object:
        raise TypeError(f"{fn_name}: an input leaf of type {type(value).__name__} is not an "
                        f"array; register its class as a pytree node "
                        f"(pforjac.tree_util.register_dataclass or register_pytree_node)")
    return array


class _Flat:
    """`func` seen as a function of the inputs' leaves returning a tuple of output leaves."""

    def __init__(self, func, inputs, fn_name: str):
        self.is_tuple = type(inputs) in (tuple, list)
        args = tuple(inputs) if self.is_tuple else (inputs,)
        leaves, self.in_def = tree_flatten(args)
        self.leaves = tuple(_leaf(x, fn_name) for x in leaves)
        self.func, self.out_def = func, None

    def __call__(self, *xs):
        out = self.func(*self.in_def.unflatten(xs))
        leaves, self.out_def = tree_flatten(out)
        return tuple(leaves)

    def scalar(self, *xs):
        leaves = self(*xs)
        return leaves[0] if len(leaves) == 1 else leaves

    def group(self, values):
        """Per-input-leaf values in the inputs' structure (one level less when `inputs`
        was not a tuple)."""
        args = self.in_def.unflatten(values)
        return args if self.is_tuple else args[0]

    def input_like(self, v, fn_name: str):
        if v is None:
            return None
        try:
            return tuple(flatten_up_to(self.in_def, tuple(v) if self.is_tuple else (v,)))
        except ValueError as e:
            raise ValueError(f"{fn_name}: v must have the structure of inputs: {e}") from None


def pytree_inputs(fn_name: str):
    """Decorates a functional entry point of PyTorch's form to take pytrees too."""
    def decorate(entry):
        wrap = _WRAPPERS[fn_name]

        @functools.wraps(entry)
        def accepting(func, inputs, *args, **kwargs):
            if _plain(inputs) or not callable(func):
                return entry(func, inputs, *args, **kwargs)
            return wrap(entry, _Flat(func, inputs, fn_name), *args, **kwargs)
        return accepting
    return decorate


def _jacobian(entry, flat: _Flat, *args, **kwargs):
    rows = entry(flat, flat.leaves, *args, **kwargs)
    return flat.out_def.unflatten([flat.group(row) for row in rows])


def _hessian(entry, flat: _Flat, *args, **kwargs):
    rows = entry(flat.scalar, flat.leaves, *args, **kwargs)
    return flat.group([flat.group(row) for row in rows])


def _vjp(entry, flat: _Flat, v=None, *args, **kwargs):
    v_leaves, v_def = tree_flatten(v) if v is not None else (None, None)
    outputs, grads = entry(flat, flat.leaves, None if v is None else tuple(v_leaves),
                           *args, **kwargs)
    if v_def is not None and v_def != flat.out_def:
        raise ValueError(f"vjp: v has structure {v_def}, but the outputs have {flat.out_def}")
    return flat.out_def.unflatten(outputs), flat.group(grads)


def _jvp(entry, flat: _Flat, v=None, *args, **kwargs):
    outputs, tangents = entry(flat, flat.leaves, flat.input_like(v, "jvp"), *args, **kwargs)
    return flat.out_def.unflatten(outputs), flat.out_def.unflatten(tangents)


def _hvp(entry, flat: _Flat, v=None, *args, **kwargs):
    out, hv = entry(flat.scalar, flat.leaves, flat.input_like(v, "hvp"), *args, **kwargs)
    return out, flat.group(hv)


_WRAPPERS = {"jacobian": _jacobian, "hessian": _hessian, "vjp": _vjp, "jvp": _jvp, "hvp": _hvp}
