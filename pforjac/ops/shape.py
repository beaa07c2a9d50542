"""Shape primitives: reshape, transpose, broadcast_to, concat, split, tile, pad.

expand_dims, squeeze, stack and swapaxes are composites of these.
"""
from __future__ import annotations

import numpy as np

from .. import core
from ..core import defjvp, defjvp_all, defvjp, defvjp_all
from ..tensor import as_operands, as_tensor, unchanged
from .broadcasting import broadcast_to, broadcast_to_p, reshape, reshape_p, sum as _sum  # noqa: F401
from .elementwise import zeros_like
from .indexing import getitem
from ._family import axis_index, int_arg, int_tuple, normalize_axes
from ._kernels import concat_rows, rows_concatenable

__all__ = ["transpose", "concat", "concatenate", "split", "tile", "pad",
           "expand_dims", "squeeze", "stack", "swapaxes", "moveaxis", "flatten", "flip", "roll"]


# -- transpose ---------------------------------------------------------------------
def _transpose_shape(x, perm):
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"perm {perm} is not a permutation of the {x.ndim} axes")
    return tuple(x.shape[p] for p in perm), x.dtype


def _transpose_impl(x, perm):
    """np.transpose, through the array's own method where it has one (as `_reshape_impl`)."""
    return x.transpose(perm) if isinstance(x, (np.ndarray, np.generic)) else np.transpose(x, perm)


transpose_p = core.new_primitive("transpose", _transpose_impl,
                                 _transpose_shape, layout="following", may_alias=True)
transpose_p.plain_forward = lambda x, c_ordered, perm: (
    "x.T" if tuple(perm) == (1, 0) else f"x.transpose({tuple(perm)!r})")
defvjp(transpose_p, lambda g, ans, x, perm: transpose(g, tuple(np.argsort(perm))))
defjvp(transpose_p, lambda t, ans, x, perm: transpose(t, perm))


def transpose(x, axes=None):
    """Permutes axes (reverses them when `axes` is None), as `np.transpose`."""
    x = as_tensor(x)
    if axes is None:
        perm = tuple(reversed(range(x.ndim)))
    else:
        perm = tuple(axis_index(a, x.ndim, "transpose") for a in axes)
        if sorted(perm) != list(range(x.ndim)):
            raise ValueError(f"transpose: perm={tuple(axes)} is not a permutation of the "
                             f"{x.ndim} axes of a tensor of shape {tuple(x.shape)}")
    if perm == tuple(range(x.ndim)) and unchanged(x):
        return x
    return transpose_p.bind(x, perm=perm)


def swapaxes(x, a: int, b: int):
    x = as_tensor(x)
    a, b = axis_index(a, x.ndim, "swapaxes"), axis_index(b, x.ndim, "swapaxes")
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def moveaxis(x, source, destination):
    """Moves axes `source` (an int or a sequence, as numpy's) to `destination`."""
    x = as_tensor(x)
    sources, targets = (tuple(axis_index(a, x.ndim, f"moveaxis ({what})")
                              for a in int_tuple(axes, f"moveaxis: {what}"))
                        for axes, what in ((source, "source"), (destination, "destination")))
    if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
        raise ValueError(f"moveaxis: repeated axis in source {source!r} or destination "
                         f"{destination!r}")
    if len(sources) != len(targets):
        raise ValueError(f"moveaxis: source {source!r} and destination {destination!r} must "
                         f"have the same number of elements")
    perm = [k for k in range(x.ndim) if k not in sources]
    for target, axis in sorted(zip(targets, sources)):
        perm.insert(target, axis)
    return transpose(x, perm)


# -- concat and split --------------------------------------------------------------------
def _concat_shape(*xs, axis):
    first = xs[0].shape
    for x in xs[1:]:
        if len(x.shape) != len(first) or any(a != b for k, (a, b) in enumerate(zip(x.shape, first))
                                             if k != axis):
            raise ValueError(f"all inputs must match except along axis {axis}: "
                             + ", ".join(str(x.shape) for x in xs))
    shape = list(first)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return tuple(shape), np.result_type(*(x.dtype for x in xs))


def _concat_impl(*xs, axis):
    """np.concatenate; where the rows along the last axis are short, `concat_rows`, which
    moves them as one item each (the same bytes and layout)."""
    if rows_concatenable(xs, axis):
        return concat_rows(xs, axis, _concat_shape(*xs, axis=axis)[0])
    return np.concatenate(xs, axis=axis)


concat_p = core.new_primitive("concat", _concat_impl, _concat_shape, layout="following")


def _concat_vjp(g, ans, *xs, axis):
    bounds = np.cumsum([x.shape[axis] for x in xs])[:-1]
    return split(g, [int(b) for b in bounds], axis=axis)


defvjp_all(concat_p, _concat_vjp)
defjvp_all(concat_p, lambda ts, ans, *xs, axis: concat(
    [t if t is not None else _zeros_like(x) for t, x in zip(ts, xs)], axis=axis))


def _zeros_like(x):
    return zeros_like(x)


