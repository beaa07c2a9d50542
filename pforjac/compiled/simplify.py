"""Simplification passes on Programs. Each is small, takes a Program, returns a new one,
and never changes what the Program computes.

- `eliminate_dead_code`: drops equations no output needs.
- `eliminate_common_subexpressions`: one equation per (op, inputs, params).
- `fold_constants`: evaluates equations whose inputs are all fixed constants (not
  Variables, which are read when the program runs).
- `cancel_reshapes`: reshape-of-reshape, transpose-of-transpose, no-op reshapes,
  transposes and broadcasts, and any chain of reshapes and transposes that leaves the
  elements in order (one reshape).
- `onehot_products`: `matmul(one_hot(idx, d), u)` becomes `gather(u, idx)`: the
  product with the Jacobian's one-hot seed is a row lookup, not a dense product.
- `drop_identities`: products with constant ones, and gathers of every row in order
  where only ufuncs read them (those then write C-ordered results, as from the copy).
- `batch_major_products`: a result made by swapping the two leading axes of a product
  (`batch_jacobian`'s rows-first Jacobian turned batch-first) is computed in that order:
  the elementwise op before the product writes its output swapped, so the product's
  rows come out batch-first and the result is C-ordered without a copy; the ufuncs that
  op reads (read nowhere else) are computed swapped too, back to broadcasts and
  constants, so no ufunc reads a transposed full-size operand.
- `compact_constants`: a large constant only ufuncs read (nothing depends on its
  layout) keeps one slice of each axis it repeats along, broadcast back by a view, and
  is stored C-ordered.
- `broadcasts_into_ufuncs`: a ufunc asked for C order broadcasts a `broadcast_to`
  operand itself.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .. import core
from ..ops.elementwise import add_p
from ..ops.shape import broadcast_to_p, reshape_p
from ..program import Equation, Program, constant_values as _constant_values, eliminate_dead_code
from ..tensor import SymbolicTensor, Tensor, Variable, constant

__all__ = ["simplify", "eliminate_dead_code", "eliminate_common_subexpressions", "fold_constants",
           "cancel_reshapes", "onehot_products", "drop_identities", "batch_major_products",
           "compact_constants", "PASSES"]


def _rename(program: Program, equations, alias: dict[int, SymbolicTensor]) -> Program:
    """A copy of `program` with `equations`, every use of an aliased var replaced."""
    eqns = [replace(e, inputs=[_resolve(v, alias) for v in e.inputs]) for e in equations]
    return replace(program, equations=eqns, outputs=[_resolve(v, alias) for v in program.outputs])


def _param_key(params: dict) -> tuple:
    """A key equal for equal parameters only: arrays by dtype, shape and bytes (numpy's
    repr elides long arrays and rounds to 8 digits), Python floats by their exact repr
    (-0.0 is not 0.0). Computed for every op of every cached Jacobian call: ints, strings
    and tuples of them (shapes, axes) are their own keys."""
    return tuple((k, _frozen(v)) for k, v in sorted(params.items()))


def _frozen(value):
    kind = type(value)
    if kind is int or kind is str or value is None:
        return value
    if kind is tuple:
        if all(type(v) is int for v in value):
            return value
        return ("tuple",) + tuple(_frozen(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, list):
        return ("list",) + tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return ("dict",) + tuple((repr(k), _frozen(v)) for k, v in value.items())
    return (kind.__name__, repr(value))     # floats, bools, dtypes, slices, ...


def eliminate_common_subexpressions(program: Program) -> Program:
    alias: dict[int, SymbolicTensor] = {}
    seen: dict[tuple, Equation] = {}
    apart = _operands_kept_apart(program)
    # scalar constants of equal bits are one value (two ops' own `inf`s kept two equal chains
    # apart: logsumexp's and log_softmax's stable shifts); Variables are read at run time
    scalars: dict[tuple, SymbolicTensor] = {}
    for c, value in zip(program.consts, program.const_values):
        if c.shape == () and not isinstance(value, Variable):
            array = value.numpy()
            first = scalars.setdefault((array.dtype.str, array.tobytes()), c)
            if first is not c and frozenset((id(c), id(first))) not in apart:
                alias[id(c)] = first
    kept = []
    for eqn in program.equations:
        ins = tuple(id(_resolve(v, alias)) for v in eqn.inputs)
        key = (eqn.prim, ins, _param_key(eqn.params))
        first = seen.get(key)
        if first is None or any(frozenset((id(v), id(w))) in apart
                                for v, w in zip(eqn.outputs, first.outputs)):
            seen.setdefault(key, eqn)
            kept.append(eqn)
        else:
            for v, w in zip(eqn.outputs, first.outputs):
                alias[id(v)] = w
    return _rename(program, kept, alias)


def _operands_kept_apart(program: Program) -> set[frozenset]:
    """Pairs of values that one product reads (directly or through reshapes, transposes and
    broadcasts): merged into one buffer, `a @ b.T` becomes `a @ a.T`, which numpy computes
    with another BLAS routine (syrk) that rounds differently from eager code's gemm."""
    root: dict[int, int] = {}
    pairs: set[frozenset] = set()
    for eqn in program.equations:
        if eqn.prim.name in ("reshape", "transpose", "broadcast_to"):
            v = id(eqn.inputs[0])
            root[id(eqn.outputs[0])] = root.get(v, v)
        elif eqn.prim.name in ("matmul", "einsum"):
            roots = {root.get(id(v), id(v)) for v in eqn.inputs}
            pairs.update(frozenset((a, b)) for a in roots for b in roots if a != b)
    return pairs


