"""The numba lowering table: for each primitive, the numba-compilable source of one equation.

A rule is `rule(ctx, eqn, args) -> str`: the Python expression (in numba's nopython
subset) computing the equation's output from `args`, its inputs' expressions. A rule
that needs statements first (a zeros array it fills) emits them with `ctx.emit` and
returns a name. Rules are registered in `numba_rules` with `@lowers(prim)`; one family
rule covers every elementwise primitive whose forward is a numpy ufunc numba compiles
(read from the primitive: `elementwise`, its impl, numba's own ufunc table), so adding
a ufunc-backed op needs no entry here (float32 exp, tanh, log, sigmoid and softplus have
their own rules: kernels that vectorize, numba_vecmath.py). `rule_for(prim)` is the one
lookup. The rules of products and linear algebra (numba_lowering_linalg.py) and of scans,
sorting and the other array ops (numba_lowering_arrays.py), and those of the ops whose
numba implementation gives other values than numpy's (numba_lowering_values.py: integer
division and power, ties of maximum) are registered in the same table when the code
generator (numba_codegen.py) imports them.

Values of shape () are numba scalars in the generated code (numba reduces to scalars,
not 0-d arrays); the backend converts them back to 0-d arrays at the boundary.
Elementwise primitives are fusible: the code generator inlines a single-use result into
its (elementwise) reader, so a chain becomes one whole-array expression, which numba's
array-expression rewrite compiles as one loop without temporaries.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import core
from .numba_complex import COMPLEX_OTHER
from .numba_vecmath import FLOAT32_KERNELS

__all__ = ["numba_rules", "blas_work", "lowers", "rule_for", "NotLowered", "NonFiniteMatrix"]

numba_rules: dict[core.Primitive, Callable] = {}
blas_work: dict[core.Primitive, Callable] = {}     # (the rules calling BLAS or LAPACK: `lowers`)


def _p(name: str) -> core.Primitive:
    return core.primitive_named(name)


class NotLowered(ValueError):
    """An equation the numba backend has no code for (the message names the op and why)."""


class NonFiniteMatrix(ArithmeticError):
    """Raised by the kernels when a matrix holding NaN or inf reaches numba's LAPACK
    bindings, which refuse it: that call runs on the numpy backend (whose LAPACK propagates
    NaN, or raises as numpy does)."""


def lowers(*prims: core.Primitive, blas: Callable | None = None):
    """Decorator: `rule(ctx, eqn, args) -> expression` becomes the numba rule of `prims`.
    `blas(eqn)`, for a rule whose code calls BLAS or LAPACK: an upper bound of the
    multiply-adds of one such call (whether a program keeps its parallel loops beside the
    library's threads depends on it: numba_codegen.numba_source)."""
    def register(rule):
        core.register_once(numba_rules, prims, rule, "numba lowering rule")
        if blas is not None:
            core.register_once(blas_work, prims, blas, "BLAS work bound")
        return rule
    return register


def rule_for(prim: core.Primitive) -> Callable | None:
    """The primitive's numba rule: its own, else the elementwise ufunc family's, else None."""
    rule = numba_rules.get(prim)
    if rule is None and _numba_ufunc(prim) is not None:
        return _lower_ufunc
    return rule


def _numba_ufunc(prim: core.Primitive):
    """The numpy ufunc an elementwise primitive's forward is, if numba compiles it."""
    impl = core.impl_rules.get(prim)
    if not (prim.elementwise and isinstance(impl, np.ufunc) and not prim.multiple_results
            and impl.signature is None and getattr(np, impl.__name__, None) is impl):
        return None
    from numba.np.ufunc_db import get_ufuncs
    return impl if impl in get_ufuncs() else None


# -- helpers ---------------------------------------------------------------------------------
def numba_dtype(dtype) -> str:
    """`np.float32`: a dtype as numba-compilable source."""
    return f"np.{np.dtype(dtype).name if np.dtype(dtype) != np.bool_ else 'bool_'}"


def new_array(shape, dtype, zeros: bool = False) -> str:
    """The source making a new array (`np.empty`, or `np.zeros`: the kernels' `K.zeros`,
    its memory from calloc as numpy's, numba_alloc.py). One of 4 MiB or more is passed
    through the kernel `large`, which asks for its memory in huge pages (numba_kernels.py),
    as numpy does for its own arrays of that size."""
    shape = tuple(int(d) for d in shape)
    made = f"np.{'zeros' if zeros else 'empty'}({shape}, {numba_dtype(dtype)})"
    if int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize < LARGE:
        return made
    return f"K.large({made})"


LARGE = 1 << 22


def reshaped(expr: str, shape) -> str:
    """The source of a C-order reshape of the C-contiguous array `expr` to `shape`: the
    kernels' view `K.reshaped` (numba_views.py), a few instructions, where numba's own
    `reshape` compiles a helper and a C call at every use (30-40 ms of a first compile
    each)."""
    return f"K.reshaped({expr}, {tuple(int(d) for d in shape)})"


def as_dtype(expr: str, var, dtype) -> str:
    """`expr` (the value of `var`) converted to `dtype` (unchanged if it has it already)."""
    if np.dtype(var.dtype) == np.dtype(dtype):
        return expr
    return f"{numba_dtype(dtype)}({expr})" if var.ndim == 0 else f"{expr}.astype({numba_dtype(dtype)})"


def _index_source(key) -> str:
    """A static basic index (ints, slices, Ellipsis) as subscript source."""
    parts = []
    for k in key if isinstance(key, tuple) else (key,):
        if k is Ellipsis:
            parts.append("...")
        elif k is None:
            parts.append("None")
        elif isinstance(k, slice):
            if not all(v is None or isinstance(v, (int, np.integer)) for v in (k.start, k.stop, k.step)):
                raise NotLowered(f"a slice of non-integer bounds {k}")
            parts.append(":".join("" if v is None else str(int(v)) for v in (k.start, k.stop, k.step)))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            parts.append(str(int(k)))
        else:
            raise NotLowered(f"an index of type {type(k).__name__} (only ints, slices, None, ...)")
    return ", ".join(parts) + ("," if len(parts) == 1 else "")


# -- the elementwise family ------------------------------------------------------------------
def _lower_ufunc(ctx, eqn, args) -> str:
    """`np.exp(a)`, `np.add(a, b)`: operands of mixed dtypes converted to their numpy result
    type first (numba promotes a scalar of another kind by value, as numpy 1 did)."""
    unknown = set(eqn.params) - {"order"}       # (order='C': numba's results are C-ordered)
    if unknown:
        raise NotLowered(f"parameters {sorted(unknown)}")
    ufunc = _numba_ufunc(eqn.prim)
    if ufunc.__name__ in COMPLEX_OTHER and any(np.dtype(v.dtype).kind == "c" for v in eqn.inputs):
        raise NotLowered(f"complex {ufunc.__name__} ({COMPLEX_OTHER[ufunc.__name__]})")
    common = _loop_dtype(ufunc, eqn.inputs)
    operands = [as_dtype(a, v, common) for a, v in zip(args, eqn.inputs)] \
        if len(eqn.inputs) > 1 else list(args)
    operator = _OPERATORS.get(ufunc.__name__)
    if operator is not None and common in (np.float32, np.float64) and eqn.outputs[0].dtype == common \
            and all(v.ndim == 0 for v in eqn.inputs):
        return f"({operator.join(operands)})" if len(operands) == 2 else f"(-{operands[0]})"
    return f"np.{ufunc.__name__}({', '.join(operands)})"


def _loop_dtype(ufunc, inputs):
    """The dtype numpy computes `ufunc` of `inputs` in: its loop's, where that takes one
    dtype (int8 / int8 runs numpy's float64 loop, where numba picks float32's), else the
    operands' result type."""
    dtypes = [np.dtype(v.dtype) for v in inputs]
    try:
        loop = ufunc.resolve_dtypes((*dtypes, *[None] * ufunc.nout))[:ufunc.nin]
    except (TypeError, ValueError):
        loop = ()
    return loop[0] if loop and all(d == loop[0] for d in loop) else np.result_type(*dtypes)


# Scalar arithmetic of one float type written as operators: numba types and lowers a
# ufunc call on scalars through its ufunc machinery (about a tenth of a loop nest's
# compile), an operator as one instruction, which rounds alike. (Division by zero gives
# numpy's inf or NaN: generated functions use numba's "numpy" error model.)
_OPERATORS = {"add": " + ", "subtract": " - ", "multiply": " * ", "divide": " / ",
              "true_divide": " / ", "negative": "-"}


def _kernel(name: str):
    """The rule of an elementwise primitive computed by the scalar kernel `K.<name>`
    (numba_special.py) of float32 or float64 operands (others converted to the result's
    float dtype first, as the primitive's forward converts them)."""
    def rule(ctx, eqn, args) -> str:
        out = eqn.outputs[0].dtype
        if eqn.params or out not in (np.float32, np.float64) \
                or any(v.dtype.kind == "c" for v in eqn.inputs):
            raise NotLowered(f"dtype {out} or parameters {sorted(eqn.params)}")
        return f"K.{name}({', '.join(as_dtype(a, v, out) for a, v in zip(args, eqn.inputs))})"
    return rule


def _float32_kernel(name: str, other: Callable):
    """The rule of a unary primitive with a float32 kernel (numba_vecmath.py: computed in
    float32 lanes, and LLVM vectorizes the loops calling it, where numba's `np.<name>` calls
    the C library once per value): of a float32 operand and result, `K.<name>_f32` on an
    element (`K.<name>_f32_ufunc` on a whole array); else the rule `other`."""
    def rule(ctx, eqn, args) -> str:
        x, out = eqn.inputs[0], eqn.outputs[0]
        if x.dtype == np.float32 and out.dtype == np.float32 and set(eqn.params) <= {"order"}:
            return f"K.{name}_f32{'_ufunc' if out.ndim else ''}({args[0]})"
        return other(ctx, eqn, args)
    return rule


for _name in FLOAT32_KERNELS:      # (other dtypes: the ufunc's rule, or the float64 kernel's)
    _ufunc = isinstance(core.impl_rules[_p(_name)], np.ufunc)
    lowers(_p(_name))(_float32_kernel(_name, _lower_ufunc if _ufunc else _kernel(_name)))
for _name in ("sinc", "heaviside", "erf", "erfc", "ndtr", "log_ndtr",
              "logit", "gamma", "gammaln", "gammasgn", "rgamma", "digamma", "xlogy", "xlog1py",
              "entr", "rel_entr", "kl_div", "ndtri", "erfinv", "erfcinv"):
    lowers(_p(_name))(_kernel(_name))


@lowers(_p("polygamma"))
def _polygamma(ctx, eqn, args) -> str:
    """K.polygamma(x, order): the order, a parameter, as a float64 operand."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    order = eqn.params["order"]
    if out.dtype not in (np.float32, np.float64) or x.dtype.kind == "c" or int(order) != order \
            or order < 0:
        raise NotLowered(f"dtype {out.dtype} or order {order!r}")
    return f"K.polygamma({as_dtype(args[0], x, out.dtype)}, np.float64({int(order)}))"


@lowers(_p("copy"), _p("stop_gradient"))
def _identity(ctx, eqn, args) -> str:
    ctx.follow(eqn.outputs[0], eqn.inputs[0])
    return args[0]


@lowers(_p("zeros_like"), _p("ones_like"))
def _filled_like(ctx, eqn, args) -> str:
    out = eqn.outputs[0]
    value = 0 if eqn.prim.name == "zeros_like" else 1
    if out.ndim == 0:
        return f"{numba_dtype(out.dtype)}({value})"
    return f"np.{'zeros' if value == 0 else 'ones'}({tuple(out.shape)}, {numba_dtype(out.dtype)})"


@lowers(_p("cast"))
def _cast(ctx, eqn, args) -> str:
    x, out = eqn.inputs[0], eqn.outputs[0]
    if x.dtype.kind == "c" and out.dtype.kind != "c":
        raise NotLowered("a complex to real cast")
    return as_dtype(args[0], x, out.dtype)


@lowers(_p("multiply_no_nan"))
def _multiply_no_nan(ctx, eqn, args) -> str:
    return f"K.multiply_no_nan({', '.join(_same_dtype(eqn, args))})"


@lowers(_p("where"))
def _where(ctx, eqn, args) -> str:
    c, x, y = args
    x, y = (as_dtype(a, v, eqn.outputs[0].dtype) for a, v in zip((x, y), eqn.inputs[1:]))
    return f"K.select({c}, {x}, {y})"


def _same_dtype(eqn, args) -> list[str]:
    out = eqn.outputs[0].dtype
    return [as_dtype(a, v, out) for a, v in zip(args, eqn.inputs)]


# -- shapes and views ------------------------------------------------------------------------
@lowers(_p("reshape"))
def _reshape(ctx, eqn, args) -> str:
    x, out = eqn.inputs[0], eqn.outputs[0]
    if x.ndim == 0:
        return f"np.full({tuple(out.shape)}, {args[0]})"
    if out.ndim == 0:
        return f"{ctx.contiguous(x, args[0])}.ravel()[0]"
    return reshaped(ctx.contiguous(x, args[0]), out.shape)


@lowers(_p("transpose"))
def _transpose(ctx, eqn, args) -> str:
    ctx.strided.add(id(eqn.outputs[0]))
    return f"np.transpose({args[0]}, {tuple(eqn.params['perm'])})"


@lowers(_p("broadcast_to"))
def _broadcast_to(ctx, eqn, args) -> str:
    x, out = eqn.inputs[0], eqn.outputs[0]
    if x.ndim == 0:
        return f"np.full({tuple(out.shape)}, {args[0]})"
    ctx.strided.add(id(out))
    return f"np.broadcast_to({args[0]}, {tuple(out.shape)})"


@lowers(_p("getitem"))
def _getitem(ctx, eqn, args) -> str:
    if eqn.inputs[0].ndim == 0:
        raise NotLowered("indexing a 0-d value")
    ctx.strided.add(id(eqn.outputs[0]))
    return f"{args[0]}[{_index_source(eqn.params['key'])}]"


@lowers(_p("split"))
def _split(ctx, eqn, args) -> str:
    """The pieces as basic slices along the axis (views, as np.split makes)."""
    x = eqn.inputs[0]
    axis = eqn.params["axis"] % x.ndim
    bounds = [0, *eqn.params["indices"], x.shape[axis]]
    for out in eqn.outputs:
        ctx.strided.add(id(out))
    lead = ":, " * axis
    pieces = [f"{args[0]}[{lead}{int(a)}:{int(b)}]" for a, b in zip(bounds, bounds[1:])]
    return f"({', '.join(pieces)},)"


@lowers(_p("setitem_zeros"))
def _setitem_zeros(ctx, eqn, args) -> str:
    out = eqn.outputs[0]
    name = ctx.fresh()
    ctx.emit(f"{name} = {new_array(eqn.params['shape'], out.dtype, zeros=True)}")
    ctx.store(name, out.shape, eqn.params["key"], eqn.inputs[0], args[0], out.dtype)
    return name


@lowers(_p("concat"))
def _concat(ctx, eqn, args) -> str:
    """A new array, each part stored into its span along the axis."""
    out = eqn.outputs[0]
    axis, name, start = int(eqn.params["axis"]) % out.ndim, ctx.fresh(), 0
    ctx.emit(f"{name} = {new_array(out.shape, out.dtype)}")
    for x, arg in zip(eqn.inputs, args):
        span = (slice(None),) * axis + (slice(start, start + x.shape[axis]),)
        ctx.store(name, out.shape, span, x, arg, out.dtype)
        start += x.shape[axis]
    return name


def _split_at(shape, axis: int, n_axes: int = 1) -> tuple:
    """(pre, middle, post) sizes of `shape` around axes [axis, axis + n_axes)."""
    size = lambda dims: int(np.prod(dims, dtype=np.int64))
    return size(shape[:axis]), size(shape[axis:axis + n_axes]), size(shape[axis + n_axes:])


def positioned(index: list, axis: int, idx_shape: tuple, positions: str) -> list:
    """An index of a gather's or scatter's array from its index over the indices' axes
    (those from `axis` on, one per axis of the indices): their flat position's entry of
    the array `positions`, the axes around unchanged."""
    k = len(idx_shape)
    strides = [int(np.prod(idx_shape[j + 1:], dtype=np.int64)) for j in range(k)]
    terms = [t if s == 1 else f"{t} * {s}" for t, s in zip(index[axis:axis + k], strides) if t != "0"]
    return [*index[:axis], f"{positions}[{' + '.join(terms) or '0'}]", *index[axis + k:]]


# -- reductions ------------------------------------------------------------------------------
def _reduction(fn: str):
    """A rule computing `np.<fn>` over `axes`: by a loop nest where the context writes one
    (`_loop_reduction`); else over all axes at once, or one axis at a time (highest
    first), by numba's `np.sum(x, axis=a)` for sums and by the kernel `K.<fn>_axis` of the
    operand seen as (before, axis, after) otherwise (numba takes no axis there); kept axes
    restored by a reshape."""
    def rule(ctx, eqn, args) -> str:
        x, out = eqn.inputs[0], eqn.outputs[0]
        axes = eqn.params["axes"]
        axes = tuple(range(x.ndim)) if axes is None else tuple(sorted({a % max(x.ndim, 1) for a in axes}))
        same = x.dtype.kind in "fc" and np.dtype(out.dtype) == np.dtype(x.dtype)
        integers = x.dtype.kind in "iub" and out.dtype.kind in "iu"     # (numpy's widening)
        if not (same or integers) or 0 in x.shape:
            raise NotLowered(f"a reduction of dtype {x.dtype} to {out.dtype}, shape {tuple(x.shape)}")
        if x.ndim and axes and hasattr(ctx, "reduce") and (fn in ("sum", "prod") or x.dtype.kind == "f"):
            return _loop_reduction(ctx, fn, x, args[0], axes, out)
        args = [as_dtype(args[0], x, out.dtype)]
        if x.ndim == 0:
            return args[0]
        if not axes:                             # over no axis: the values themselves
            return f"np.copy({args[0]})"
        if len(axes) == x.ndim:
            whole = f"np.{fn}({args[0]})"
            return f"np.full({tuple(out.shape)}, {whole})" if out.ndim else whole
        expr, shape = args[0], list(x.shape)
        for a in reversed(axes):
            if fn == "sum":
                expr = f"np.sum({expr}, axis={a})"
            else:
                split = _split_at(shape, a)
                expr = f"K.{fn}_axis({reshaped(f'np.ascontiguousarray({expr})', split)})"
            del shape[a]
        return reshaped(expr, out.shape)
    return rule


def _loop_reduction(ctx, fn: str, x, expr: str, axes: tuple, out) -> str:
    """A float sum over trailing axes in numpy's pairwise order (in order under 8 values,
    as numpy's), another sum or a product in order, or a float maximum or minimum (NaN if
    any value is NaN, else the last of equal values, -0.0 or 0.0, as np.maximum's reduction
    along leading axes; along the last one numpy's SIMD tree picks either), by loops."""
    dtype = numba_dtype(out.dtype)
    wide = {np.dtype(np.float32): "np.float64", np.dtype(np.complex64): "np.complex128"}.get(np.dtype(out.dtype))
    plain = np.dtype(x.dtype) == np.dtype(out.dtype)
    if fn == "sum" and plain and np.dtype(out.dtype) in (np.float32, np.float64, np.complex128) and \
            tuple(sorted(axes)) == tuple(range(x.ndim - len(axes), x.ndim)):
        # (numpy sums a contiguous run pairwise: error ~log(n) ulps, in order ~n)
        return ctx.reduce(x, expr, axes, out, f"{dtype}(0)", lambda acc, v: f"{acc} = {acc} + {v}",
                          pairwise=True)
    if fn == "sum" and wide and plain and x.ndim - 1 in axes:
        # (numpy's order is its iterator's: float32 summed in float64 stays within a few ulps)
        return ctx.reduce(x, expr, axes, out, f"{wide}(0)", lambda acc, v: f"{acc} = {acc} + {wide}({v})",
                          finish=lambda acc: f"{dtype}({acc})")
    if fn in ("sum", "prod"):
        op = "+" if fn == "sum" else "*"
        return ctx.reduce(x, expr, axes, out, f"{dtype}({int(fn == 'prod')})",
                          lambda acc, v: f"{acc} = {acc} {op} {v}")
    beyond, compare = ("-np.inf", ">=") if fn == "max" else ("np.inf", "<=")
    return ctx.reduce(x, expr, axes, out, f"{dtype}({beyond})",
                      lambda acc, v: f"if {v} {compare} {acc} or {v} != {v}: {acc} = {v}")


REDUCTIONS = ("sum", "prod", "max", "min")
for _name in REDUCTIONS:
    lowers(_p(_name))(_reduction(_name))


@lowers(_p("all_finite"))
def _all_finite(ctx, eqn, args) -> str:
    x = eqn.inputs[0]
    axes = eqn.params["axes"]
    if axes is not None and len(set(axes)) != x.ndim or eqn.outputs[0].ndim:
        raise NotLowered("all_finite over some of the axes")
    if x.dtype.kind not in "fc":
        return "True" if not eqn.params["nonzero"] else f"np.all({args[0]} != 0)"
    whole = _whole_array(ctx, x) if x.ndim and 0 not in x.shape else None
    if whole is not None:
        return f"K.all_finite({whole}, {bool(eqn.params['nonzero'])})"
    if x.ndim and hasattr(ctx, "reduce"):
        nonzero = eqn.params["nonzero"]
        return ctx.reduce(x, args[0], tuple(range(x.ndim)), eqn.outputs[0], "True",
                          lambda acc, v: f"{acc} = {acc} and np.isfinite({v})"
                          + (f" and {v} != 0" if nonzero else ""), convert=False)
    check = f"np.isfinite({args[0]})" + (f" & ({args[0]} != 0)" if eqn.params["nonzero"] else "")
    return f"np.all({check})" if x.ndim else f"({check})"


def _whole_array(ctx, x) -> str | None:
    """The name of an array holding exactly the values of `x` (its own, or under
    transposes and reshapes, which only reorder them), else None (a value computed in
    loops, a view of part of an array, or of more values)."""
    if not hasattr(ctx, "views"):        # (a scalar context: no arrays of its own)
        return None
    var = x
    while id(var) in ctx.views and ctx.kinds.get(id(var)) in ("transpose", "reshape"):
        var = ctx.views[id(var)][0]
    if id(var) in ctx.views or id(var) in ctx.inlined or var.ndim == 0:
        return None
    return ctx.names.get(id(var))


# -- products --------------------------------------------------------------------------------
def _stack(ctx, v, arg: str, batch: tuple) -> str:
    """Operand `v` of a batched product as a C-contiguous (count, m, k) stack: its own
    matrices where its batch is the whole batch, (1, m, k) where it has one matrix (the
    kernel reads it for every entry), else broadcast and copied."""
    core, own = tuple(v.shape[-2:]), tuple(v.shape[:-2])
    count = int(np.prod(own, dtype=np.int64))
    if count == 1 or (1,) * (len(batch) - len(own)) + own == batch:
        return reshaped(ctx.contiguous(v, arg), (count,) + core)
    return reshaped(f"np.ascontiguousarray(np.broadcast_to({arg}, {batch + core}))",
                    (int(np.prod(batch, dtype=np.int64)),) + core)



@lowers(_p("matmul"), blas=lambda e: int(np.prod(e.outputs[0].shape, dtype=np.int64))
        * int(e.inputs[0].shape[-1]))
def _matmul(ctx, eqn, args) -> str:
    """np.dot through BLAS for 1-D and 2-D operands of one float dtype, made contiguous (a
    matrix transposed from a C-contiguous one passed as it is: `blas_operand`); batched
    products as one np.dot per matrix of the broadcast batch (`K.batched_dot`). Rows that
    repeat (a broadcast, merged into the rows) are multiplied once: the result is a view
    repeating their products (None: nothing to assign)."""
    a, b = eqn.inputs
    if a.dtype != b.dtype or a.dtype.kind not in "fc":
        raise NotLowered(f"a product of dtypes {a.dtype} and {b.dtype}")
    operand = getattr(ctx, "blas_operand", ctx.contiguous)     # (a transposed matrix: as it is)
    rows = ctx.broadcast_rows(a) if hasattr(ctx, "broadcast_rows") and b.ndim == 2 else None
    if rows is not None:                     # (rows repeated: their product, repeated)
        small, wide = rows
        count, name = int(np.prod(small.shape[:-1], dtype=np.int64)), ctx.fresh()
        shape = tuple(small.shape[:-1]) + (b.shape[1],)
        rows_of = reshaped(ctx.contiguous(small, ctx.names[id(small)]), (count, a.shape[-1]))
        ctx.emit(f"{name} = {reshaped(f'np.dot({rows_of}, {operand(b, args[1])})', shape)}")
        ctx.product_view(eqn.outputs[0], name, shape, tuple(wide.shape[:-1]) + (b.shape[1],))
        return None
    if a.ndim in (1, 2) and b.ndim in (1, 2):
        return f"np.dot({operand(a, args[0])}, {operand(b, args[1])})"
    if b.ndim == 2:                          # (a stack times one matrix: one product)
        rows = int(np.prod(a.shape[:-1], dtype=np.int64))
        matrix = reshaped(ctx.contiguous(a, args[0]), (rows, a.shape[-1]))
        return reshaped(f"np.dot({matrix}, {operand(b, args[1])})", eqn.outputs[0].shape)
    if a.ndim < 2 or b.ndim < 2:
        raise NotLowered("a batched product with a 1-D operand")
    batch = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    stacks = [_stack(ctx, v, arg, batch) for arg, v in zip(args, (a, b))]
    return reshaped(f"K.batched_dot({stacks[0]}, {stacks[1]})", eqn.outputs[0].shape)