def concat(values, axis: int = 0):
    """Joins tensors along an existing axis (TensorFlow's name for `np.concatenate`)."""
    values = as_operands(list(values))
    if not values:
        raise ValueError("concat needs at least one tensor")
    axis = axis_index(axis, values[0].ndim, "concat")
    if len(values) == 1 and unchanged(values[0]):
        return values[0]
    return concat_p.bind(*values, axis=axis)


concatenate = concat


def _split_shape(x, indices, axis):
    bounds = [0, *indices, x.shape[axis]]
    if any(b < a for a, b in zip(bounds, bounds[1:])):
        raise ValueError(f"split indices {indices} are not increasing within axis size {x.shape[axis]}")
    shapes = []
    for a, b in zip(bounds, bounds[1:]):
        s = list(x.shape)
        s[axis] = b - a
        shapes.append((tuple(s), x.dtype))
    return shapes


split_p = core.new_primitive("split", lambda x, indices, axis: np.split(x, indices, axis=axis),
                             _split_shape, multiple_results=True, may_alias=True)
defvjp(split_p, lambda g, ans, x, indices, axis: concat(list(g), axis=axis))
defjvp(split_p, lambda t, ans, x, indices, axis: split(t, indices, axis=axis))


def split(x, indices_or_sections, axis: int = 0) -> list:
    """Splits `x` into equal sections (an int) or at the given indices, as `np.split`."""
    x = as_tensor(x)
    axis = axis_index(axis, x.ndim, "split")
    n = x.shape[axis]
    if not isinstance(indices_or_sections, (list, tuple, np.ndarray)):
        k = int_arg(indices_or_sections, "split: sections")
        if k <= 0 or n % k:
            raise ValueError(f"split: axis {axis} of size {n} can't be split into {k} equal sections")
        indices = tuple(range(n // k, n, n // k)) if n else (0,) * (k - 1)
    else:      # slice bounds, as np.split's: negative ones count from the end, clipped to n
        bounds = [int_arg(i, "split: index") for i in indices_or_sections]
        indices = tuple(min(max(i + n if i < 0 else i, 0), n) for i in bounds)
        if any(b < a for a, b in zip(indices, indices[1:])):
            raise ValueError(f"split: indices {tuple(indices_or_sections)} (as positions "
                             f"{indices} on axis {axis} of size {n}) must not decrease")
    return split_p.bind(x, indices=indices, axis=axis)


# -- tile and pad ------------------------------------------------------------------------
tile_p = core.new_primitive("tile", lambda x, reps: np.tile(x, reps),
                            lambda x, reps: (tuple(d * r for d, r in zip(x.shape, reps)), x.dtype))


def _tile_vjp(g, ans, x, reps):
    interleaved = [d for pair in zip(reps, x.shape) for d in pair]
    return _sum(reshape(g, interleaved), axis=tuple(range(0, 2 * x.ndim, 2)))


defvjp(tile_p, _tile_vjp)
defjvp(tile_p, lambda t, ans, x, reps: tile(t, reps))


def tile(x, reps):
    """Repeats `x` `reps` times along each axis, as `np.tile`."""
    x = as_tensor(x)
    reps = int_tuple(reps, "tile: reps")
    if len(reps) > x.ndim:
        x = reshape(x, (1,) * (len(reps) - x.ndim) + tuple(x.shape))
    reps = (1,) * (x.ndim - len(reps)) + reps
    return tile_p.bind(x, reps=reps)


def _pad_impl(x, pad_width, value):
    return np.pad(x, pad_width, mode="constant", constant_values=value)


def _pad_shape(x, pad_width, value):
    if len(pad_width) != x.ndim or any(a < 0 or b < 0 for a, b in pad_width):
        raise ValueError(f"pad_width {pad_width} must hold one non-negative (before, after) pair "
                         f"per axis of a rank-{x.ndim} tensor")
    return tuple(d + a + b for d, (a, b) in zip(x.shape, pad_width)), x.dtype


pad_p = core.new_primitive("pad", _pad_impl, _pad_shape)
defvjp(pad_p, lambda g, ans, x, pad_width, value: g[tuple(
    slice(a, a + d) for (a, _), d in zip(pad_width, x.shape))])
defjvp(pad_p, lambda t, ans, x, pad_width, value: pad(t, pad_width, 0.0))


def pad(x, pad_width, constant_values=0.0):
    """Pads with a constant; `pad_width` is `((before, after), ...)` per axis, as `np.pad`."""
    x = as_tensor(x)
    widths = np.asarray(pad_width)        # not cast to int first: 1.5 must not become 1
    if widths.size and widths.dtype.kind not in "iu":
        raise TypeError(f"pad: pad_width must be integers, got {pad_width!r:.60}")
    widths = tuple((int(a), int(b)) for a, b in np.broadcast_to(widths, (x.ndim, 2)))
    values = np.asarray(constant_values)
    if values.ndim == 0 or np.all(values == values.flat[0]):
        return pad_p.bind(x, pad_width=widths, value=float(values.flat[0]))
    try:                        # numpy's (before, after) per axis, ((b0, a0), (b1, a1), ...)
        values = np.broadcast_to(values, (x.ndim, 2))
    except ValueError:
        raise ValueError(f"pad: constant_values {constant_values!r:.60} does not broadcast to "
                         f"one (before, after) pair per axis of a {x.ndim}-D tensor") from None
    for axis, (width, value) in enumerate(zip(widths, values)):    # axis by axis, as numpy
        for side in (0, 1):                                         # (later axes fill corners)
            if width[side]:
                one = tuple(width if k == axis else (0, 0) for k in range(x.ndim))
                one = tuple((w[0], 0) if side == 0 else (0, w[1]) for w in one)
                x = pad_p.bind(x, pad_width=one, value=float(value[side]))
    return x


# -- composites -------------------------------------------------------------------------
def expand_dims(x, axis):
    """np.expand_dims: new axes of length 1 at `axis` (an int or a tuple, positions in the
    result)."""
    x = as_tensor(x)
    axes = normalize_axes(axis, x.ndim + len(int_tuple(axis, "expand_dims: axis")),
                          "expand_dims")
    rest = iter(x.shape)
    return reshape(x, tuple(1 if k in axes else next(rest) for k in range(x.ndim + len(axes))))


def squeeze(x, axis=None):
    x = as_tensor(x)
    if axis is None:
        axes = tuple(k for k, d in enumerate(x.shape) if d == 1)
    else:
        axes = normalize_axes(axis, x.ndim, "squeeze")
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} of shape {x.shape} has size {x.shape[a]}, not 1")
    return reshape(x, tuple(d for k, d in enumerate(x.shape) if k not in axes))


def stack(values, axis: int = 0):
    values = as_operands(list(values))
    if not values:
        raise ValueError("stack needs at least one tensor")
    axis = axis_index(axis, values[0].ndim + 1, "stack")   # the new axis: rank + 1 places
    return concat([expand_dims(v, axis) for v in values], axis=axis)


def flatten(x):
    return reshape(x, (-1,))


def flip(x, axis=None):
    """np.flip: `x` reversed along `axis` (an int, a tuple, or None for every axis)."""
    x = as_tensor(x)
    axes = normalize_axes(axis, x.ndim, "flip")
    return getitem(x, tuple(slice(None, None, -1) if k in axes else slice(None)
                            for k in range(x.ndim)))


def roll(x, shift, axis=None):
    """np.roll: elements shifted by `shift` along `axis` (ints or tuples of ints; None:
    along the flattened tensor, shape kept), those past the end coming back at the start."""
    x = as_tensor(x)
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, 0), x.shape)
    shifts, axes = int_tuple(shift, "roll: shift"), int_tuple(axis, "roll: axis")
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: shift {shift!r} and axis {axis!r} must have the same length")
    for s, a in zip(shifts, axes):
        a = axis_index(a, x.ndim, "roll")
        n = x.shape[a]
        s = s % n if n else 0
        if s:
            head = (slice(None),) * a
            x = concat([getitem(x, head + (slice(n - s, None),)),
                        getitem(x, head + (slice(0, n - s),))], axis=a)
    return x


