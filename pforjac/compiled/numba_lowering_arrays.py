"""numba lowering rules of scans, arg-reductions, sorting, gathers along an axis and the
remaining shape ops (part of the one table, `numba_lowering.numba_rules`). An op along one
axis sees its operand as a C-contiguous (before, axis, after) array and runs a loop kernel
of numba_kernels.py (`K.scan_axis`, `K.sort_axis`, ...) in numpy's order.
"""
from __future__ import annotations

import numpy as np

from .numba_lowering import (NotLowered, _p, _split_at, as_dtype, lowers, new_array, numba_dtype, positioned,
                             reshaped)

__all__: list = []


def _three(ctx, var, expr: str, axis: int) -> str:
    """`expr` (the value of `var`) as a C-contiguous (before, axis, after) array."""
    return reshaped(ctx.contiguous(var, expr), _split_at(var.shape, axis))


def flat_indices(ctx, idx, expr: str) -> str:
    """The index array `idx` (source `expr`) as one C-contiguous row."""
    return reshaped(ctx.contiguous(idx, expr), (int(np.prod(idx.shape)),))


def _along(kernel: str, extra: str = "", kinds: str = "fiub"):
    """The rule of an op along `params['axis']` computed by `K.<kernel>` of the operand as
    (before, axis, after), its result reshaped to the output's shape."""
    def rule(ctx, eqn, args) -> str:
        x, out = eqn.inputs[0], eqn.outputs[0]
        if x.ndim == 0 or 0 in x.shape or x.dtype.kind not in kinds:
            raise NotLowered(f"dtype {x.dtype}, shape {tuple(x.shape)}")
        x3 = _three(ctx, x, as_dtype(args[0], x, out.dtype), eqn.params["axis"] % x.ndim)
        call = f"K.{kernel}({x3}{extra})"
        return f"{call}[0, 0]" if out.ndim == 0 else reshaped(call, out.shape)
    return rule


lowers(_p("cumsum"))(_along("scan_axis", ", False"))
lowers(_p("cumprod"))(_along("scan_axis", ", True"))


def _arg_extremum(smallest: bool):
    def rule(ctx, eqn, args) -> str:
        x, out = eqn.inputs[0], eqn.outputs[0]
        if x.ndim == 0 or x.dtype.kind not in "fiu":
            raise NotLowered(f"dtype {x.dtype}, shape {tuple(x.shape)}")
        call = f"K.argmax_axis({_three(ctx, x, args[0], eqn.params['axis'] % x.ndim)}, {smallest})"
        return f"{call}[0, 0]" if out.ndim == 0 else reshaped(call, out.shape)
    return rule


lowers(_p("argmax"))(_arg_extremum(False))
lowers(_p("argmin"))(_arg_extremum(True))