def _resolve(v, alias):
    while id(v) in alias:
        v = alias[id(v)]
    return v


_FOLD_LIMIT = 1 << 20   # elements: folding must not turn a broadcast into a huge constant
_SHAPE_ONLY = ("ones_like", "zeros_like")    # outputs that depend on the input's shape alone


def fold_constants(program: Program) -> Program:
    fixed = _constant_values(program)
    consts, values = list(program.consts), list(program.const_values)
    from .codegen import Layouts
    # ones_like(h) is laid out as h is: a C-ordered constant in its place only where h is
    # C-ordered too, or nothing depends on the layout (a product would round otherwise)
    layouts = Layouts(program)
    c_ordered, blind = layouts.c_ordered, layouts.blind
    kept = []
    for eqn in program.equations:
        small = all(math.prod(v.shape) <= _FOLD_LIMIT for v in eqn.outputs)
        like_c = id(eqn.inputs[0]) in c_ordered or id(eqn.outputs[0]) in blind or (
            id(eqn.inputs[0]) in fixed and fixed[id(eqn.inputs[0])].numpy().flags.c_contiguous
        ) if eqn.inputs else False
        if small and eqn.prim.name in _SHAPE_ONLY and like_c:   # ones_like(h): ones, whatever h holds
            like = Tensor._from_array(np.empty(eqn.inputs[0].shape, eqn.inputs[0].dtype))
            outs = core.bind(eqn.prim, like, **eqn.params)
            fixed[id(eqn.outputs[0])] = outs
            consts.append(eqn.outputs[0])
            values.append(outs)
        elif eqn.inputs and small and all(id(v) in fixed for v in eqn.inputs):
            outs = core.bind(eqn.prim, *[fixed[id(v)] for v in eqn.inputs], **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            for var, out in zip(eqn.outputs, outs):
                fixed[id(var)] = out
                consts.append(var)
                values.append(out)
        else:
            kept.append(eqn)
    return eliminate_dead_code(replace(program, equations=kept, consts=consts, const_values=values))


def cancel_reshapes(program: Program) -> Program:
    from .codegen import Layouts
    # a chain whose first reshape copies non-C-ordered data (eager code does) must not
    # become a view of that data where a product reads the result: it rounds by layout
    layouts = Layouts(program)
    c_ordered, blind = layouts.c_ordered, layouts.blind
    producer: dict[int, Equation] = {}
    alias: dict[int, SymbolicTensor] = {}
    kept = []
    for eqn in program.equations:
        eqn = replace(eqn, inputs=[_resolve(v, alias) for v in eqn.inputs])
        name, x = eqn.prim.name, (eqn.inputs[0] if eqn.inputs else None)
        out = eqn.outputs[0]
        if name in ("reshape", "broadcast_to") and tuple(x.shape) == tuple(out.shape):
            alias[id(out)] = x
            continue
        if name == "transpose" and tuple(eqn.params["perm"]) == tuple(range(x.ndim)):
            alias[id(out)] = x
            continue
        if name == "transpose" and _moves_only_unit_axes(x.shape, eqn.params["perm"]):
            eqn = replace(eqn, prim=reshape_p, params={"shape": tuple(out.shape)})
            name = "reshape"
        root = _in_order_root(eqn, producer) if name in ("reshape", "transpose") else None
        if root is not None and (id(root) in c_ordered or id(out) in blind):
            if tuple(root.shape) == tuple(out.shape):
                alias[id(out)] = root
                continue
            eqn = replace(eqn, prim=reshape_p, inputs=[root], params={"shape": tuple(out.shape)})
            name, x = "reshape", root
        inner = producer.get(id(x))
        if name == "reshape" and inner is not None and inner.prim.name == "reshape" \
                and (id(inner.inputs[0]) in c_ordered or id(out) in blind):
            eqn = replace(eqn, inputs=[inner.inputs[0]])
            if tuple(inner.inputs[0].shape) == tuple(out.shape):
                alias[id(out)] = inner.inputs[0]
                continue
        if name == "transpose" and inner is not None and inner.prim.name == "transpose":
            perm = tuple(inner.params["perm"][p] for p in eqn.params["perm"])
            if perm == tuple(range(len(perm))):
                alias[id(out)] = inner.inputs[0]
                continue
            eqn = replace(eqn, inputs=[inner.inputs[0]], params={"perm": perm})
        producer[id(out)] = eqn
        kept.append(eqn)
    return eliminate_dead_code(_rename(program, kept, alias))


def _in_order_root(eqn: Equation, producer: dict) -> SymbolicTensor | None:
    """The earliest value before `eqn` in its chain of reshapes and transposes from which
    the chain is one reshape (elements stay in C order), if there is one further back than
    `eqn`'s own input."""
    chain = [eqn]
    while True:
        inner = producer.get(id(chain[0].inputs[0]))
        if inner is None or inner.prim.name not in ("reshape", "transpose"):
            break
        chain.insert(0, inner)
    for start in range(len(chain) - 1):       # longest first; a lone eqn is handled as before
        if view_chain_in_order(tuple(chain[start].inputs[0].shape),
                               [(e.prim.name, e.params) for e in chain[start:]]):
            return chain[start].inputs[0]
    return None


def view_chain_in_order(shape: tuple, steps) -> bool:
    """Whether reshapes and transposes `steps` ([("reshape", {"shape": ...}) or
    ("transpose", {"perm": ...})]) applied to a C-ordered array of `shape` give a view
    whose elements are in C order, i.e. whether the chain equals one reshape. Follows the
    strides as numpy would, without touching memory; a reshape that numpy could only make
    with a copy ends the check (False)."""
    if math.prod(shape) == 0:
        return False
    strides = _c_strides(shape)
    for name, params in steps:
        if name == "transpose":
            perm = params["perm"]
            shape, strides = tuple(shape[p] for p in perm), tuple(strides[p] for p in perm)
        else:
            new_shape = tuple(params["shape"])
            strides = _reshaped_strides(shape, strides, new_shape)
            if strides is None:
                return False
            shape = new_shape
    return all(s == c for d, s, c in zip(shape, strides, _c_strides(shape)) if d != 1)


def _c_strides(shape) -> tuple:
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def _reshaped_strides(shape, strides, new_shape):
    """Strides (in elements) viewing the same elements as `new_shape` without a copy, or
    None when the axes that must merge are not laid out one after another."""
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    new_strides = [0] * len(new_shape)
    live = [k for k, d in enumerate(new_shape) if d != 1]
    oi = ni = 0
    while oi < len(old) and ni < len(live):
        oj, nj = oi + 1, ni + 1
        o_size, n_size = old[oi][0], new_shape[live[ni]]
        while o_size != n_size:
            if n_size < o_size:
                n_size *= new_shape[live[nj]]
                nj += 1
            else:
                o_size *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):              # merged old axes must be contiguous
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        step = old[oj - 1][1]
        for k in range(nj - 1, ni - 1, -1):
            new_strides[live[k]] = step
            step *= new_shape[live[k]]
        oi, ni = oj, nj
    return tuple(new_strides)


