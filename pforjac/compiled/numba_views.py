"""Views the numba backend's generated code makes without numba's general machinery.

`merged_axes(a, lo, hi)`: the C-contiguous array `a` with its axes `lo .. hi-1` merged
into one (a C-order reshape of those axes, its length their product). numba's
`reshape` checks the new shape against the old at run time, through a C helper and an
error path, and each call compiles to about as much code as a short loop; this view is
a handful of instructions. The loop nests of the generated code read and write arrays
through it where they run over adjacent axes as one loop (numba_merge.py): a loop level
is a good part of a nest's compile time. Both bounds are literal integers; the shape is
read from `a` itself, so the view always has `a`'s elements, in `a`'s order.

`reshaped(a, shape)`: the C-order reshape of `a` to `shape` (a tuple of integers), for
the reshapes the generated code makes of arrays it knows are C-contiguous. numba's own
`reshape` compiles its shape check (a helper function) and a C call at every use, 30-40
ms of a first compile each; of an array numba types as C-contiguous this view is a size
check (a ValueError where the shape does not fit) and the new shape's strides. Other
arrays get numba's own reshape, as `a.reshape(shape)` would: of a Fortran-ordered one,
its view where no copy is needed (else its NotImplementedError); of one typed as strided,
numba's typing error ("contiguous array only").

numba is told that the view aliases `a` (`_declare_alias`), as it knows of its own views
(`reshape`, `ravel`, `transpose`, indexing): its dead-code elimination drops a store
into an array that nothing reads afterwards, and the body of a `prange` loop is analysed
without its back edge, so `view[i] = value` in a parallel loop, with the view read by
nothing after the loop, was a dead store to numba, which removed it: the array under the
view kept what it held before (a new array's leftover bytes, the unsummed product of an
in-place sum). Serial loops keep the view live through their back edge.
"""
from __future__ import annotations

__all__ = ["merged_axes", "reshaped"]


def _make_merged_axes():
    from numba import types
    from numba.core import cgutils
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import intrinsic
    from numba.np.arrayobj import make_array, populate_array

    @intrinsic
    def merged_axes(typingctx, a, lo, hi):
        if not (isinstance(a, types.Array) and a.layout == "C" and isinstance(lo, types.IntegerLiteral)
                and isinstance(hi, types.IntegerLiteral)):
            return None
        start, stop = lo.literal_value, hi.literal_value
        if not 0 <= start < stop <= a.ndim:
            return None
        result = a.copy(ndim=a.ndim - (stop - start) + 1, layout="C")

        def codegen(context, builder, signature, args):
            array = make_array(a)(context, builder, args[0])
            shape = cgutils.unpack_tuple(builder, array.shape, a.ndim)
            strides = cgutils.unpack_tuple(builder, array.strides, a.ndim)
            size = shape[start]
            for d in shape[start + 1:stop]:
                size = builder.mul(size, d)
            out = make_array(result)(context, builder)
            populate_array(out, data=array.data, shape=shape[:start] + [size] + shape[stop:],
                           strides=strides[:start] + [strides[stop - 1]] + strides[stop:],
                           itemsize=array.itemsize, meminfo=array.meminfo, parent=array.parent)
            return impl_ret_borrowed(context, builder, result, out._getvalue())
        return result(a, lo, hi), codegen
    _declare_alias("merged_axes", (__name__, __name__.rpartition(".")[0] + ".numba_kernels"))
    return merged_axes


def _make_reshaped():
    from numba import types
    from numba.core import cgutils
    from numba.core.imputils import impl_ret_borrowed
    from numba.core.typing import signature
    from numba.extending import intrinsic
    from numba.np.arrayobj import array_reshape, make_array, populate_array
    from .numba_alloc import c_strides

    @intrinsic
    def reshaped(typingctx, a, shape):
        if not (isinstance(a, types.Array) and a.layout in "CF" and isinstance(shape, types.BaseTuple)
                and all(isinstance(t, types.Integer) for t in shape)):
            return None
        ndim = len(shape)
        result = a.copy(ndim=ndim)       # (numba's type of a.reshape(shape))

        def codegen(context, builder, sig, args):
            intp = types.intp
            new = [context.cast(builder, v, t, intp)
                   for v, t in zip(cgutils.unpack_tuple(builder, args[1], ndim), shape)]
            if a.layout != "C":          # (numba's reshape, which reads the strides)
                tuple_type = types.UniTuple(intp, ndim)
                return array_reshape(context, builder, signature(result, a, tuple_type),
                                     [args[0], context.make_tuple(builder, tuple_type, new)])
            array = make_array(a)(context, builder, args[0])
            size = context.get_constant(intp, 1)
            for d in new:
                size = builder.mul(size, d)
            with cgutils.if_unlikely(builder, builder.icmp_signed("!=", size, array.nitems)):
                context.call_conv.return_user_exc(builder, ValueError, ("reshaped: not the array's size",))
            out = make_array(result)(context, builder)
            populate_array(out, data=array.data, shape=new, strides=c_strides(builder, array.itemsize, new),
                           itemsize=array.itemsize,
                           meminfo=array.meminfo, parent=array.parent)
            return impl_ret_borrowed(context, builder, result, out._getvalue())
        return result(a, shape), codegen
    _declare_alias("reshaped", (__name__, __name__.rpartition(".")[0] + ".numba_kernels"))
    return reshaped


def _declare_alias(function: str, modules: tuple) -> None:
    """Tells numba's alias analysis that `function(a, ...)`, called by that name from one of
    `modules` (`K.merged_axes` names the kernels module), returns a view of `a`: a store
    through the view then keeps `a` (and every alias of it) live, as a store into `a` does."""
    from numba.core import ir_utils

    def alias(lhs: str, args: list, alias_map: dict, arg_aliases: set) -> None:
        a = args[0].name
        if a in arg_aliases:            # (numba's own rule for a view: of an argument, or not)
            arg_aliases.add(lhs)
            return
        alias_map.setdefault(a, set()).add(lhs)
        alias_map.setdefault(lhs, set()).add(a)
    for module in modules:
        ir_utils.alias_func_extensions[(function, module)] = alias


try:
    import numba  # noqa: F401
except ImportError:          # numba is optional: only generated code uses these views
    merged_axes = reshaped = None
else:
    merged_axes, reshaped = _make_merged_axes(), _make_reshaped()