@lowers(_p("sort"), _p("argsort"))
def _sort(ctx, eqn, args) -> str:
    """np.sort's values (of a quicksort, whose order of ties numpy leaves open, one answer:
    of floats, -0.0 and 0.0 in either order; of kind='stable', the values by the stable
    permutation, numpy's -0.0 and 0.0); np.argsort stable, numpy's answer for kind='stable'
    (for a quicksort, one of the answers: the same as numpy's where no values tie)."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    if x.ndim == 0 or x.dtype.kind not in "fiu":
        raise NotLowered(f"dtype {x.dtype}, shape {tuple(x.shape)}")
    x3 = _three(ctx, x, args[0], eqn.params["axis"] % x.ndim)
    stable = eqn.prim.name == "sort" and x.dtype.kind == "f" and eqn.params["kind"] in ("stable", "mergesort")
    return reshaped(f"K.{'stable_' if stable else ''}{eqn.prim.name}_axis({x3})", out.shape)


@lowers(_p("gather"))
def _gather(ctx, eqn, args) -> str:
    """np.take along an axis: the operand as (before, axis, after), the indices flat."""
    x, idx = eqn.inputs
    axis = eqn.params["axis"] % x.ndim
    if idx.dtype.kind not in "iu":
        raise NotLowered(f"indices of dtype {idx.dtype} and shape {tuple(idx.shape)}")
    x3 = reshaped(ctx.contiguous(x, args[0]), _split_at(x.shape, axis))
    flat = flat_indices(ctx, idx, args[1]) if idx.ndim else f"np.full(1, {args[1]})"
    call = f"K.take_axis({x3}, {flat})"      # (one element: a scalar, as 0-d values are)
    return f"{call}[0, 0, 0]" if eqn.outputs[0].ndim == 0 else reshaped(call, eqn.outputs[0].shape)


@lowers(_p("scatter_add"))
def _scatter_add(ctx, eqn, args) -> str:
    """Zeros with g added at the indices along an axis (repeated ones add up, in order).
    Where the caller knows no position repeats (`unique=True`: pforjac's own densified
    Jacobian rows), each value is stored, as `g + 0` (so -0.0 becomes +0.0, as adding it
    to a zero does), not added: an addition reads each page of the new array before
    writing it, and Linux maps its shared zero page for the read, then faults again for
    the write (a 64 MiB diagonal Jacobian: 6.7-8.5 ms stored, 7.4-9.5 added, four runs)."""
    g, idx = eqn.inputs
    axis, size = eqn.params["axis"], eqn.params["size"]
    if idx.dtype.kind not in "iu" or g.dtype.kind not in "fc":
        raise NotLowered(f"indices of dtype {idx.dtype} and shape {tuple(idx.shape)}")
    if idx.ndim == 0:                       # (one index: g has no axis for it)
        g3 = f"np.full((1, 1, 1), {args[0]})" if g.ndim == 0 else \
            reshaped(ctx.contiguous(g, args[0]), _split_at(g.shape, axis, 0))
        return reshaped(f"K.scatter_add_axis({g3}, np.full(1, {args[1]}), {int(size)})", eqn.outputs[0].shape)
    flat = flat_indices(ctx, idx, args[1])
    if hasattr(ctx, "store_at"):            # (a loop nest reading g through its views)
        out, name, at = eqn.outputs[0], ctx.fresh(), ctx.fresh()
        unique = eqn.params.get("unique") is True
        ctx.emit(f"{at} = K.positions({flat}, {int(size)})")
        ctx.emit(f"{name} = {new_array(out.shape, out.dtype, zeros=True)}")
        ctx.store_at(name, tuple(g.shape), lambda i: positioned(i, axis % out.ndim, idx.shape, at),
                     g, args[0], g.dtype, "=" if unique else "+=", plus_zero=unique)
        return name
    g3 = reshaped(ctx.contiguous(g, args[0]), _split_at(g.shape, axis, idx.ndim))
    return reshaped(f"K.scatter_add_axis({g3}, {flat}, {int(size)})", eqn.outputs[0].shape)


@lowers(_p("take_along_axis"))
def _take_along_axis(ctx, eqn, args) -> str:
    x, idx = eqn.inputs
    axis = eqn.params["axis"] % x.ndim
    if idx.dtype.kind not in "iu":
        raise NotLowered(f"indices of dtype {idx.dtype}")
    return reshaped(f"K.take_along_axis3({_three(ctx, x, args[0], axis)}, {_three(ctx, idx, args[1], axis)})",
                    eqn.outputs[0].shape)


@lowers(_p("put_along_axis_add"))
def _put_along_axis_add(ctx, eqn, args) -> str:
    g, idx = eqn.inputs
    axis = eqn.params["axis"] % g.ndim
    if idx.dtype.kind not in "iu" or g.dtype.kind not in "fiu":
        raise NotLowered(f"indices of dtype {idx.dtype}, values of dtype {g.dtype}")
    return reshaped(f"K.put_along_axis_add3({_three(ctx, g, args[0], axis)}, {_three(ctx, idx, args[1], axis)}, "
                    f"{int(eqn.params['size'])})", eqn.outputs[0].shape)


@lowers(_p("searchsorted"))
def _searchsorted(ctx, eqn, args) -> str:
    a, v = eqn.inputs
    if a.dtype != v.dtype or a.dtype.kind not in "fiu":
        raise NotLowered(f"dtypes {a.dtype} and {v.dtype}")
    call = f"np.searchsorted({args[0]}, {args[1]}, side={eqn.params['side']!r})"
    return f"np.int64({call})" if v.ndim == 0 else f"{call}.astype(np.int64)"


@lowers(_p("check_index"))
def _check_index(ctx, eqn, args) -> str:
    x = eqn.inputs[0]
    if x.ndim == 0:
        raise NotLowered("0-d indices")
    ctx.follow(eqn.outputs[0], x)
    return f"K.check_index({args[0]}, {int(eqn.params['size'])})"


# -- shapes ----------------------------------------------------------------------------------
@lowers(_p("pad"))
def _pad(ctx, eqn, args) -> str:
    """A filled array with x written into its middle (np.pad's constant mode)."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    value = eqn.params["value"]
    if x.ndim == 0 or not isinstance(value, (int, float, np.integer, np.floating)):
        raise NotLowered(f"a fill value of type {type(value).__name__}")
    name = ctx.fresh()
    fill = np.asarray(value).astype(out.dtype).item()
    text = repr(fill) if not isinstance(fill, float) or np.isfinite(fill) else \
        ("np.nan" if fill != fill else ("np.inf" if fill > 0 else "-np.inf"))
    ctx.emit(f"{name} = np.full({tuple(out.shape)}, {numba_dtype(out.dtype)}({text}))")
    key = tuple(slice(a, a + d) for (a, _), d in zip(eqn.params["pad_width"], x.shape))
    ctx.store(name, out.shape, key, x, args[0], out.dtype)
    return name


@lowers(_p("tile"))
def _tile(ctx, eqn, args) -> str:
    """x repeated: broadcast to (r0, d0, r1, d1, ...) and reshaped (reps has x's rank)."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    reps = tuple(eqn.params["reps"])
    if x.ndim == 0 or len(reps) != x.ndim:
        raise NotLowered(f"reps {reps} for shape {tuple(x.shape)}")
    split = tuple(v for d in x.shape for v in (1, d))
    wide = tuple(v for r, d in zip(reps, x.shape) for v in (r, d))
    return reshaped(f"np.ascontiguousarray(np.broadcast_to({reshaped(ctx.contiguous(x, args[0]), split)}, "
                    f"{wide}))", out.shape)


@lowers(_p("one_hot"))
def _one_hot(ctx, eqn, args) -> str:
    x, out = eqn.inputs[0], eqn.outputs[0]
    depth = int(eqn.params["depth"])
    rows = reshaped(ctx.contiguous(x, args[0]), tuple(x.shape) + (1,)) if x.ndim else args[0]
    return (f"({rows} == np.arange({depth}).astype({numba_dtype(x.dtype)}))"
            f".astype({numba_dtype(out.dtype)})")


@lowers(_p("index_update"))
def _index_update(ctx, eqn, args) -> str:
    """A copy of x with x[key] = v, for a basic key (ints, slices, None, ...)."""
    x, v = eqn.inputs
    if x.ndim == 0:
        raise NotLowered("a 0-d value")
    name = ctx.fresh()
    ctx.emit(f"{name} = np.copy({args[0]})")
    ctx.store(name, x.shape, eqn.params["key"], v, args[1], x.dtype)
    return name


@lowers(_p("imag"))
def _imag(ctx, eqn, args) -> str:
    x, out = eqn.inputs[0], eqn.outputs[0]
    if x.dtype.kind == "c":
        raise NotLowered("a complex value")
    return f"{numba_dtype(out.dtype)}(0)" if out.ndim == 0 else \
        f"np.zeros({tuple(out.shape)}, {numba_dtype(out.dtype)})"
