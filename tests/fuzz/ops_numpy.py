"""The fuzzer's numpy-composite ops (products, array structure, statistics, scipy.special's
composites), appended to `ops.OPS`.

These functions are composites of primitives that already have entries, so the coverage
test does not ask for them; they are here so their own logic (axes, offsets, shapes,
weights) is fuzzed. Names say the route: `np_<fn>` calls `np.<fn>(tensor)` (numpy's
dispatch), `pj_<fn>` calls `pforjac.<fn>`. References are numpy's / jax.numpy's own
functions (`B.xp.<fn>`), scipy.special's / jax.scipy.special's for the special ones.

Their family is "custom": each op draws its own arguments (`extra["draw"](d, k, s)` returns
(args, kw) or None, on the generator's `Draw` d and value k of shape s), keeping the
generator's discipline: in batch programs axis 0 stays the batch axis (ops that would move
or mix it decline there). Like ops.py, this module imports neither pforjac nor JAX.
"""
from __future__ import annotations

import warnings

import numpy as np

from .ops import OPS, _kinked, _top_gap, op


def _gen():
    from . import generator     # (generator imports ops: lazily)
    return generator


def custom(name, ref, pj, draw, prims=(), **kw):
    """An op drawing its own arguments with `draw(d, k, s)`."""
    return op(name, "custom", ref, pj, prims=prims, extra={"draw": draw}, **kw)


def _np_call(fn_name):
    """pforjac's side through numpy's dispatch: np.<fn>(tensor, ...)."""
    fn = getattr(np, fn_name)
    return lambda pj, *args, **kw: fn(*args, **kw)


def _pj_call(fn_name):
    return lambda pj, *args, **kw: getattr(pj, fn_name)(*args, **kw)


def _ref(fn_name):
    return lambda B, *args, **kw: getattr(B.xp, fn_name)(*args, **kw)


def _route(name):
    """(pforjac call, reference) for `np_<fn>` / `pj_<fn>`."""
    route, fn = name.split("_", 1)
    return (_np_call(fn) if route == "np" else _pj_call(fn)), _ref(fn)


def _free_axes(d, s, least=0):
    """Axes a line may act on: every one, or (batch programs) all but axis 0."""
    return [j for j in range(len(s)) if not (d.batch and j == 0) and s[j] >= least]


def _same_or_const(d, k, shape, lo=-1.5, hi=1.5):
    same = [j for j in d.floats() if d.shape(j) == tuple(shape) and j != k]
    return {"v": d.pick(same)} if same and d.coin(0.4) else d.const(list(shape), lo, hi)


def _n(d, lo=1, hi=3) -> int:
    return int(d.rng.integers(lo, hi + 1))


# -- products -------------------------------------------------------------------------------
def _draw_outer(d, k, s):
    return None if d.batch else ([{"v": k}, d.const([_n(d)])], {})


def _draw_inner(d, k, s):
    if not s:
        return None
    other = [s[-1]] if d.coin() else [_n(d), s[-1]]
    return [{"v": k}, _same_or_const(d, k, other)], {}


def _draw_tensordot(d, k, s):
    axes = _free_axes(d, s)
    if not axes:
        return None
    if d.coin() and axes[-1] == len(s) - 1:
        return [{"v": k}, d.const([s[-1], _n(d)])], {"axes": 1}
    i = d.pick(axes)
    return [{"v": k}, d.const([_n(d), s[i]])], {"axes": [[i], [1]]}


def _draw_kron(d, k, s):
    rank = int(d.rng.integers(1, max(len(s), 1) + 1))
    shape = [_n(d, 1, 2) for _ in range(rank)]
    if d.batch and rank == len(s):
        shape[0] = 1
    return [{"v": k}, d.const(shape)], {}


def _draw_vdot(d, k, s):
    return None if d.batch else ([{"v": k}, _same_or_const(d, k, s)], {})


def _draw_cross(d, k, s):
    axes = [j for j in _free_axes(d, s) if s[j] in (2, 3)]
    if not axes:
        return None
    j = d.pick(axes)
    other = [d.pick([2, 3])] if d.coin() else [s[j]]
    if j == len(s) - 1 and d.coin():
        return [{"v": k}, d.const(other)], {}
    kw = {"axisa": j}
    if not s[j] == other[0] == 2:           # (two 2-vectors: a scalar each, no vector axis)
        kw["axisc"] = j
    return [{"v": k}, d.const(other)], kw


def _cross_ref(B, *args, **kw):
    with warnings.catch_warnings():     # numpy 2 deprecates 2-vectors; they are still numpy's
        warnings.simplefilter("ignore", DeprecationWarning)
        return B.xp.cross(*args, **kw)


