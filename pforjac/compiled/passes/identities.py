"""Products that do no arithmetic: with a one-hot seed (a row lookup), with ones (the value
itself, or a broadcast of it), and gathers of every row in order (a C-ordered copy).

- `onehot_products`: `matmul(one_hot(idx, d), u)` becomes `gather(u, idx)`.
- `drop_identities`: products with (and powers to) constant ones, and gathers of every row in order where
  only ufuncs read them (those then write C-ordered results, as from the copy); a
  `multiply_no_nan` by a constant with no zeros is a plain multiply.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ...ops.elementwise import add_p, multiply_no_nan_p, multiply_p
from ...ops.indexing import gather_p
from ...ops.shape import broadcast_to_p
from ...program import Equation, Program, constant_values, eliminate_dead_code
from ...tensor import SymbolicTensor, Tensor, Variable, constant
from ..codegen import plain_ufunc
from ._rewrite import LazyLayouts, rename, renamed

__all__ = ["onehot_products", "drop_identities", "broadcast_by_ones"]


def onehot_products(program: Program) -> Program:
    """`matmul(one_hot(idx, d), u)` is `gather(u, idx)`: the product with the Jacobian's
    one-hot seed is a row lookup, not a dense product (constant indices in range, a finite
    constant `u`)."""
    values = constant_values(program)
    producer: dict[int, Equation] = {}
    kept = []
    for eqn in program.equations:
        for v in eqn.outputs:
            producer[id(v)] = eqn
        hot = producer.get(id(eqn.inputs[0])) if eqn.prim.name == "matmul" else None
        if hot is not None and hot.prim.name == "one_hot" and eqn.inputs[1].ndim == 2 \
                and eqn.outputs[0].dtype == eqn.inputs[1].dtype \
                and _indices_in_range(values.get(id(hot.inputs[0])), hot.params["depth"]) \
                and _finite_constant(values.get(id(eqn.inputs[1]))):
            eqn = Equation(gather_p, [eqn.inputs[1], hot.inputs[0]], {"axis": 0}, eqn.outputs,
                           eqn.origin)
        kept.append(eqn)
    return eliminate_dead_code(replace(program, equations=kept))


def _finite_constant(value) -> bool:
    """0 * inf is NaN in the product but not in a row lookup: only finite constants qualify."""
    if not isinstance(value, Tensor) or isinstance(value, (Variable, SymbolicTensor)):
        return False
    return bool(np.all(np.isfinite(value.numpy())))


def _indices_in_range(value, depth: int) -> bool:
    """Only constant indices are known to hit a row (one_hot gives zeros out of range)."""
    if not isinstance(value, Tensor) or isinstance(value, (Variable, SymbolicTensor)):
        return False
    idx = np.asarray(value.numpy())
    return idx.size == 0 or (idx.min() >= 0 and idx.max() < depth)


def drop_identities(program: Program) -> Program:
    """`x * ones` is `x` (the one-hot seed's compact form is all ones); an outer product
    with ones is a broadcast. `gather(x, arange(size))` (an unchunked loop gathering every
    row in order) is a C-ordered copy of `x`: it goes only where its readers are ufuncs
    that can write C-ordered results from `x` itself (`order='C'`); a product or sum
    after a transposed `x` would round differently (compiled code must give eager's bits)."""
    values = constant_values(program)
    alias: dict[int, SymbolicTensor] = {}
    layouts = LazyLayouts(program)
    kept, zeros, c_ordered = [], {}, set()
    for original in program.equations:
        eqn = _plain_product(renamed(original, alias), values)
        if id(original) in c_ordered:
            eqn = replace(eqn, params={**eqn.params, "order": "C"})
        out = eqn.outputs[0]
        same = _identity_input(eqn, values, layouts)
        if same is None and _ordered_gather(eqn, values) is not None \
                and _writable_in_c_order(out, layouts.readers):
            same = eqn.inputs[0]
        if same is not None and (id(original) in c_ordered or eqn.prim.name == "gather"):
            if not _writable_in_c_order(out, layouts.readers):   # (x * ones, written C-ordered)
                kept.append(eqn)
                continue
            c_ordered.update(id(r) for r in layouts.readers[id(out)])   # written C-ordered
        if same is not None:
            alias[id(out)] = same
        elif eqn.prim.name in ("multiply", "matmul") and any(
                _all_ones(values.get(id(v))) for v in eqn.inputs) and layouts.stretchable(out):
            by_ones = broadcast_by_ones(eqn, values)
            kept += [by_ones] if by_ones else _outer_product_with_ones(eqn, values, zeros) or [eqn]
        else:
            kept.append(eqn)
    program = rename(program, kept, alias)
    program = replace(program, consts=program.consts + [z for z, _ in zeros.values()],
                      const_values=program.const_values + [v for _, v in zeros.values()])
    return eliminate_dead_code(program)


def _plain_product(eqn: Equation, values: dict) -> Equation:
    """`multiply_no_nan(x, c)` zeroes the product only where c is 0: by a constant c with no
    zeros (a power rule's exponent, a constant factor) it is `x * c`, one ufunc instead of
    four (the product, the test for zeros, `any`, `where`)."""
    if eqn.prim is not multiply_no_nan_p:
        return eqn
    c = values.get(id(eqn.inputs[1]))
    if c is None or not np.all(np.asarray(c.numpy()) != 0):
        return eqn
    return Equation(multiply_p, list(eqn.inputs), {}, eqn.outputs, eqn.origin)


def _ordered_gather(eqn: Equation, values: dict):
    """x, when `eqn` is gather(x, arange(size)) along an axis of that size."""
    if eqn.prim.name != "gather":
        return None
    x, idx = eqn.inputs
    c = values.get(id(idx))
    if c is not None and idx.ndim == 1 and _fits(x, eqn.outputs[0]) and np.array_equal(
            np.asarray(c.numpy()), np.arange(x.shape[eqn.params["axis"]])):
        return x
    return None


def _writable_in_c_order(v, readers: dict) -> bool:
    """Every reader of `v` is a ufunc with a result of v's shape, its other operands
    smaller (broadcast): fed a view in v's place and asked for order='C', each writes what
    it writes from v's C-ordered copy, in the same layout."""
    found = readers.get(id(v), ())
    return bool(found) and all(
        plain_ufunc(r) and tuple(r.outputs[0].shape) == tuple(v.shape)
        and all(u is v or math.prod(u.shape) < math.prod(v.shape) for u in r.inputs)
        for r in found)


def broadcast_by_ones(eqn: Equation, values: dict):
    """`x * ones` whose ones only stretch `x` (to the shape the one-hot seed spans) is a
    broadcast of `x`: no multiply, no array of that shape."""
    if eqn.prim.name != "multiply":
        return None
    out = eqn.outputs[0]
    for x, other in (eqn.inputs, eqn.inputs[::-1]):
        if x.dtype == out.dtype and _all_ones(values.get(id(other))):
            return Equation(broadcast_to_p, [x], {"shape": tuple(out.shape)}, eqn.outputs, eqn.origin)
    return None


def _outer_product_with_ones(eqn: Equation, values: dict, zeros: dict):
    """`ones(n, 1) @ b(1, k)` (how a batch_jacobian's seed meets a (1, k) weight row) is
    `b + 0` broadcast to (n, k): the sum has one term, 0 + 1 * b, exact for every b (the
    `+ 0` makes -0 +0, as the product does). `zeros` collects the new 0 constants by dtype."""
    if eqn.prim.name != "matmul" or eqn.inputs[0].ndim != 2 or eqn.inputs[1].ndim != 2 \
            or eqn.inputs[0].shape[1] != 1:
        return None
    a, b = eqn.inputs
    out = eqn.outputs[0]
    for ones, other in ((a, b), (b, a)):
        if other.dtype == out.dtype and _all_ones(values.get(id(ones))):
            if out.dtype not in zeros:
                zeros[out.dtype] = (SymbolicTensor((), out.dtype, out._trace, f"{out.name}_zero"),
                                    constant(np.zeros((), out.dtype)))
            plus_zero = SymbolicTensor(tuple(other.shape), out.dtype, out._trace, f"{out.name}_pz")
            return [Equation(add_p, [other, zeros[out.dtype][0]], {}, [plus_zero], eqn.origin),
                    Equation(broadcast_to_p, [plus_zero], {"shape": tuple(out.shape)}, eqn.outputs,
                             eqn.origin)]
    return None


def _identity_input(eqn: Equation, values: dict, layouts):
    """x, for x * ones (or x ** ones: a power rule's x ** (k - 1) at k = 2) laid out as x is:
    the ones broadcast (then x decides the product's layout), or x C-ordered, or a result
    whose layout nothing depends on."""
    out = eqn.outputs[0]
    if eqn.prim.name == "power":
        x, k = eqn.inputs
        if _fits(x, out) and _all_ones(values.get(id(k))) and (
                k.size < out.size or id(x) in layouts.c_ordered or id(out) in layouts.blind):
            return x
    if eqn.prim.name == "multiply":
        for x, other in (eqn.inputs, eqn.inputs[::-1]):
            if _fits(x, out) and _all_ones(values.get(id(other))) and (
                    other.size < out.size or id(x) in layouts.c_ordered
                    or id(out) in layouts.blind):
                return x
    return None


def _all_ones(constant) -> bool:
    if constant is None:
        return False
    a = np.asarray(constant.numpy())          # (the method: np.all's wrapper costs 1.5 us)
    return bool((a == 1).all()) if a.ndim else bool(a == 1)


def _fits(x, out) -> bool:
    return tuple(x.shape) == tuple(out.shape) and x.dtype == out.dtype
