"""cumprod: numpy's forward bit for bit, with derivatives exact at zeros to every order.

Its rules are those of a parallel prefix (Hillis-Steele) scan of products: log2(n) steps,
each a multiply of the running products by themselves shifted along the axis (a slice
joined to a block of ones). There is no
division (the textbook cumsum(g * y)[::-1] / x is 0/0 at a zero, and wrong at second order
even when guarded), and the rules are made of multiplies and pads, so they differentiate
again exactly (a Hessian with two zeros in x is right).
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp, defvjp
from ..tensor import constant
from .elementwise import multiply_no_nan, multiply_zero_safe
from .reductions import _along_one_axis
from .shape import concat

__all__ = ["cumprod"]


def _cumprod_shape(x, axis):
    return tuple(x.shape), np.cumprod(np.zeros(1, x.dtype)).dtype     # (ints as numpy's)


cumprod_p = core.new_primitive("cumprod", lambda x, axis: np.cumprod(x, axis=axis), _cumprod_shape)


def _shift(y, axis: int, step: int, fill: float, back: bool = False):
    """y moved `step` places towards the end of `axis`, `fill` in the places left (towards
    the start with `back`: the transpose of the move with fill 0)."""
    n, shape = y.shape[axis], list(y.shape)
    shape[axis] = step
    block = constant(np.full(shape, fill, y.dtype))
    kept = y[(slice(None),) * axis + ((slice(step, n) if back else slice(0, n - step)),)]
    return concat([kept, block] if back else [block, kept], axis)


def _steps(n: int):
    step = 1
    while step < n:
        yield step
        step *= 2


def _scan_inputs(x, axis: int) -> list:
    """The running products each step of the scan starts from (x first)."""
    out, y = [], x
    for step in _steps(x.shape[axis]):
        out.append((y, step))
        y = multiply_zero_safe(y, _shift(y, axis, step, 1.0))
    return out


def _cumprod_vjp(g, ans, x, axis):
    """Back through the scan: y' = y * shift(y) sends g' * shift(y) to y and g' * y, moved
    back, to the entries `step` before (multiply_no_nan: a zero cotangent stays zero
    against a product that overflowed)."""
    for y, step in reversed(_scan_inputs(x, axis)):
        g = multiply_no_nan(_shift(y, axis, step, 1.0), g) + \
            _shift(multiply_no_nan(y, g), axis, step, 0.0, back=True)
    return g


def _cumprod_jvp(t, ans, x, axis):
    y = x
    for step in _steps(x.shape[axis]):
        shifted = _shift(y, axis, step, 1.0)
        t = multiply_no_nan(shifted, t) + multiply_no_nan(y, _shift(t, axis, step, 0.0))
        y = multiply_zero_safe(y, shifted)
    return t


defvjp(cumprod_p, _cumprod_vjp)
defjvp(cumprod_p, _cumprod_jvp)


def cumprod(x, axis=None):
    """np.cumprod: running products along `axis` (None: of the flattened tensor), numpy's
    values; gradients and Hessians exact where x has zeros."""
    return _along_one_axis(cumprod_p, x, axis)


def _examples(rng):
    x = rng.uniform(-1.5, 1.5, (3, 5))
    with_zeros = x.copy()
    with_zeros[0, 1] = with_zeros[1, 2] = with_zeros[1, 4] = 0.0     # one zero, two in a row
    return [core.Example(x, axis=1), core.Example(with_zeros, axis=1),
            core.Example(rng.uniform(-1.5, 1.5, (4, 2, 3)), axis=0),
            core.Example(rng.uniform(-1.5, 1.5, (1,)), axis=0)]


core.defexamples(cumprod_p)(_examples)