def _moves_only_unit_axes(shape, perm) -> bool:
    """A transpose that keeps the order of the axes longer than 1 is a reshape."""
    return [p for p in perm if shape[p] != 1] == [a for a in range(len(shape)) if shape[a] != 1]


def onehot_products(program: Program) -> Program:
    from ..ops.indexing import gather_p
    values = _constant_values(program)
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
    values = _constant_values(program)
    alias: dict[int, SymbolicTensor] = {}
    from .codegen import Layouts
    layouts = Layouts(program)
    readers = layouts.readers
    kept, zeros, c_ordered = [], {}, set()
    for original in program.equations:
        eqn = replace(original, inputs=[_resolve(v, alias) for v in original.inputs])
        if id(original) in c_ordered:
            eqn = replace(eqn, params={**eqn.params, "order": "C"})
        out = eqn.outputs[0]
        same = _identity_input(eqn, values, layouts)
        if same is None and _ordered_gather(eqn, values) is not None \
                and _writable_in_c_order(out, readers):
            same = eqn.inputs[0]
        if same is not None and (id(original) in c_ordered or eqn.prim.name == "gather"):
            if not _writable_in_c_order(out, readers):   # (x * ones, to be written C-ordered)
                kept.append(eqn)
                continue
            c_ordered.update(id(r) for r in readers[id(out)])   # they write it C-ordered
        if same is not None:
            alias[id(out)] = same
        elif eqn.prim.name in ("multiply", "matmul") and layouts.stretchable(out):
            by_ones = _broadcast_by_ones(eqn, values)
            kept += [by_ones] if by_ones else _outer_product_with_ones(eqn, values, zeros) or [eqn]
        else:
            kept.append(eqn)
    program = _rename(program, kept, alias)
    program = replace(program, consts=program.consts + [z for z, _ in zeros.values()],
                      const_values=program.const_values + [v for _, v in zeros.values()])
    return eliminate_dead_code(program)


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
    from .codegen import plain_ufunc
    found = readers.get(id(v), ())
    return bool(found) and all(
        plain_ufunc(r) and tuple(r.outputs[0].shape) == tuple(v.shape)
        and all(u is v or math.prod(u.shape) < math.prod(v.shape) for u in r.inputs)
        for r in found)


