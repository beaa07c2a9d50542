"""Neural-network helpers built from primitives (no rules of their own)."""
from __future__ import annotations

from .elementwise import exp, stop_gradient
from .reductions import logsumexp, max as _max, sum as _sum

__all__ = ["softmax", "log_softmax"]


def softmax(x, axis: int = -1):
    """`exp(x) / sum(exp(x))` along `axis`, shifted by the max for stability."""
    z = exp(x - stop_gradient(_max(x, axis=axis, keepdims=True)))
    return z / _sum(z, axis=axis, keepdims=True)


def log_softmax(x, axis: int = -1):
    return x - logsumexp(x, axis=axis, keepdims=True)