for _name, _draw in (("np_outer", _draw_outer), ("pj_inner", _draw_inner),
                     ("np_tensordot", _draw_tensordot), ("pj_kron", _draw_kron),
                     ("np_vdot", _draw_vdot)):
    custom(_name, *reversed(_route(_name)), _draw)
custom("np_cross", _cross_ref, _np_call("cross"), _draw_cross)
custom("pj_cross", _cross_ref, _pj_call("cross"), _draw_cross)


# -- diagonals and triangles -----------------------------------------------------------------
def _draw_diagonal(d, k, s):
    axes = _free_axes(d, s)
    if len(axes) < 2:
        return None
    i, j = (int(a) for a in d.rng.choice(axes, 2, replace=False))
    neg = d.coin(0.3)
    offset = int(d.rng.integers(-1, 2))
    if not -s[i] < offset < s[j]:           # an empty diagonal: a constant line
        return None
    return [{"v": k}], {"offset": offset,
                        "axis1": i - len(s) if neg else i, "axis2": j}


def _draw_diag(d, k, s):
    if d.batch or len(s) not in (1, 2):
        return None
    return [{"v": k}], {"k": int(d.rng.integers(-1, 2))}


def _draw_diagflat(d, k, s):
    return None if d.batch or not s else ([{"v": k}], {"k": int(d.rng.integers(-1, 2))})


def _draw_triangle(d, k, s):
    if len(s) < 2 or (d.batch and len(s) == 2 and d.coin()):
        return None
    return [{"v": k}], {"k": int(d.rng.integers(-1, 2))}


for _name, _draw in (("np_trace", _draw_diagonal), ("pj_trace", _draw_diagonal),
                     ("pj_diagonal", _draw_diagonal), ("np_diagonal", _draw_diagonal),
                     ("pj_diag", _draw_diag), ("np_diagflat", _draw_diagflat),
                     ("np_tril", _draw_triangle), ("pj_triu", _draw_triangle)):
    custom(_name, *reversed(_route(_name)), _draw)


# -- array structure -------------------------------------------------------------------------
def _draw_one(d, k, s):
    return [{"v": k}], {}


def _draw_stack(d, k, s):
    return [[{"v": k}, _same_or_const(d, k, s)]], {}


def _draw_vstack(d, k, s):
    """(1-D values become rows: in batch programs the batch axis would move to axis 1)"""
    return None if d.batch and len(s) < 2 else _draw_stack(d, k, s)


def _draw_array_split(d, k, s):
    axes = _free_axes(d, s, least=2)
    if not axes:
        return None
    a = d.pick(axes)
    n = _n(d, 2, 3)
    return [{"v": k}, n], {"axis": a, "part": int(d.rng.integers(0, n))}


def _draw_repeat(d, k, s):
    axes = _free_axes(d, s)
    if not axes and d.batch:
        return None
    a = None if not d.batch and (not s or d.coin(0.2)) else d.pick(axes)
    n = int(np.prod(s)) if a is None else s[a]
    reps = _n(d, 1, 2) if d.coin() else [int(r) for r in d.rng.integers(0, 3, n)]
    return [{"v": k}, reps], {"axis": a}


def _draw_fliplr(d, k, s):
    return ([{"v": k}], {}) if len(s) >= 2 else None


def _draw_flipud(d, k, s):
    return None if d.batch or not s else ([{"v": k}], {})


def _draw_rot90(d, k, s):
    axes = _free_axes(d, s)
    if len(axes) < 2:
        return None
    i, j = (int(a) for a in d.rng.choice(axes, 2, replace=False))
    return [{"v": k}], {"k": int(d.rng.integers(-1, 4)), "axes": [i, j]}


def _draw_rollaxis(d, k, s):
    axes = _free_axes(d, s)
    if not axes:
        return None
    return [{"v": k}], {"axis": d.pick(axes), "start": int(d.rng.integers(1 if d.batch else 0,
                                                                          len(s) + 1))}


def _draw_append(d, k, s):
    axes = _free_axes(d, s)
    if d.batch and not axes:
        return None
    if not d.batch and d.coin(0.3):
        return [{"v": k}, d.const([_n(d)])], {"axis": None}
    if not axes:
        return None
    a = d.pick(axes)
    other = list(s)
    other[a] = _n(d, 1, 2)
    return [{"v": k}, _same_or_const(d, k, other)], {"axis": a}


def _draw_delete(d, k, s):
    axes = [j for j in _free_axes(d, s) if s[j] >= 2]
    if not axes:
        return None
    a = d.pick(axes)
    obj = int(d.rng.integers(-s[a], s[a])) if d.coin() else \
        sorted({int(i) for i in d.rng.integers(0, s[a], _n(d, 1, 2))})
    return [{"v": k}, obj], {"axis": a}


def _draw_resize(d, k, s):
    if d.batch or not s or not all(s):
        return None
    return [{"v": k}, [_n(d, 1, 3) for _ in range(_n(d, 1, 2))]], {}


