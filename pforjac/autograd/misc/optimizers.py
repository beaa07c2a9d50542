"""autograd's optimizers (`misc.optimizers`): `grad(x, i)` is the gradient at iteration i,
`x0` any nest `flatten` takes, `callback(x, i, g)` called each iteration."""
from __future__ import annotations

import functools

import numpy as np

from .flatten import flatten

__all__ = ["sgd", "rmsprop", "adam"]


def _on_flat(optimize):
    @functools.wraps(optimize)
    def run(grad, x0, callback=None, *args, **kwargs):
        x, unflatten = flatten(x0)
        flat_grad = lambda x, i: np.asarray(flatten(grad(unflatten(x), i))[0])  # noqa: E731
        flat_callback = None if callback is None else \
            (lambda x, i, g: callback(unflatten(x), i, unflatten(g)))
        return unflatten(optimize(flat_grad, np.asarray(x), flat_callback, *args, **kwargs))
    return run


@_on_flat
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Stochastic gradient descent with momentum."""
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@_on_flat
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    """Root-mean-square propagation."""
    avg_sq_grad = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g ** 2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(avg_sq_grad) + eps)
    return x


@_on_flat
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """Adam, with bias-corrected first and second moment estimates."""
    m, v = np.zeros(len(x)), np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g ** 2 + b2 * v
        mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        x = x - step_size * mhat / (np.sqrt(vhat) + eps)
    return x
