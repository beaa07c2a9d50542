"""Kernels copying an array into another with its axes permuted, as loop nests of the
generated code did (numba_copies.py says which nests): `permute_into<rank>(out, x, axes,
shape)` stores `x` read with its axis `axes[k]` as axis k into `out`, of `shape`, in C
order. The loops read through a view of `x` with its strides in that order, so LLVM
vectorizes a copy whose innermost axis stays innermost (it checks the stride at run time).
"""
from __future__ import annotations

import numpy as np

__all__ = ["permute_into2", "permute_into3", "permute_into4", "permute_into5"]


def permute_into2(out, x, axes, shape):
    v = np.lib.stride_tricks.as_strided(x, shape, (x.strides[axes[0]], x.strides[axes[1]]))
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            out[i0, i1] = v[i0, i1]


def permute_into3(out, x, axes, shape):
    v = np.lib.stride_tricks.as_strided(x, shape, (x.strides[axes[0]], x.strides[axes[1]],
                                                   x.strides[axes[2]]))
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            for i2 in range(shape[2]):
                out[i0, i1, i2] = v[i0, i1, i2]


def permute_into4(out, x, axes, shape):
    v = np.lib.stride_tricks.as_strided(x, shape, (x.strides[axes[0]], x.strides[axes[1]],
                                                   x.strides[axes[2]], x.strides[axes[3]]))
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            for i2 in range(shape[2]):
                for i3 in range(shape[3]):
                    out[i0, i1, i2, i3] = v[i0, i1, i2, i3]


def permute_into5(out, x, axes, shape):
    v = np.lib.stride_tricks.as_strided(x, shape, (x.strides[axes[0]], x.strides[axes[1]],
                                                   x.strides[axes[2]], x.strides[axes[3]],
                                                   x.strides[axes[4]]))
    for i0 in range(shape[0]):
        for i1 in range(shape[1]):
            for i2 in range(shape[2]):
                for i3 in range(shape[3]):
                    for i4 in range(shape[4]):
                        out[i0, i1, i2, i3, i4] = v[i0, i1, i2, i3, i4]


try:
    import numba
except ImportError:          # numba is optional: only generated code uses these kernels
    numba = None
if numba is not None:
    for _name in __all__:
        globals()[_name] = numba.njit(cache=True, error_model="numpy")(globals()[_name])
