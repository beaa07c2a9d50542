"""Reductions over axes: sum, max, min, prod primitives; mean and logsumexp composites.

Every reduction primitive takes `axes` as a sorted tuple of non-negative ints
and `keepdims` as a bool, so the converters and rules never re-normalize.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import core
from ..core import defjvp, defjvp_all, defvjp
from ..tensor import as_operands, as_tensor
from ..warn import warn_wrong_result
from .elementwise import (abs as abs_, cast, equal, exp, less, log, multiply_no_nan,
                          multiply_zero_safe, ones_like, sqrt, square, stop_gradient, where,
                          zeros, zeros_like)
from .broadcasting import (REDUCTIONS, _in_c_order, _reduce, _reduction_shape, broadcast_to, reduce_source,  # noqa: F401
                           reduction, reshape, restore_reduced, sum, sum_p)     # (sum opens the family)
from .shape import flip, pad, stack, transpose
from ._family import axis_index, normalize_axes
from ._kernels import extremum, extremum_is_plain
from .complex_parts import abs_squared

__all__ = ["max", "min", "prod", "mean", "logsumexp", "logaddexp", "var", "std", "cumsum",
           "argmax", "argmin"]

def _extremum_vjp(g, ans, x, axes, keepdims):
    mask = cast(equal(x, restore_reduced(ans, x.shape, axes, keepdims)), g.dtype)
    count = restore_reduced(sum_p.bind(mask, axes=axes, keepdims=keepdims), x.shape, axes, keepdims)
    return restore_reduced(g, x.shape, axes, keepdims) * mask / count


def _extremum(reduce, pairwise):
    """np.max / np.min, bit for bit; faster over a short last axis (`_kernels.extremum`)."""
    return functools.partial(extremum, reduce, pairwise)


# (np.maximum.reduce is what np.max calls, without its 1-2 us of Python around it)
max_p = reduction("max", _extremum(np.maximum.reduce, np.maximum), layout="following", identity=False)
min_p = reduction("min", _extremum(np.minimum.reduce, np.minimum), layout="following", identity=False)


def _extremum_jvp(ts, ans, x, axes, keepdims):
    """The tangent's mean over the entries that tie for the extremum (ones_like, not
    `ans * 0 + 1`, whose ones are NaN where the extremum is infinite)."""
    weights = _extremum_vjp(ones_like(ans), ans, x, axes, keepdims)
    return sum_p.bind(ts[0] * weights, axes=axes, keepdims=keepdims)


def _plain_extremum(reduce: str, pairwise: str):
    """`plain_forward` of max or min: numpy's reduce, or the slices' fold `extremum` makes."""
    def plain(x, c_ordered, axes, keepdims):
        if not x.ndim:
            return None
        if extremum_is_plain(x.shape, x.dtype, axes):
            return reduce_source(reduce, axes, keepdims)
        (a,) = axes
        at = ("x[" + "slice(None), " * a + "{}]").format         # (no `:`: astunparse garbles it)
        folded = f"{pairwise}({at(0)}, {at(1)}, order='C')"
        for k in range(2, x.shape[a]):
            folded = f"{pairwise}({folded}, {at(k)})"
        kept = tuple(x.shape[:a]) + (1,) + tuple(x.shape[a + 1:])
        return f"{folded}.reshape({kept!r})" if keepdims else folded
    return plain


max_p.plain_forward = _plain_extremum("np.maximum.reduce", "np.maximum")
min_p.plain_forward = _plain_extremum("np.minimum.reduce", "np.minimum")
for _p in (max_p, min_p):
    defvjp(_p, _extremum_vjp)
    defjvp_all(_p, _extremum_jvp)


prod_p = reduction("prod", _in_c_order(np.prod), layout="free")


def _prod_of_others(x, axes):
    """Each entry's d prod / d x: the product of the other entries of its reduced slice.

    Made from a pairwise tree of products (the slice's entries multiplied two by two,
    then the pairs, ...), walked back down: an entry's others are its sibling times its
    parent's others. No division, so it is exact at any number of zeros, and built of
    multiply, getitem, stack and reshape alone, so every higher derivative is as well
    (with `prod / x` guarded at zeros, the second derivative at two zeros was 0)."""
    keep = [a for a in range(x.ndim) if a not in axes]
    perm = tuple(keep) + tuple(axes)
    xt = transpose(x, perm) if perm != tuple(range(x.ndim)) else x
    lead = tuple(xt.shape[:len(keep)])
    every = (slice(None),) * len(lead)
    v = reshape(xt, lead + (math.prod(x.shape[a] for a in axes),))
    levels = []
    while v.shape[-1] > 1:
        m = v.shape[-1]
        if m % 2:
            v = pad(v, [(0, 0)] * len(lead) + [(0, 1)], constant_values=1.0)
        pairs = reshape(v, lead + ((m + 1) // 2, 2))
        left, right = pairs[every + (slice(None), 0)], pairs[every + (slice(None), 1)]
        levels.append((left, right, m))
        v = multiply_zero_safe(left, right)
    others = ones_like(v)
    for left, right, m in reversed(levels):
        both = stack([multiply_zero_safe(others, right), multiply_zero_safe(others, left)],
                     axis=-1)
        others = reshape(both, lead + (2 * left.shape[-1],))
        if others.shape[-1] != m:
            others = others[every + (slice(0, m),)]
    others = reshape(others, xt.shape)
    return transpose(others, tuple(np.argsort(perm))) if xt is not x else others


defvjp(prod_p, lambda g, ans, x, axes, keepdims:
       restore_reduced(g, x.shape, axes, keepdims) * _prod_of_others(x, axes))
defjvp(prod_p, lambda t, ans, x, axes, keepdims:   # a zero tangent times an overflowed
       sum_p.bind(multiply_no_nan(_prod_of_others(x, axes), t),   # product of the others
                  axes=axes, keepdims=keepdims))                   # is 0, as in reverse mode


def max(x, axis=None, keepdims=False):
    """Maximum over `axis`; the gradient is split evenly among ties."""
    return _reduce(max_p, x, axis, keepdims)


def min(x, axis=None, keepdims=False):
    return _reduce(min_p, x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    """Product over `axis`; its derivatives of every order are exact at zeros (the
    gradient is the product of the others, made without division)."""
    return _reduce(prod_p, x, axis, keepdims)


def _accumulator(dtype: np.dtype):
    """The dtype numpy's mean sums `dtype` in, where it is not `dtype` itself: float32 for
    float16 (whose running sums stall: 10000 values near 3 summed down a column stop at
    8192), float64 for integers and bools (whose sum can wrap around)."""
    if dtype == np.float16:
        return np.dtype(np.float32)
    return np.dtype(np.float64) if dtype.kind in "biu" else None


def mean(x, axis=None, keepdims=False):
    """np.mean: the sum over `axis` divided by the count, summed as numpy's is (float16 in
    float32 and rounded back to float16, integers in float64)."""
    x = as_tensor(x)
    axes = normalize_axes(axis, x.ndim, "mean")
    count = math.prod(x.shape[a] for a in axes)
    wide = _accumulator(x.dtype)
    total = sum_p.bind(x if wide is None else cast(x, wide), axes=axes, keepdims=bool(keepdims))
    return cast(total / count, x.dtype) if x.dtype == np.float16 else total / count


def _stable_shift(x, axes: tuple):
    """The max over `axes` (kept), where finite, else 0, with no gradient: what logsumexp
    subtracts before exp. Over an empty axis it is 0 (there is no max)."""
    if any(x.shape[a] == 0 for a in axes):
        return zeros(_reduction_shape(x.shape, axes, True), x.dtype)
    top = max_p.bind(x, axes=axes, keepdims=True)
    return stop_gradient(where(less(abs_(top), np.inf), top, zeros_like(top)))


def logsumexp(x, axis=None, keepdims=False):
    """`log(sum(exp(x)))` over `axis`, computed stably (shifted by the max; by 0 where
    the max is not finite, so all -inf gives -inf and any +inf gives inf, as numpy's
    unshifted formula does)."""
    x = as_tensor(x)
    axes = normalize_axes(axis, x.ndim, "logsumexp")
    shift = _stable_shift(x, axes)
    out = log(sum_p.bind(exp(x - shift), axes=axes, keepdims=True)) + shift
    if keepdims:
        return out
    return reshape(out, _reduction_shape(x.shape, axes, False))


def refuse_complex(name: str, *operands) -> None:
    """numpy's ufuncs with no complex loop (logaddexp, ...) refuse complex operands; so do
    pforjac's, by name, rather than compute a complex formula numpy does not define."""
    for v in operands:
        if v.dtype.kind == "c":
            raise TypeError(f"{name}: complex operands ({v.dtype.name}) are not supported, as "
                            f"numpy's {name} does not take them; apply it to the real and "
                            f"imaginary parts as your formula needs")