def _broadcast_by_ones(eqn: Equation, values: dict):
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
    """x, for x * ones laid out as x is: the ones broadcast (then x decides the product's
    layout), or x C-ordered, or a result whose layout nothing depends on."""
    out = eqn.outputs[0]
    if eqn.prim.name == "multiply":
        for x, other in (eqn.inputs, eqn.inputs[::-1]):
            if _fits(x, out) and _all_ones(values.get(id(other))) and (
                    other.size < out.size or id(x) in layouts.c_ordered
                    or id(out) in layouts.blind):
                return x
    return None


def _all_ones(constant) -> bool:
    return constant is not None and bool(np.all(np.asarray(constant.numpy()) == 1))


def _fits(x, out) -> bool:
    return tuple(x.shape) == tuple(out.shape) and x.dtype == out.dtype


_SWAP_DEPTH = 32        # elementwise ops one swap reaches back through


def batch_major_products(program: Program) -> Program:
    """out = transpose(reshape(matmul(reshape(e, (A*B, K)), W), (A, B, N)), (1, 0, 2)) is
    computed as reshape(matmul(reshape(e', (B*A, K)), W), (B, A, N)), with e' the swapped
    e: for an elementwise e = f(u...) that nothing else reads, f of the swapped operands;
    an operand made the same way (a product's rows, then an elementwise op) is itself
    computed swapped, so the swap reaches back to where it is free (a broadcast, a small
    weight) and every product's rows come out batch-first, in the order the result is read
    in. The elementwise work gives the same bits; the products may not in their last bit:
    OpenBLAS rounds a row by its position in the product (its last rows and columns past
    a full kernel block; any row with its Haswell sgemm kernel), so this is the one pass
    that can change a result's last bits,
    and the eager loop cache leaves it out (README, Reliability)."""
    from .codegen import _elementwise, plain_ufunc
    from ..ops.linalg import matmul_p
    from ..ops.shape import transpose_p
    uses: dict[int, int] = {}
    for eqn in program.equations:
        for v in eqn.inputs:
            uses[id(v)] = uses.get(id(v), 0) + 1
    for v in program.outputs:
        uses[id(v)] = uses.get(id(v), 0) + 1
    producer = {id(v): eqn for eqn in program.equations for v in eqn.outputs}

    def only(v, name: str):
        """v's producer if it is `name` and v is read once."""
        eqn = producer.get(id(v))
        return eqn if eqn is not None and eqn.prim.name == name and uses.get(id(v)) == 1 else None

    def product_rows(v):
        """v = reshape(matmul(reshape(e, (A*B, K)), W), (A, B, N)) with e = f(...) elementwise,
        each step read once: (e's producer, the matmul), else None."""
        split = only(v, "reshape")
        product = split and only(split.inputs[0], "matmul")
        merge = product and only(product.inputs[0], "reshape")
        f = merge and producer.get(id(merge.inputs[0]))
        if not (f and uses.get(id(merge.inputs[0])) == 1 and _elementwise(f) and v.ndim == 3
                and product.inputs[1].ndim == 2 and f.outputs[0].ndim == 3):
            return None
        a, b, k = f.outputs[0].shape
        if tuple(merge.outputs[0].shape) != (a * b, k) or tuple(v.shape[:2]) != (a, b):
            return None                       # rows merged and split other than (A, B)
        return f, product

    def swapped_rows(f, product, fresh, new, out=None):
        """Equations computing the product of swapped rows; returns its (B, A, N) value."""
        (a, b, k), n = f.outputs[0].shape, product.outputs[0].shape[1]
        e = swapped_elementwise(f, fresh, new)
        rows, prod = fresh((b * a, k), e.dtype), fresh((b * a, n), product.outputs[0].dtype)
        out = fresh((b, a, n), prod.dtype) if out is None else out
        new += [Equation(reshape_p, [e], {"shape": (b * a, k)}, [rows]),
                Equation(matmul_p, [rows, product.inputs[1]], dict(product.params), [prod],
                         product.origin),
                Equation(reshape_p, [prod], {"shape": (b, a, n)}, [out])]
        return out

    def swapped_elementwise(f, fresh, new, depth=0):
        operands = []
        for u in f.inputs:
            inner = product_rows(u) if u.ndim == 3 else None
            if inner is not None:             # made by a product: compute it swapped too
                operands.append(swapped_rows(*inner, fresh, new))
                continue
            stretch = only(u, "multiply") and _broadcast_by_ones(producer[id(u)], values)
            g = producer.get(id(u))
            if not stretch and g is not None and u.ndim == 3 and uses.get(id(u)) == 1 \
                    and plain_ufunc(g) and depth < _SWAP_DEPTH:   # a ufunc read only here:
                operands.append(swapped_elementwise(g, fresh, new, depth + 1))   # swapped
                continue                      # too, so f reads in order, back to a broadcast
            if stretch and plain_ufunc(f):    # x * ones read only here: a view of x will do,
                replaced[id(producer[id(u)])] = [stretch]   # as f writes its result C-ordered
            if u.ndim < 3:
                padded = fresh((1,) * (3 - u.ndim) + tuple(u.shape), u.dtype)
                new.append(Equation(reshape_p, [u], {"shape": tuple(padded.shape)}, [padded]))
                u = padded
            view = fresh((u.shape[1], u.shape[0], u.shape[2]), u.dtype)
            new.append(Equation(transpose_p, [u], {"perm": (1, 0, 2)}, [view]))
            operands.append(view)
        a, b, k = f.outputs[0].shape
        out = fresh((b, a, k), f.outputs[0].dtype)
        params = {**f.params, "order": "C"} if plain_ufunc(f) else dict(f.params)
        new.append(Equation(f.prim, operands, params, [out], f.origin))   # (rows for a product)
        return out
    values = _constant_values(program)
    replaced: dict[int, list] = {}           # id(eqn) -> its replacement equations
    for eqn in program.equations:
        if eqn.prim.name != "transpose" or tuple(eqn.params["perm"]) != (1, 0, 2):
            continue
        found = product_rows(eqn.inputs[0]) if uses.get(id(eqn.inputs[0])) == 1 else None
        if found is None:
            continue
        new: list = []
        swapped_rows(*found, _fresh_vars(eqn.outputs[0]), new, out=eqn.outputs[0])
        replaced[id(eqn)] = new
    if not replaced:
        return program
    kept = [new for eqn in program.equations for new in replaced.get(id(eqn), [eqn])]
    return cancel_reshapes(eliminate_dead_code(replace(program, equations=kept)))


