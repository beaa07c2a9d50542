"""numpy.all and numpy.any on Tensors (boolean results: nothing to differentiate), composed
of comparisons and a sum, so empty reductions give numpy's True and False."""
from __future__ import annotations

import numpy as np

from .. import ops as pj
from ..numpy_dispatch import _no_extra, implements
from ..tensor import as_tensor

__all__ = ["all", "any"]


def _nonzero_count(name: str, a, axis, out, keepdims, where):
    _no_extra(name, out, where=None if where is np._NoValue else where)
    return pj.sum(pj.cast(pj.not_equal(a, 0), np.int64), axis, bool(keepdims))


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=np._NoValue):
    a = as_tensor(a)
    total = pj.sum(pj.ones_like(pj.cast(a, np.int64)), axis, bool(keepdims))
    return pj.equal(_nonzero_count("all", a, axis, out, keepdims, where), total)


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=np._NoValue):
    return pj.greater(_nonzero_count("any", a, axis, out, keepdims, where), 0)