# -- examples for the generated checks ------------------------------------------------------
def _x(rng, *shape):
    return rng.uniform(-1.5, 1.5, shape)


core.defexamples(reshape_p)(lambda rng: [
    core.Example(_x(rng, 2, 3, 4), shape=(6, 4)), core.Example(_x(rng, 2, 3, 4), shape=(4, 1, 6)),
    core.Example(_x(rng), shape=(1, 1)), core.Example(_x(rng, 1), shape=())])
core.defexamples(transpose_p)(lambda rng: [
    core.Example(_x(rng, 2, 3, 4), perm=(2, 0, 1)), core.Example(_x(rng, 2, 3), perm=(1, 0))])
core.defexamples(broadcast_to_p)(lambda rng: [
    core.Example(_x(rng, 3), shape=(2, 3)), core.Example(_x(rng, 2, 1), shape=(2, 4)),
    core.Example(_x(rng), shape=(2, 2)), core.Example(_x(rng, 1, 3), shape=(4, 2, 3))])
core.defexamples(concat_p)(lambda rng: [
    core.Example(_x(rng, 2, 3), _x(rng, 4, 3), axis=0),
    core.Example(_x(rng, 2, 3), _x(rng, 2, 1), _x(rng, 2, 2), axis=1)])
core.defexamples(split_p)(lambda rng: [
    core.Example(_x(rng, 6, 4), indices=(2, 5), axis=0),
    core.Example(_x(rng, 6, 4), indices=(2, 2), axis=1)])
core.defexamples(tile_p)(lambda rng: [
    core.Example(_x(rng, 2, 3), reps=(2, 1)), core.Example(_x(rng, 3), reps=(2,))])
core.defexamples(pad_p)(lambda rng: [
    core.Example(_x(rng, 2, 3), pad_width=((1, 0), (2, 1)), value=0.0),
    core.Example(_x(rng, 3), pad_width=((0, 2),), value=1.5)])