def broadcasts_into_ufuncs(program: Program) -> Program:
    """A ufunc asked for a C-ordered result broadcasts its operands itself: an operand that is
    `broadcast_to(x)`, perhaps transposed so that x's own axes keep their order, is read as a
    reshape of x when the other operands still give the result its shape. The same numbers
    and layout, without building a strided view (numpy's loops over it are slower)."""
    from .codegen import plain_ufunc
    producer = {id(v): eqn for eqn in program.equations for v in eqn.outputs}
    kept, changed = [], False
    for eqn in program.equations:
        if plain_ufunc(eqn) and eqn.params.get("order") == "C":
            inputs, touched = list(eqn.inputs), False
            for k, u in enumerate(inputs):
                small = _broadcast_source(u, producer)
                if small is None:
                    continue
                x, shape = small
                rest = [tuple(v.shape) for j, v in enumerate(inputs) if j != k]
                if np.broadcast_shapes(shape, *rest) != tuple(eqn.outputs[0].shape):
                    continue              # u's stretch gives the result an axis no one else does
                if tuple(x.shape) != shape:
                    view = SymbolicTensor(shape, x.dtype, x._trace, f"{u.name}_small")
                    kept.append(Equation(reshape_p, [x], {"shape": shape}, [view], eqn.origin))
                    x = view
                inputs[k], touched = x, True
            if touched:
                eqn, changed = replace(eqn, inputs=inputs), True
        kept.append(eqn)
    if not changed:
        return program
    return cancel_reshapes(eliminate_dead_code(replace(program, equations=kept)))


