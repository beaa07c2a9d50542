"""Sparsity rules of numpy's array functions (pforjac.ops.sorting, .scans, .convolution)."""
from __future__ import annotations

import math

import numpy as np

from ..ops.convolution import convolve_p, output_span
from ..ops.scans import cumprod_p
from ..ops.sorting import put_along_axis_add_p, sort_p, take_along_axis_p
from ._sets import kron_relation, scatter_relation
from .pattern_rules import _lines, _moved, _positions, _shape, defsparsity


@defsparsity(sort_p, curvature="piecewise_linear")
def _sort(eqn, ctx):
    """An entry of the sorted line may come from any entry of its line."""
    x, axis = _shape(eqn.inputs[0]), eqn.params["axis"]
    outer, inner = _lines(x, axis)
    return [kron_relation(outer, np.ones((x[axis], x[axis]), bool), inner)]


@defsparsity(cumprod_p, curvature="nonlinear")
def _cumprod(eqn, ctx):
    x, axis = _shape(eqn.inputs[0]), eqn.params["axis"]
    outer, inner = _lines(x, axis)
    return [kron_relation(outer, np.tri(x[axis], dtype=bool), inner)]


@defsparsity(take_along_axis_p, curvature="linear")
def _take_along_axis(eqn, ctx):
    x, axis = _shape(eqn.inputs[0]), eqn.params["axis"]
    indices = ctx.value(1)
    if indices is None:              # indices the input decides: any entry of the line
        outer, inner = _lines(x, axis)
        taken = _shape(eqn.inputs[1])[axis]
        return [kron_relation(outer, np.ones((taken, x[axis]), bool), inner), None]
    return [_moved(eqn, lambda pos: np.take_along_axis(pos, indices, axis)), None]


@defsparsity(put_along_axis_add_p, curvature="linear")
def _put_along_axis_add(eqn, ctx):
    out, axis = _shape(eqn.outputs[0]), eqn.params["axis"]
    indices = ctx.value(1)
    if indices is None:
        outer, inner = _lines(out, axis)
        taken = _shape(eqn.inputs[1])[axis]
        return [kron_relation(outer, np.ones((out[axis], taken), bool), inner), None]
    dst = np.take_along_axis(_positions(out), indices % out[axis], axis)
    return [scatter_relation(dst, math.prod(out)), None]


@defsparsity(convolve_p, curvature="bilinear")
def _convolve(eqn, ctx):
    """Output k (of the full convolution: start + k) reads a[i] and v[start + k - i]."""
    n, m = _shape(eqn.inputs[0])[0], _shape(eqn.inputs[1])[0]
    start, length = output_span(n, m, eqn.params["mode"])
    k = start + np.arange(length)[:, None]
    reads_a = (k - np.arange(n)[None, :] >= 0) & (k - np.arange(n)[None, :] < m)
    reads_v = (k - np.arange(m)[None, :] >= 0) & (k - np.arange(m)[None, :] < n)
    return [kron_relation(1, reads_a, 1) if ctx.live[0] else None,
            kron_relation(1, reads_v, 1) if ctx.live[1] else None]