def logaddexp(x, y):
    """np.logaddexp: `log(exp(x) + exp(y))`, as logsumexp of the two (broadcast)."""
    x, y = as_operands((x, y))
    refuse_complex("logaddexp", x, y)
    wide = np.logaddexp(np.zeros((), x.dtype), np.zeros((), y.dtype)).dtype   # (bool: float16)
    x, y = cast(x, wide), cast(y, wide)
    shape = np.broadcast_shapes(x.shape, y.shape)
    return logsumexp(stack([broadcast_to(x, shape), broadcast_to(y, shape)]), axis=0)


def var(x, axis=None, keepdims=False, ddof=0):
    """np.var: the mean squared deviation from the mean over `axis`, divided by
    `count - ddof` instead of `count` when `ddof` is given (by 0 where `ddof >= count`, as
    numpy's: inf, or NaN for no values, never a negative variance). float16 is computed in
    float32 and rounded back, as its mean is (numpy's var sums float16 in float16: 1.6 for
    10000 values near 3 whose variance is 0.0009). Complex x: the mean of |x - mean|^2, real."""
    x = as_tensor(x)
    if x.dtype == np.float16:
        return cast(var(cast(x, np.float32), axis, keepdims, ddof), np.float16)
    axes = normalize_axes(axis, x.ndim, "var")
    count = math.prod(x.shape[a] for a in axes)
    dof = count - ddof if count > ddof else 0
    if dof == 0:
        warn_wrong_result(f"var/std over {count} values with ddof={ddof}: degrees of freedom "
                          f"<= 0, so the result is nan or inf (as numpy's)")
    centered = x - mean(x, axes, keepdims=True)
    return sum_p.bind(abs_squared(centered), axes=axes, keepdims=bool(keepdims)) / dof