def _broadcast_source(u, producer: dict):
    """(x, shape) when u is broadcast_to(x), or a transpose of one that keeps x's axes in
    order: u is then x reshaped to `shape` (1 on every stretched axis) and broadcast."""
    eqn = producer.get(id(u))
    perm = None
    if eqn is not None and eqn.prim.name == "transpose":
        perm, eqn = tuple(eqn.params["perm"]), producer.get(id(eqn.inputs[0]))
    if eqn is None or eqn.prim.name != "broadcast_to":
        return None
    x = eqn.inputs[0]
    padded = (1,) * (len(eqn.params["shape"]) - x.ndim) + tuple(x.shape)
    if perm is None:
        return x, padded
    if not _moves_only_unit_axes(padded, perm):
        return None
    return x, tuple(padded[p] for p in perm)


_COMPACT_MIN = 4096     # elements: a smaller constant costs little to read as it is


def compact_constants(program: Program) -> Program:
    """A large constant that only ufuncs read, laid out as no value depends on
    (`Layouts.stretchable`), is stored compactly: along each axis where every slice holds
    the same bits it keeps one slice, broadcast back by a view (a Jacobian's identity seed,
    the same for every example of a batch), and a strided one (a transposed view eager code
    captured) is stored C-ordered. The ufuncs compute the same numbers from fewer bytes, read
    in order: the log-softmax head's (101, 64, 100) seed, stored with a 40 KB stride
    between examples, took 0.59 ms to add; its (101, 1, 100) compact form 0.1 ms."""
    from .codegen import Layouts
    layouts = Layouts(program)
    consts, values, head, changed = [], [], [], False
    for c, value in zip(program.consts, program.const_values):
        eligible = not isinstance(value, (Variable, SymbolicTensor)) \
            and math.prod(c.shape) >= _COMPACT_MIN and layouts.stretchable(c)
        array = value.numpy() if eligible else None
        small = _compact(array) if eligible else array
        if small is array:                              # not eligible, or nothing to gain
            consts.append(c)
            values.append(value)
            continue
        changed = True
        if small.shape == array.shape:                  # the same values, C-ordered
            consts.append(c)
            values.append(constant(small))
            continue
        stored = SymbolicTensor(small.shape, c.dtype, c._trace, f"{c.name}_compact")
        consts.append(stored)
        values.append(constant(small))
        head.append(Equation(broadcast_to_p, [stored], {"shape": tuple(c.shape)}, [c]))
    if not changed:
        return program
    return replace(program, consts=consts, const_values=values,
                   equations=head + list(program.equations))


