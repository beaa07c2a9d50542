"""pfor and vectorized_map: the driver, its arguments, its outputs and its fallbacks (the
converters themselves are checked in test_converters.py and test_rules.py)."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.pfor import converters

from helpers import c_ordered, no_fallback, pfor_and_loop_jacobians


# -- the driver ----------------------------------------------------------------------------
def test_pfor_zero_iterations():
    x = pj.constant(np.ones((0, 3)))
    out = pj.pfor(lambda i: pj.exp(x[i]).sum(), 0)
    assert out.shape == (0,)


def test_pfor_unstacked_and_nested_outputs():
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    out = pj.pfor(lambda i: {"row": x[i] * 2.0, "const": x.sum(), "i": i}, 3)
    np.testing.assert_array_equal(out["row"].numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(out["const"].numpy(), [15.0] * 3)
    np.testing.assert_array_equal(out["i"].numpy(), [0, 1, 2])


def test_pfor_takes_a_concrete_integer_scalar_as_iters():
    # As TensorFlow's pfor takes tf.shape(x)[0]; a float or negative count is still refused.
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    for iters in (pj.constant(3), np.array(3), np.int64(3)):
        np.testing.assert_array_equal(pj.pfor(lambda i: x[i] * 2.0, iters).numpy(), 2 * x.numpy())
    for bad in (pj.constant(2.0), pj.constant([3]), -1):
        with pytest.raises(ValueError, match="iters must be a non-negative int"):
            pj.pfor(lambda i: x[i], bad)


def test_slice_bounds_from_the_loop_index_are_refused_with_the_way_out():
    x = pj.constant(np.arange(12.0).reshape(4, 3))
    for body in (lambda i: x[i:i + 2], lambda i: x[:, :i]):
        with pytest.raises(TypeError, match=r"slice bound that depends on a loop index.*gather"):
            pj.pfor(body, 2)
    np.testing.assert_array_equal(pj.pfor(lambda i: pj.gather(x, i + np.arange(2)), 2).numpy(),
                                  np.stack([x.numpy()[0:2], x.numpy()[1:3]]))
    np.testing.assert_array_equal(x[pj.constant(1):pj.constant(3)].numpy(), x.numpy()[1:3])
    with pytest.raises(TypeError, match="slice bounds must be integers"):
        x[1.5:]


def test_pfor_and_vectorized_map_results_are_c_ordered():
    x = pj.constant(np.random.default_rng(24).normal(size=(3, 4)))
    body = lambda i: pj.transpose(pj.reshape(x[i], (2, 2))) * 2.0         # noqa: E731
    for k in (None, 2):
        assert c_ordered(pj.pfor(body, 3, parallel_iterations=k))
    assert c_ordered(pj.vectorized_map(lambda r: pj.transpose(pj.reshape(r, (2, 2))), x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert c_ordered(pj.pfor(body, 3))


# -- negative axes -------------------------------------------------------------------------
_NEGATIVE_AXES = {
    "sum": lambda x: pj.sum(x, axis=-2), "max": lambda x: pj.max(x, axis=-3),
    "prod": lambda x: pj.prod(x, axis=-2), "logsumexp": lambda x: pj.logsumexp(x, axis=-2),
    "softmax": lambda x: pj.softmax(x, axis=-2), "concat": lambda x: pj.concat([x, x * x], axis=-2),
    "stack": lambda x: pj.stack([x, x * 2], axis=-2), "split": lambda x: pj.split(x, 3, axis=-2)[1],
    "gather": lambda x: pj.gather(x, np.array([2, 0]), axis=-2),
    "scatter_add": lambda x: pj.scatter_add(x, np.array([1, 0, 1]), axis=-2, size=2),
    "scatter_add_first": lambda x: pj.scatter_add(x, np.array([2, 0, 1]), axis=-3, size=3),
    "moveaxis": lambda x: pj.moveaxis(x, -1, -3), "expand_dims": lambda x: pj.expand_dims(x, -2)}


@no_fallback
@pytest.mark.parametrize("name", sorted(_NEGATIVE_AXES))
def test_negative_axes_vectorize_as_their_positive_twins(name):
    # scatter_add kept a negative axis, which pfor's converter shifted as if positive: a
    # wrong jacobian where the batch and feature sizes agree
    f = _NEGATIVE_AXES[name]
    x_np = np.random.default_rng(3).uniform(0.3, 0.9, (3, 3, 2))
    by_pfor, by_loop = pfor_and_loop_jacobians(f, x_np)
    np.testing.assert_allclose(by_pfor, by_loop, rtol=1e-12, atol=1e-14)
    h, fd = 1e-6, np.zeros(by_pfor.shape)
    for idx in np.ndindex(x_np.shape):
        e = np.zeros_like(x_np)
        e[idx] = h
        fd[(Ellipsis,) + idx] = (f(pj.constant(x_np + e)).numpy() - f(pj.constant(x_np - e)).numpy()) / (2 * h)
    np.testing.assert_allclose(by_pfor, fd, rtol=1e-6, atol=1e-8)


# -- fallbacks -----------------------------------------------------------------------------
def test_op_without_converter_runs_per_iteration(monkeypatch):
    monkeypatch.setattr(sys.modules["pforjac.pfor"], "family_converters", [])   # sin has no other
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    with pytest.warns(RuntimeWarning):
        out = pj.pfor(lambda i: pj.sin(x[i]) + 1.0, 3)
    np.testing.assert_allclose(out.numpy(), np.sin(x.numpy()) + 1.0)


def test_failing_converter_falls_back_or_raises(monkeypatch):
    def broken(n, args, stacked, **params):
        raise ValueError("no")
    monkeypatch.setitem(converters, core.primitives["cos"], broken)
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    with pytest.raises(pj.ConversionError, match="cos"):
        pj.pfor(lambda i: pj.cos(x[i]), 3, fallback_to_while_loop=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pj.pfor(lambda i: pj.cos(x[i]), 3)
    np.testing.assert_allclose(out.numpy(), np.cos(x.numpy()))