def std(x, axis=None, keepdims=False, ddof=0):
    """np.std: the square root of `var` (its derivative is NaN where the deviations are all
    zero, in forward and reverse mode, as in JAX). Over one value it is a constant, 0 with
    derivative 0 (nan where ddof >= 1): `var` itself, which equals its root there."""
    x = as_tensor(x)
    if x.dtype == np.float16:                   # the root of float32's variance
        return cast(std(cast(x, np.float32), axis, keepdims, ddof), np.float16)
    if math.prod(x.shape[a] for a in normalize_axes(axis, x.ndim, "std")) == 1:
        return var(x, axis, keepdims, ddof)
    return sqrt(var(x, axis, keepdims, ddof))


# -- scans and arg-reductions --------------------------------------------------------------
def _cumsum_shape(x, axis):
    return tuple(x.shape), np.cumsum(np.zeros(1, x.dtype)).dtype     # (int32 -> int64)


def _reversed_cumsum(g, axis: int):
    """Each position's sum of g from there to the end of `axis` (cumsum's cotangent)."""
    return flip(cumsum_p.bind(flip(g, axis), axis=axis), axis)


cumsum_p = core.new_primitive("cumsum", lambda x, axis: np.cumsum(x, axis=axis), _cumsum_shape)
defvjp(cumsum_p, lambda g, ans, x, axis: _reversed_cumsum(g, axis))
defjvp(cumsum_p, lambda t, ans, x, axis: cumsum_p.bind(t, axis=axis))


