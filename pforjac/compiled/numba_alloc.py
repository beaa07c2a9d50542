"""Arrays of zeros for the numba backend's generated code, made as numpy makes them.

numba's `np.zeros` takes memory from its runtime's allocator (`PyMem_RawMalloc`) and
fills it with `memset`. numpy's takes it from `calloc`, which knows memory fresh from the
operating system is zero already (the kernel zeroes each page as it is first touched)
and writes nothing: for any array of more than a few MiB (the C library maps those
fresh) numba makes one whole pass over the memory that numpy does not. A batch Jacobian
of an elementwise function is such an array with its diagonal written: (64, 512, 512)
float32 zeros and 32,768 values added into them took 8.7-10.5 ms with numba's zeros,
7.4-9.5 with these (four runs, the same loop).

`zeroed(shape, dtype)` is a C-ordered array of zeros whose memory comes from Python's
`PyMem_RawCalloc` (calloc itself under Python's default allocator, and traced by
tracemalloc as numba's own arrays are). It is handed to numba's runtime through the
runtime's public C API for extensions (`NRT_get_api()`, numba's `nrt_external.h`: its
`manage_memory`, with `PyMem_RawFree` as the destructor), so the array is counted and
freed as every numba array is, in this process and in one that loads the code from
numba's cache (the functions are named, and found again when the code is loaded). The
API's table has had its layout since numba 0.53 (pforjac needs 0.60); the test suite
checks it against the runtime's own functions.

`zeros`, the kernel generated code calls as `K.zeros`, is compiled (and cached on disk)
here, beside the code it runs: numba keys a function's disk cache by the file defining
it, so an edit of this file makes it again (a kernel in numba_kernels.py would keep the
old machine code until that file changed).
"""
from __future__ import annotations

__all__ = ["zeroed", "zeros", "c_strides"]

_MANAGE_MEMORY = 2        # the table's slots: allocate, allocate_external, manage_memory, ...


def _make_zeroed():
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def zeroed(typingctx, shape, dtype):
        if isinstance(shape, types.Integer):
            dims = (shape,)
        elif isinstance(shape, types.BaseTuple) and all(isinstance(t, types.Integer) for t in shape):
            dims = tuple(shape)
        else:
            return None
        if not isinstance(dtype, (types.NumberClass, types.DType)):
            return None
        element = dtype.instance_type if isinstance(dtype, types.NumberClass) else dtype.dtype
        result = types.Array(element, len(dims), "C")

        def codegen(context, builder, sig, args):
            from numba.core import cgutils
            values = [args[0]] if isinstance(shape, types.Integer) else \
                cgutils.unpack_tuple(builder, args[0], len(dims))
            sizes = [context.cast(builder, v, t, types.intp) for v, t in zip(values, dims)]
            return _zeros_of(context, builder, result, sizes)
        return result(shape, dtype), codegen
    return zeroed


def _zeros_of(context, builder, result, sizes):
    """The code making the array: its size checked (a negative dimension or an overflow is
    numpy's ValueError), its memory from PyMem_RawCalloc and its owner from numba's
    runtime (a MemoryError where either fails), its strides C-ordered."""
    from numba import types
    from numba.core import cgutils
    from numba.core.imputils import impl_ret_new_ref
    from numba.np.arrayobj import get_itemsize, make_array, populate_array
    itemsize = context.get_constant(types.intp, get_itemsize(context, result))
    nbytes, bad = itemsize, cgutils.false_bit
    for d in sizes:
        product = builder.smul_with_overflow(nbytes, d)
        nbytes = builder.extract_value(product, 0)
        bad = builder.or_(bad, builder.or_(builder.extract_value(product, 1),
                                           builder.icmp_signed("<", d, d.type(0))))
    with cgutils.if_unlikely(builder, bad):
        context.call_conv.return_user_exc(
            builder, ValueError, ("zeros: a negative dimension, or more bytes than memory can hold",))
    data = _calloc(builder, nbytes)
    with cgutils.if_unlikely(builder, cgutils.is_null(builder, data)):
        context.call_conv.return_user_exc(builder, MemoryError, ("zeros: out of memory",))
    meminfo = _managed(builder, data)
    with cgutils.if_unlikely(builder, cgutils.is_null(builder, meminfo)):
        builder.call(_free(builder), [data])
        context.call_conv.return_user_exc(builder, MemoryError, ("zeros: out of memory",))
    array = make_array(result)(context, builder)
    populate_array(array, data=builder.bitcast(data, context.get_data_type(result.dtype).as_pointer()),
                   shape=sizes, strides=c_strides(builder, itemsize, sizes), itemsize=itemsize,
                   meminfo=meminfo, parent=None)
    return impl_ret_new_ref(context, builder, result, array._getvalue())


def c_strides(builder, itemsize, shape: list) -> list:
    """The C-order strides (LLVM values) of an array of `shape` (LLVM values) and items of
    `itemsize` bytes. (Here, where the cached `zeros` kernel is compiled: numba keys a
    kernel's disk cache by its own file, so its code stays in this one.)"""
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.insert(0, step)
        step = builder.mul(step, d)
    return strides


def _void_p():
    from llvmlite import ir
    return ir.IntType(8).as_pointer()


def _calloc(builder, nbytes):
    """PyMem_RawCalloc(max(nbytes, 1), 1): a zero-size array still owns (a byte of) memory."""
    from llvmlite import ir
    from numba.core import cgutils
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_void_p(), [nbytes.type] * 2),
                                        "PyMem_RawCalloc")
    one = nbytes.type(1)
    return builder.call(fn, [builder.select(builder.icmp_signed("==", nbytes, nbytes.type(0)), one, nbytes),
                             one])


def _free(builder):
    from llvmlite import ir
    from numba.core import cgutils
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [_void_p()]),
                                          "PyMem_RawFree")


def _managed(builder, data):
    """`NRT_get_api()->manage_memory(data, PyMem_RawFree)`: a new reference-counted owner
    of `data` that frees it when its count reaches zero (NULL where its own allocation
    fails)."""
    from llvmlite import ir
    from numba.core import cgutils
    get_api = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_void_p(), []), "NRT_get_api")
    free = _free(builder)
    manage_type = ir.FunctionType(_void_p(), [_void_p(), free.type])
    table = builder.bitcast(builder.call(get_api, []), manage_type.as_pointer().as_pointer())
    manage = builder.load(builder.gep(table, [ir.IntType(32)(_MANAGE_MEMORY)]))
    return builder.call(manage, [data, free])


def zeros(shape, dtype):
    """np.zeros(shape, dtype), its memory from PyMem_RawCalloc."""
    return zeroed(shape, dtype)


try:
    import numba
except ImportError:          # numba is optional: only generated code makes these arrays
    zeroed = None
else:
    zeroed = _make_zeroed()
    zeros = numba.njit(cache=True)(zeros)
