"""Neural-network helpers built from primitives (no rules of their own)."""
from __future__ import annotations

from ..tensor import as_tensor
from ._family import normalize_axes
from .elementwise import exp, log, stop_gradient
from .reductions import _stable_shift, max as _max, sum as _sum

__all__ = ["softmax", "log_softmax"]


def softmax(x, axis: int = -1):
    """`exp(x) / sum(exp(x))` along `axis`, shifted by the max for stability."""
    x = as_tensor(x)
    axis = normalize_axes(axis, x.ndim, "softmax")
    if any(x.shape[a] == 0 for a in axis):       # nothing to shift by (and nothing to return)
        return x * 1.0
    z = exp(x - stop_gradient(_max(x, axis=axis, keepdims=True)))
    return z / _sum(z, axis=axis, keepdims=True)


def log_softmax(x, axis: int = -1):
    """`x - logsumexp(x)` along `axis`, as `(x - max) - log(sum(exp(x - max)))`: the max
    subtracted first, so a large max does not absorb the log of the sum (TensorFlow's,
    JAX's and PyTorch's order; `[1000, 1001, 0]` lost 250 float32 ulps the other way)."""
    x = as_tensor(x)
    axis = normalize_axes(axis, x.ndim, "log_softmax")
    shifted = x - _stable_shift(x, axis)
    return shifted - log(_sum(exp(shifted), axis=axis, keepdims=True))