_COMPACT_INNER = 64     # elements: numpy's loop over a broadcast view runs along the axes
                        # after its last stretched one; a shorter run costs more than it saves
                        # (a (20, 500, 10) constant read as (20, 1, 10): 0.90 -> 1.04 ms)


def _compact(array: np.ndarray) -> np.ndarray:
    """`array` with one slice along each axis whose slices all hold the same bits (-0 is not
    +0, a NaN equals its own bits) and after which at least `_COMPACT_INNER` elements follow,
    C-ordered; `array` itself when it is C-ordered already and no axis repeats."""
    bits = np.ascontiguousarray(array).view(np.uint8).reshape(array.shape + (array.dtype.itemsize,))
    for axis, size in enumerate(array.shape):
        if size > 1 and math.prod(array.shape[axis + 1:]) >= _COMPACT_INNER and \
                bool((bits == bits[(slice(None),) * axis + (slice(0, 1),)]).all()):
            bits = bits[(slice(None),) * axis + (slice(0, 1),)]
    if bits.shape[:-1] == array.shape and array.flags.c_contiguous:
        return array
    return np.ascontiguousarray(bits).view(array.dtype).reshape(bits.shape[:-1])


def _fresh_vars(like: SymbolicTensor):
    """Makes new variables of `like`'s trace, named after it."""
    count = [0]

    def fresh(shape, dtype) -> SymbolicTensor:
        count[0] += 1
        return SymbolicTensor(tuple(shape), dtype, like._trace, f"{like.name}_{count[0]}")
    return fresh


PASSES = (fold_constants, onehot_products, drop_identities, cancel_reshapes,
          eliminate_common_subexpressions, batch_major_products, compact_constants,
          broadcasts_into_ufuncs, eliminate_dead_code)


def simplify(program: Program, passes=PASSES) -> Program:
    for p in passes:
        program = p(program)
    return program