def _draw_unstack(d, k, s):
    axes = [j for j in _free_axes(d, s) if s[j]]
    if not axes:
        return None
    a = d.pick(axes)
    return [{"v": k}], {"axis": a, "part": int(d.rng.integers(0, s[a]))}


def _draw_meshgrid(d, k, s):
    if d.batch:
        return None
    return [{"v": k}, d.const([_n(d)])], {"indexing": d.pick(["xy", "ij"])}


def _draw_broadcast(d, k, s):
    keep = int(d.rng.integers(0, len(s) + 1))
    shape = [n if d.coin(0.6) else 1 for n in s[len(s) - keep:]]
    if not d.batch and d.coin(0.3):
        shape = [2] + [1] * len(s)
    return [{"v": k}, d.const(shape)], {}


def _draw_select(d, k, s):
    return [{"v": k}, float(d.pick([0.25, 0.5, 1.0])), float(d.pick([0.0, -1.0, 2.0]))], {}


def _select_kink(B, a, t, default):
    return np.minimum(np.abs(a - t), np.abs(a + t))


for _name, _draw in (("np_atleast_2d", _draw_one), ("pj_atleast_3d", _draw_one),
                     ("np_hstack", _draw_stack), ("pj_vstack", _draw_vstack),
                     ("np_dstack", _draw_stack), ("np_column_stack", _draw_stack),
                     ("np_fliplr", _draw_fliplr), ("pj_flipud", _draw_flipud),
                     ("np_rot90", _draw_rot90), ("pj_rollaxis", _draw_rollaxis),
                     ("np_append", _draw_append)):
    custom(_name, *reversed(_route(_name)), _draw)


def _static(value):
    """A JSON list as jax.numpy wants a static argument (an array of ints, or a tuple)."""
    return np.asarray(value) if isinstance(value, (list, tuple)) else value


for _name, _draw in (("np_repeat", _draw_repeat), ("pj_repeat", _draw_repeat),
                     ("np_delete", _draw_delete)):
    custom(_name, (lambda fn: lambda B, a, obj, **kw: getattr(B.xp, fn)(a, _static(obj), **kw))(
        _name.split("_", 1)[1]), _route(_name)[0], _draw)
for _name in ("pj_resize", "np_resize"):
    custom(_name, lambda B, a, shape: B.xp.resize(a, tuple(shape)), _route(_name)[0],
           _draw_resize)
custom("np_array_split", lambda B, a, n, axis, part: B.xp.array_split(a, n, axis=axis)[part],
       lambda pj, a, n, axis, part: np.array_split(a, n, axis=axis)[part], _draw_array_split)
custom("pj_unstack", lambda B, a, axis, part: B.xp.unstack(a, axis=axis)[part],
       lambda pj, a, axis, part: pj.unstack(a, axis=axis)[part], _draw_unstack)
custom("np_block", lambda B, a, b: B.xp.block([[a, b]]), lambda pj, a, b: np.block([[a, b]]),
       lambda d, k, s: ([{"v": k}, _same_or_const(d, k, s)], {}) if s else None)
custom("pj_meshgrid",               # (numpy flattens its inputs, jax.numpy wants them 1-D)
       lambda B, a, b, indexing: _grid_mix(B.xp.meshgrid(B.xp.ravel(a), b, indexing=indexing)),
       lambda pj, a, b, indexing: _grid_mix(pj.meshgrid(a, b, indexing=indexing)), _draw_meshgrid)
custom("np_broadcast_arrays", lambda B, a, b: _pair_mix(B.xp.broadcast_arrays(a, b)),
       lambda pj, a, b: _pair_mix(np.broadcast_arrays(a, b)), _draw_broadcast)
custom("np_select", _kinked(lambda B, a, t, default: B.xp.select([a > t, a < -t], [a * 2.0, a * a],
                                                                 default), _select_kink),
       lambda pj, a, t, default: np.select([a > t, a < -t], [a * 2.0, a * a], default),
       _draw_select, zeroing=True)


def _grid_mix(grids):
    x, y = grids
    return x * y + x


def _pair_mix(pair):
    a, b = pair
    return a * b + a


# -- statistics ------------------------------------------------------------------------------
def _draw_average(d, k, s):
    axes = _free_axes(d, s)
    if d.batch and not axes or 0 in s:      # (no weights to normalize by)
        return None
    axis = None if not d.batch and (not s or d.coin(0.3)) else d.pick(axes)
    if d.coin(0.3) or axis is None and not s:
        return [{"v": k}, None], {"axis": axis, "keepdims": d.coin()}
    shape = list(s) if axis is None or d.coin(0.3) else [s[axis]]
    return [{"v": k}, d.const(shape, 0.5, 2.0)], {"axis": axis, "keepdims": d.coin()}


