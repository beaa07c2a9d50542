"""numpy.linalg's functions on Tensors, with numpy's signatures and defaults: `np.linalg.solve(t,
b)` under a tape records pforjac's solve (`pforjac.ops.dense_linalg`, `matrix_functions`)."""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..numpy_dispatch import _no_extra, implements
from ..ops._family import normalize_axes
from ..tensor import as_tensor

__all__ = []

la = np.linalg
for _numpy_fn, _pj_fn in ((la.solve, pj.solve), (la.inv, pj.inv), (la.det, pj.det),
                          (la.slogdet, pj.slogdet), (la.eigh, pj.eigh),
                          (la.eigvalsh, pj.eigvalsh), (la.svd, pj.svd), (la.qr, pj.qr),
                          (la.pinv, pj.pinv), (la.norm, pj.norm), (la.lstsq, pj.lstsq),
                          (la.matrix_power, pj.matrix_power), (la.matrix_rank, pj.matrix_rank)):
    implements(_numpy_fn)(_pj_fn)      # (their signatures are numpy's)


@implements(la.cholesky)
def cholesky(a, /, *, upper=False):
    return pj.cholesky(a, upper=upper)


@implements(la.svdvals)
def svdvals(x, /):
    return pj.svdvals(x)


@implements(la.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """numpy's array-API vector norm: of the entries along `axis` (None: all of them; a
    tuple: those axes taken as one vector), for every ord."""
    x = as_tensor(x)
    axes = normalize_axes(axis, x.ndim, "numpy.linalg.vector_norm")
    kept = tuple(k for k in range(x.ndim) if k not in axes)
    flat = pj.reshape(pj.transpose(x, kept + axes), tuple(x.shape[k] for k in kept) + (-1,))
    out = pj.norm(flat, ord, -1)
    if keepdims:
        out = pj.reshape(out, tuple(1 if k in axes else d for k, d in enumerate(x.shape)))
    return out


@implements(la.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return pj.norm(x, ord, (-2, -1), keepdims)


@implements(la.multi_dot)
def multi_dot(arrays, *, out=None):
    _no_extra("linalg.multi_dot", out)
    return pj.multi_dot(arrays)