def cumsum(x, axis=None):
    """np.cumsum: running sums along `axis` (None: of the flattened tensor)."""
    return _along_one_axis(cumsum_p, x, axis)


def _arg_shape(x, axis):
    if x.shape[axis] == 0:
        raise ValueError(f"an arg-reduction of an empty axis (axis {axis} of shape "
                         f"{tuple(x.shape)}) has no answer")
    return tuple(d for k, d in enumerate(x.shape) if k != axis), np.dtype(np.int64)


argmax_p = core.new_primitive("argmax", lambda x, axis: np.argmax(x, axis=axis).astype(np.int64),
                              _arg_shape, differentiable=False)
argmin_p = core.new_primitive("argmin", lambda x, axis: np.argmin(x, axis=axis).astype(np.int64),
                              _arg_shape, differentiable=False)


def _along_one_axis(prim, x, axis):
    """`prim` along one axis of `x`, or of the flattened `x` for axis None, as numpy's."""
    x = as_tensor(x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    return prim.bind(x, axis=axis_index(axis, x.ndim, prim.name))


def argmax(x, axis=None):
    """np.argmax: the (first) position of the maximum along `axis` (None: in the flattened
    tensor), int64; not differentiable."""
    return _along_one_axis(argmax_p, x, axis)


def argmin(x, axis=None):
    """np.argmin: the (first) position of the minimum, as argmax."""
    return _along_one_axis(argmin_p, x, axis)


# -- examples for the generated checks ------------------------------------------------------
def _reduction_examples(rng):
    x = rng.uniform(-1.5, 1.5, (2, 3, 4))
    return [core.Example(x, axes=axes, keepdims=keep) for axes in [(0,), (1, 2), (0, 1, 2), ()]
            for keep in (False, True)] + [core.Example(rng.uniform(-1, 1, ()), axes=(), keepdims=False)]


for _prim in (sum_p, max_p, min_p, prod_p):
    core.defexamples(_prim)(_reduction_examples)


def _along_axis_examples(rng):
    return [core.Example(rng.uniform(-1.5, 1.5, (2, 3, 4)), axis=axis) for axis in (0, 1, 2)]


for _prim in (cumsum_p, argmax_p, argmin_p):
    core.defexamples(_prim)(_along_axis_examples)


# -- all_finite: the guard compiled code checks (structure.py) ------------------------------
def _all_finite_impl(x, axes, nonzero):
    ok = np.isfinite(x) if np.issubdtype(x.dtype, np.inexact) else np.ones(x.shape, bool)
    if nonzero:
        ok &= x != 0
    if axes is None or len(axes) == x.ndim:   # a compiled guard's whole-array check: the
        return ok.all()                         # plain all() is faster than over an axis tuple
    return ok.all(axis=axes)


all_finite_p = core.new_primitive(
    "all_finite", _all_finite_impl,
    lambda x, axes, nonzero: (tuple(d for k, d in enumerate(x.shape) if k not in axes), np.bool_),
    differentiable=False, layout="free")


core.defexamples(all_finite_p)(lambda rng: [
    core.Example(rng.uniform(-1, 1, (2, 3)), axes=(0, 1), nonzero=False),
    core.Example(rng.uniform(-1, 1, (2, 3)), axes=(1,), nonzero=True)])