def _draw_cov(d, k, s, least_vars=1):
    """Variables along one axis, observations along the other: >= 2 for cov, >= 3 for
    corrcoef (of 2 its correlations are +-1, at its clip)."""
    if d.batch or len(s) not in (1, 2):
        return None
    rowvar = d.coin()
    obs, nvars = (s[-1], s[0] if len(s) == 2 else 1) if rowvar or len(s) == 1 else (s[0], s[1])
    if obs < 1 + least_vars or nvars < least_vars:
        return None
    kw = {"rowvar": rowvar}
    if least_vars == 1:
        kw["ddof"] = d.pick([None, 0, 1] + ([2] if obs > 2 else []))
    return [{"v": k}], kw


def _draw_corrcoef_y(d, k, s):
    size = int(np.prod(s))
    return None if d.batch or size < 3 else ([{"v": k}, d.const([1, size])], {})


def _wide(fn):
    """scipy's multigammaln computes float32/16 in float64: rounded back to the input's."""
    def ref(B, a, **kw):
        out = fn(B, a, **kw)
        return out if B.jax else np.asarray(out).astype(a.dtype)
    return ref


def _float64(fn):
    """numpy's cov and corrcoef compute and return float64 at least, as pforjac's do: their
    programs run in float64 (a float32 program's derivatives would change dtype there)."""
    return fn


custom("np_average", lambda B, a, w, **kw: B.xp.average(a, weights=w, **kw),
       lambda pj, a, w, **kw: np.average(a, weights=w, **kw), _draw_average)
custom("np_cov", _float64(lambda B, a, **kw: B.xp.cov(a, **kw)), _np_call("cov"), _draw_cov)
custom("pj_corrcoef", _float64(lambda B, a, **kw: B.xp.corrcoef(a, **kw)), _pj_call("corrcoef"),
       lambda d, k, s: _draw_cov(d, k, s, least_vars=2))
custom("np_corrcoef_y",             # x's entries as one variable, a constant as the other
       _float64(lambda B, a, y: B.xp.corrcoef(B.xp.reshape(a, (1, -1)), y)),
       lambda pj, a, y: np.corrcoef(pj.reshape(a, (1, -1)), y), _draw_corrcoef_y)
custom("np_ptp", _kinked(lambda B, a, **kw: B.xp.ptp(a, **kw), _top_gap), _np_call("ptp"),
       lambda d, k, s: _gen().family_args(d, _REDUCE_LIKE, k) if s and all(s) else None,
       zeroing=True)
_REDUCE_LIKE = type("ReduceLike", (), {"family": "reduce", "name": "max", "domain": ""})()
for _name in ("np_cov", "pj_corrcoef", "np_corrcoef_y"):
    OPS[_name].extra["float64"] = True          # (see _float64)


# -- scipy.special's composites ----------------------------------------------------------------
def _scipy(B):
    if B.jax:
        import jax.scipy.special as jsp
        return jsp
    import scipy.special as sp
    return sp


def _draw_lse(d, k, s):
    drawn = _gen().family_args(d, _REDUCE_LIKE, k) if s and all(s) else None
    if drawn is None:
        return None
    args, kw = drawn
    if d.coin(0.4):
        shape = [n if d.coin(0.6) else 1 for n in s]
        return args + [d.const(shape, 0.5, 2.0)], kw
    return args + [None], kw


def _draw_softmax(d, k, s):
    """(not over the batch axis of a batch program: a constant input, log_softmax of one
    entry, would make that a row mix with a zero derivative, which the row check flags)"""
    if not s or not all(s):
        return None
    axis = _gen()._axis(d, s, allow_none=not d.batch)
    if d.batch and axis % len(s) == 0:
        return None
    return [{"v": k}], {"axis": axis}


custom("special_logsumexp",
       lambda B, a, b, **kw: _scipy(B).logsumexp(a, b=b, **kw),
       lambda pj, a, b, **kw: pj.scipy.special.logsumexp(a, b=b, **kw), _draw_lse)
for _name in ("softmax", "log_softmax"):
    custom(f"special_{_name}", (lambda n: lambda B, a, axis: getattr(_scipy(B), n)(a, axis=axis))(_name),
           (lambda n: lambda pj, a, axis: getattr(pj.scipy.special, n)(a, axis=axis))(_name),
           _draw_softmax, formula=True)
custom("special_multigammaln",      # a mapped past scipy's edge (dim - 1) / 2 inside the op,
       _wide(lambda B, a, dim: _scipy(B).multigammaln(a * a + 0.5 * dim, dim)),  # -0 and inf too
       lambda pj, a, dim: pj.scipy.special.multigammaln(a * a + 0.5 * dim, dim),
       lambda d, k, s: ([{"v": k}], {"dim": _n(d, 1, 3)}))
