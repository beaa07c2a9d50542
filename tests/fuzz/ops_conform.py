"""The fuzzer's numpy-conformance ops (family "conform", `--ops conform`), appended to
`ops.OPS`: Python floats and lists in float64 maths (polyval, interp, convolve, diff,
ediff1d, float_power, solve and np.add with list operands), vector norms over several axes,
and ndarray methods with numpy's meanings (take from the flattened array, N-D dot,
Fortran-order flatten), pad with (before, after) values. Their references are numpy's and
jax.numpy's own functions on the same Python numbers; pforjac's side goes through numpy's
dispatch. Python floats here are ones float32 rounds (1/3), so a rounding shows.
Like ops.py, this module imports neither pforjac nor JAX.
"""
from __future__ import annotations

import numpy as np

from .ops import _kinked, op

THIRD = 1.0 / 3.0
KNOTS, VALUES = [-1.1, 0.1, THIRD, 1.3], [0.7, THIRD, -0.2, 0.4]
MATRIX = [[2.0, 0.1, 0.0], [THIRD, 1.7, 0.2], [0.0, 0.1, 1.1]]


def conform(name, ref, pj, draw, float64=False, **kw):
    """An op drawing its own arguments; `float64`: its program runs in float64 (numpy reads
    the op's lists, or computes it, in float64: the finding is about float64 maths, and a
    float32 program's derivatives would change dtype mid-program)."""
    return op(name, "conform", ref, pj, prims=(), extra={"draw": draw, "float64": float64}, **kw)


def _free_axes(d, s):
    return [j for j in range(len(s)) if not (d.batch and j == 0)]


def _draw_any(d, k, s):
    return [{"v": k}], {}


def _draw_vector(d, k, s):
    return None if d.batch or len(s) != 1 or not s[0] else ([{"v": k}], {})


def _draw_last_axis(d, k, s):
    return None if not s or (d.batch and len(s) < 2) else ([{"v": k}], {})


def _draw_no_batch(d, k, s):
    return None if d.batch or not s or 0 in s else ([{"v": k}], {})


def _draw_three(d, k, s):
    return None if d.batch or s != (3,) and (len(s) != 2 or s[0] != 3) else ([{"v": k}], {})


def _draw_norm_axes(d, k, s):
    axes = _free_axes(d, s)
    if len(axes) < 2 or 0 in s:
        return None
    chosen = sorted(int(a) for a in d.rng.choice(axes, int(d.rng.integers(2, len(axes) + 1)),
                                                 replace=False))
    return [{"v": k}], {"ord": d.pick([2, 3, 1]), "axis": tuple(chosen),
                        "keepdims": bool(d.coin(0.3))}


def _norm_kinks(B, a, ord, axis, keepdims):
    return np.abs(np.asarray(a)) if ord == 1 else \
        np.linalg.norm(np.reshape(np.moveaxis(np.asarray(a), axis, range(-len(axis), 0)),
                                  np.shape(a)[:len(np.shape(a)) - len(axis)] + (-1,)), axis=-1)


def _draw_dot(d, k, s):
    if d.batch or len(s) < 1 or 0 in s:
        return None
    other = [_n(d), s[-1], _n(d)] if d.coin() else [s[-1], _n(d)]
    return [{"v": k}, d.const(other)], {}


def _n(d) -> int:
    return int(d.rng.integers(1, 4))


conform("np_polyval_lists", lambda B, a: B.xp.polyval(B.xp.asarray([0.1, THIRD, -0.3]), a),
        lambda pj, a: np.polyval([0.1, THIRD, -0.3], a), _draw_any, float64=True)
conform("np_polyval_x_float", lambda B, a: B.xp.polyval(a, THIRD),
        lambda pj, a: np.polyval(a, THIRD), _draw_vector, float64=True)
conform("np_interp_lists",
        _kinked(lambda B, a: B.xp.interp(a, B.xp.asarray(KNOTS), B.xp.asarray(VALUES)),
                lambda B, a: np.min(np.abs(np.subtract.outer(np.asarray(a), KNOTS)), initial=1.0)),
        lambda pj, a: np.interp(a, KNOTS, VALUES), _draw_any, float64=True)
conform("np_convolve_list", lambda B, a: B.xp.convolve(a, B.xp.asarray([0.1, THIRD])),
        lambda pj, a: np.convolve(a, [0.1, THIRD]), _draw_vector, float64=True)
conform("np_diff_floats",
        lambda B, a: B.xp.diff(a, prepend=THIRD, append=B.xp.full(a.shape[:-1] + (1,), 0.1)),
        lambda pj, a: np.diff(a, prepend=THIRD, append=np.full(np.shape(a)[:-1] + (1,), 0.1)),
        _draw_last_axis, float64=True)
conform("np_ediff1d_floats", lambda B, a: B.xp.ediff1d(a, to_begin=THIRD, to_end=[0.1]),
        lambda pj, a: np.ediff1d(a, to_begin=THIRD, to_end=[0.1]), _draw_no_batch)
conform("np_float_power_float", lambda B, a: B.xp.float_power(a * a + 0.5, THIRD),
        lambda pj, a: np.float_power(a * a + 0.5, THIRD), _draw_any, float64=True)
conform("np_solve_list", lambda B, a: B.xp.linalg.solve(B.xp.asarray(MATRIX), a),
        lambda pj, a: np.linalg.solve(MATRIX, a), _draw_three, float64=True)
conform("np_add_list", lambda B, a: B.xp.add(a, B.xp.asarray([THIRD])),
        lambda pj, a: np.add(a, [THIRD]), _draw_any, float64=True)
conform("np_vector_norm_axes",
        _kinked(lambda B, a, ord, axis, keepdims: B.xp.linalg.vector_norm(
            a, ord=ord, axis=axis, keepdims=keepdims), _norm_kinks),
        lambda pj, a, ord, axis, keepdims: np.linalg.vector_norm(a, ord=ord, axis=axis,
                                                                 keepdims=keepdims),
        _draw_norm_axes)
conform("method_take_flat", lambda B, a: B.xp.take(a, B.xp.asarray([-1, 0])),
        lambda pj, a: a.take([-1, 0]), _draw_no_batch)
conform("method_dot", lambda B, a, b: B.xp.dot(a, b), lambda pj, a, b: a.dot(b), _draw_dot)
conform("method_flatten_f", lambda B, a: B.xp.ravel(a, order="F"),
        lambda pj, a: a.flatten("F"), _draw_no_batch)
conform("np_pad_pairs", lambda B, a: B.xp.pad(a, 1, constant_values=(THIRD, 2.0)),
        lambda pj, a: np.pad(a, 1, constant_values=(THIRD, 2.0)), _draw_no_batch)


def _complex_parts(xp, a):
    """A real function of `a` through complex values: conj, imag, real, angle, abs (pforjac's
    conj and imag primitives, their rules in JAX's convention)."""
    z = a * (1.0 + 0.5j) + 0.25j
    return xp.real(xp.conj(z) * z * (0.5 - 1j)) + xp.imag(z * z) - xp.angle(z + 2.5) \
        + xp.abs(z) / 3


op("complex_parts", "conform", lambda B, a: _complex_parts(B.xp, a),
   lambda pj, a: _complex_parts(np, a), prims=("conj", "imag"),
   extra={"draw": _draw_any, "float64": True})      # (float16 has no complex type)
