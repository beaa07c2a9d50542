"""Every differentiable op against central finite differences, from one table.

A case is `(id, fn, make_inputs)`: `fn` maps tensors to a tensor, `make_inputs(rng)`
returns the float64 arrays to differentiate at (chosen away from kinks and ties).
`check_gradient` compares `GradientTape.gradient`, seeded with a random cotangent
so every output entry counts, to finite differences of `sum(ct * fn(x))`.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pforjac as pj
from pforjac import core

EPS, RTOL = 1e-6, 1e-5


# -- input makers ----------------------------------------------------------------------
def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def positive(*shape, low=0.5, high=2.0):
    return lambda rng: rng.uniform(low, high, shape)


def away_from_zero(*shape):
    """Both signs, magnitude in [0.3, 2): no kink of abs/relu/sign within eps."""
    return lambda rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)


def distinct(*shape):
    """No two entries within 0.1 of each other: no ties for max/min."""
    n = int(np.prod(shape, dtype=np.int64))
    return lambda rng: (rng.permutation(n) * 0.3 + rng.uniform(0.0, 0.1, n) - 0.15 * n).reshape(shape)


def with_zeros(*shape, where):
    """Nonzero entries, and exact zeros at the flat positions `where` (prod at zeros)."""
    def make(rng):
        x = away_from_zero(*shape)(rng)
        x.reshape(-1)[list(where)] = 0.0
        return x
    return make


def inputs(*makers):
    return lambda rng: [m(rng) for m in makers]


def apart(*shape):
    """Two operands of one shape that never tie (for maximum/minimum)."""
    def make(rng):
        x = rng.standard_normal(shape)
        return [x, x + rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 1.0, shape)]
    return make


def _apart_broadcast(rng):
    x = rng.standard_normal((3, 4))
    y = rng.standard_normal((4,))
    x = np.where(np.abs(x - y) < 0.3, y + 0.5, x)
    return [x, y]


# -- the table ------------------------------------------------------------------------
IDX = np.array([2, 0, 2, -1, 1])          # duplicates and a negative index
IDX2 = np.array([[0, -1], [1, 1]])
COND = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, True]])

CASES = [
    # unary elementwise
    ("neg", lambda x: pj.neg(x), inputs(normal(3, 4))),
    ("unary_minus", lambda x: -x, inputs(normal(2, 3))),
    ("exp", pj.exp, inputs(normal(3, 4))),
    ("log", pj.log, inputs(positive(3, 4))),
    ("log1p", pj.log1p, inputs(positive(3, 4, low=-0.5))),
    ("expm1", pj.expm1, inputs(normal(3, 4))),
    ("sin", pj.sin, inputs(normal(3, 4))),
    ("cos", pj.cos, inputs(normal(3, 4))),
    ("tan", pj.tan, inputs(positive(3, 4, low=-1.2, high=1.2))),
    ("tanh", pj.tanh, inputs(normal(3, 4))),
    ("sigmoid", pj.sigmoid, inputs(normal(3, 4))),
    ("sigmoid_large", pj.sigmoid, inputs(positive(5, low=-30.0, high=30.0))),
    ("relu", pj.relu, inputs(away_from_zero(3, 4))),
    ("softplus", pj.softplus, inputs(normal(3, 4))),
    ("floor_ceil_round", lambda x: (pj.floor(3 * x) + pj.ceil(3 * x) + pj.round(3 * x)) * x,
     inputs(positive(3, 4, low=0.05, high=0.28))),       # (3x never near an integer)
    ("arctan2", pj.arctan2, inputs(normal(3, 4), positive(4, low=0.5, high=2.0))),
    ("clip", lambda x: pj.clip(x, -0.5, 0.5), inputs(away_from_zero(3, 4))),
    ("clip_bounds", lambda x, lo: pj.clip(x, lo, None), inputs(normal(3, 4), positive(4, low=0.1, high=0.3))),
    ("var", lambda x: pj.var(x, 1, ddof=1), inputs(normal(3, 4))),
    ("std", lambda x: pj.std(x, (0, 1), keepdims=True), inputs(normal(3, 4))),
    ("logaddexp", pj.logaddexp, inputs(normal(3, 4), normal(4))),
    ("cumsum", lambda x: pj.cumsum(x, 1), inputs(normal(3, 4))),
    ("cumsum_flat", pj.cumsum, inputs(normal(3, 4))),
    ("flip", lambda x: pj.flip(x, 0) * x, inputs(normal(3, 4))),
    ("roll", lambda x: pj.roll(x, (1, -3), (0, 1)) * x, inputs(normal(3, 4))),
    ("sqrt", pj.sqrt, inputs(positive(3, 4))),
    ("square", pj.square, inputs(normal(3, 4))),
    ("abs", pj.abs, inputs(away_from_zero(3, 4))),
    ("sign", lambda x: pj.sign(x) * x, inputs(away_from_zero(3, 4))),
    ("reciprocal", pj.reciprocal, inputs(away_from_zero(3, 4))),
    ("sinh", pj.sinh, inputs(normal(3, 4))),
    ("cosh", pj.cosh, inputs(normal(3, 4))),
    ("arcsin", pj.arcsin, inputs(positive(3, 4, low=-0.9, high=0.9))),
    ("arccos", pj.arccos, inputs(positive(3, 4, low=-0.9, high=0.9))),
    ("arctan", pj.arctan, inputs(normal(3, 4))),
    ("arcsinh", pj.arcsinh, inputs(normal(3, 4))),
    ("arccosh", pj.arccosh, inputs(positive(3, 4, low=1.2, high=3.0))),
    ("arctanh", pj.arctanh, inputs(positive(3, 4, low=-0.9, high=0.9))),
    ("log2", pj.log2, inputs(positive(3, 4))),
    ("log10", pj.log10, inputs(positive(3, 4))),
    ("scalar_input", pj.exp, inputs(normal())),
    # binary elementwise, with broadcasting
    ("add", pj.add, inputs(normal(3, 4), normal(3, 4))),
    ("add_bcast_row", pj.add, inputs(normal(3, 4), normal(4))),
    ("add_bcast_both", pj.add, inputs(normal(3, 1), normal(1, 4))),
    ("add_bcast_scalar", pj.add, inputs(normal(), normal(2, 3))),
    ("add_bcast_rank3", pj.add, inputs(normal(2, 1, 4), normal(3, 1))),
    ("subtract", pj.subtract, inputs(normal(3, 4), normal(3, 4))),
    ("subtract_bcast", pj.subtract, inputs(normal(4), normal(2, 3, 4))),
    ("multiply", pj.multiply, inputs(normal(3, 4), normal(3, 4))),
    ("multiply_bcast", pj.multiply, inputs(normal(2, 1, 4), normal(3, 1))),
    ("multiply_same", lambda x: x * x, inputs(normal(3, 4))),
    ("divide", pj.divide, inputs(normal(3, 4), away_from_zero(3, 4))),
    ("divide_bcast", pj.divide, inputs(normal(3, 1), away_from_zero(4))),
    ("rdiv_python", lambda x: 2.0 / x, inputs(away_from_zero(3))),
    ("power", pj.power, inputs(positive(3, 4), normal(3, 4))),
    ("power_bcast", pj.power, inputs(positive(3, 1), normal(4))),
    ("power_const_exp", lambda x: x ** 3.0, inputs(normal(3, 4))),
    ("power_int_exp_neg_base", lambda x: pj.power(x, 2), inputs(away_from_zero(3, 4))),
    ("power_const_base", lambda y: 2.0 ** y, inputs(normal(3, 4))),
    ("maximum", pj.maximum, apart(3, 4)),
    ("maximum_bcast", pj.maximum, _apart_broadcast),
    ("minimum", pj.minimum, apart(3, 4)),
    ("minimum_bcast", pj.minimum, _apart_broadcast),
    ("where", lambda x, y: pj.where(pj.constant(COND), x, y), inputs(normal(3, 4), normal(3, 4))),
    ("where_bcast", lambda x, y: pj.where(pj.constant(COND), x, y), inputs(normal(4), normal(3, 1))),
    ("where_scalar_branch", lambda x: pj.where(pj.constant(COND), x, 0.0), inputs(normal(3, 4))),
    ("cast_64_32_64", lambda x: pj.cast(pj.cast(x, np.float32), np.float64) * 1.0,
     inputs(positive(3, 4))),
    # linear algebra
    ("matmul", pj.matmul, inputs(normal(3, 4), normal(4, 5))),
    ("matmul_op", lambda x, y: x @ y, inputs(normal(2, 3), normal(3, 2))),
    ("matmul_vec_mat", pj.matmul, inputs(normal(4), normal(4, 5))),
    ("matmul_mat_vec", pj.matmul, inputs(normal(3, 4), normal(4))),
    ("matmul_vec_vec", pj.matmul, inputs(normal(4), normal(4))),
    ("matmul_batched", pj.matmul, inputs(normal(2, 3, 4), normal(2, 4, 5))),
    ("matmul_batch_bcast", pj.matmul, inputs(normal(2, 1, 3, 4), normal(5, 4, 2))),
    ("matmul_batch_mat", pj.matmul, inputs(normal(2, 3, 4), normal(4, 5))),
    ("matmul_vec_batch", pj.matmul, inputs(normal(4), normal(2, 4, 3))),
    ("matmul_batch_vec", pj.matmul, inputs(normal(2, 3, 4), normal(4))),
    ("einsum_matmul", lambda x, y: pj.einsum("ij,jk->ik", x, y), inputs(normal(3, 4), normal(4, 5))),
    ("einsum_implicit", lambda x, y: pj.einsum("ij,jk", x, y), inputs(normal(3, 4), normal(4, 2))),
    ("einsum_batched", lambda x, y: pj.einsum("bij,bjk->bik", x, y),
     inputs(normal(2, 3, 4), normal(2, 4, 5))),
    ("einsum_dot", lambda x, y: pj.einsum("i,i->", x, y), inputs(normal(5), normal(5))),
    ("einsum_outer", lambda x, y: pj.einsum("i,j->ij", x, y), inputs(normal(3), normal(4))),
    ("einsum_sum_axis", lambda x: pj.einsum("ij->j", x), inputs(normal(3, 4))),
    ("einsum_transpose", lambda x: pj.einsum("ijk->kji", x), inputs(normal(2, 3, 4))),
    ("einsum_mat_vec", lambda x, y: pj.einsum("ij,j->i", x, y), inputs(normal(3, 4), normal(4))),
    ("einsum_summed_only_in_one", lambda x, y: pj.einsum("ij,k->ik", x, y),
     inputs(normal(3, 4), normal(2))),
    ("einsum_three", lambda x, y, z: pj.einsum("ij,jk,kl->il", x, y, z),
     inputs(normal(2, 3), normal(3, 4), normal(4, 2))),
    # reductions
    ("sum_all", lambda x: pj.sum(x), inputs(normal(3, 4))),
    ("sum_axis0", lambda x: pj.sum(x, axis=0), inputs(normal(3, 4))),
    ("sum_axis_neg", lambda x: pj.sum(x, axis=-1, keepdims=True), inputs(normal(2, 3, 4))),
    ("sum_axes_tuple", lambda x: pj.sum(x, axis=(0, 2)), inputs(normal(2, 3, 4))),
    ("sum_tuple_keepdims", lambda x: pj.sum(x, axis=(0, 2), keepdims=True), inputs(normal(2, 3, 4))),
    ("mean_all", lambda x: pj.mean(x), inputs(normal(3, 4))),
    ("mean_axis", lambda x: pj.mean(x, axis=1, keepdims=True), inputs(normal(3, 4))),
    ("mean_tuple", lambda x: pj.mean(x, axis=(1, 2)), inputs(normal(2, 3, 4))),
    ("max_all", lambda x: pj.max(x), inputs(distinct(3, 4))),
    ("max_axis", lambda x: pj.max(x, axis=1), inputs(distinct(3, 4))),
    ("max_tuple_keepdims", lambda x: pj.max(x, axis=(0, 2), keepdims=True), inputs(distinct(2, 3, 4))),
    ("min_all", lambda x: pj.min(x), inputs(distinct(3, 4))),
    ("min_axis_neg", lambda x: pj.min(x, axis=-2, keepdims=True), inputs(distinct(2, 3, 4))),
    ("prod_all", lambda x: pj.prod(x), inputs(positive(2, 3))),
    ("prod_axis", lambda x: pj.prod(x, axis=1), inputs(away_from_zero(3, 4))),
    ("prod_one_zero_per_row", lambda x: pj.prod(x, axis=1), inputs(with_zeros(3, 4, where=(1, 4, 10)))),
    ("prod_zeros_mixed", lambda x: pj.prod(x, axis=0), inputs(with_zeros(3, 4, where=(0, 4, 9)))),
    ("prod_all_two_zeros", lambda x: pj.prod(x), inputs(with_zeros(2, 3, where=(1, 5)))),
    ("prod_tuple_keepdims", lambda x: pj.prod(x, axis=(0, 1), keepdims=True), inputs(positive(2, 2, 3))),
    ("logsumexp_all", lambda x: pj.logsumexp(x), inputs(normal(3, 4))),
    ("logsumexp_axis", lambda x: pj.logsumexp(x, axis=1), inputs(normal(3, 4))),
    ("logsumexp_tuple_keepdims", lambda x: pj.logsumexp(x, axis=(0, 2), keepdims=True),
     inputs(normal(2, 3, 4))),
    ("logsumexp_large", lambda x: pj.logsumexp(x, axis=0), inputs(positive(3, 2, low=500.0, high=501.0))),
    ("softmax", lambda x: pj.softmax(x), inputs(normal(3, 4))),
    ("softmax_axis0", lambda x: pj.softmax(x, axis=0), inputs(normal(3, 4))),
    ("log_softmax", lambda x: pj.log_softmax(x), inputs(normal(3, 4))),
    ("log_softmax_axis1", lambda x: pj.log_softmax(x, axis=1), inputs(normal(2, 3, 4))),
    # shape
    ("reshape", lambda x: pj.reshape(x, (4, 3)), inputs(normal(3, 4))),
    ("reshape_minus1", lambda x: pj.reshape(x, (2, -1)), inputs(normal(3, 4))),
    ("reshape_method", lambda x: x.reshape(2, 6), inputs(normal(3, 4))),
    ("transpose", lambda x: pj.transpose(x), inputs(normal(2, 3, 4))),
    ("transpose_perm", lambda x: pj.transpose(x, (1, 2, 0)), inputs(normal(2, 3, 4))),
    ("transpose_T", lambda x: x.T, inputs(normal(3, 4))),
    ("swapaxes", lambda x: pj.swapaxes(x, 0, -1), inputs(normal(2, 3, 4))),
    ("expand_dims", lambda x: pj.expand_dims(x, 1), inputs(normal(3, 4))),
    ("expand_dims_neg", lambda x: pj.expand_dims(x, -1), inputs(normal(3, 4))),
    ("squeeze", lambda x: pj.squeeze(x), inputs(normal(3, 1, 4, 1))),
    ("squeeze_axis", lambda x: pj.squeeze(x, axis=1), inputs(normal(3, 1, 4, 1))),
    ("broadcast_to", lambda x: pj.broadcast_to(x, (2, 3, 4)), inputs(normal(3, 1))),
    ("concat", lambda x, y: pj.concat([x, y], axis=0), inputs(normal(2, 3), normal(4, 3))),
    ("concat_axis_neg", lambda x, y, z: pj.concat([x, y, z], axis=-1),
     inputs(normal(2, 3), normal(2, 1), normal(2, 2))),
    ("concat_same_twice", lambda x: pj.concat([x, x], axis=1), inputs(normal(2, 3))),
    ("stack", lambda x, y: pj.stack([x, y]), inputs(normal(2, 3), normal(2, 3))),
    ("stack_axis", lambda x, y: pj.stack([x, y], axis=-1), inputs(normal(2, 3), normal(2, 3))),
    ("split_equal", lambda x: pj.split(x, 2, axis=1)[1] * 2.0 + pj.split(x, 2, axis=1)[0],
     inputs(normal(3, 4))),
    ("split_one_used", lambda x: pj.split(x, [1, 3], axis=0)[1], inputs(normal(4, 2))),
    ("split_all_used", lambda x: pj.concat(pj.split(x, [1, 3], axis=0)[::-1], axis=0),
     inputs(normal(4, 2))),
    ("tile", lambda x: pj.tile(x, (2, 3)), inputs(normal(2, 3))),
    ("tile_more_reps", lambda x: pj.tile(x, (2, 1, 2)), inputs(normal(3, 2))),
    ("tile_int", lambda x: pj.tile(x, 3), inputs(normal(2, 3))),
    ("pad", lambda x: pj.pad(x, ((1, 2), (0, 1))), inputs(normal(2, 3))),
    ("pad_value", lambda x: pj.pad(x, 1, constant_values=3.0), inputs(normal(2, 3))),
    # indexing
    ("slice_basic", lambda x: x[1:, 0], inputs(normal(3, 4))),
    ("slice_int", lambda x: x[1], inputs(normal(3, 4))),
    ("slice_neg_int", lambda x: x[-1, -2], inputs(normal(3, 4))),
    ("slice_neg_step", lambda x: x[::-1], inputs(normal(3, 4))),
    ("slice_neg_step_2", lambda x: x[:, 3:0:-2], inputs(normal(3, 5))),
    ("slice_newaxis", lambda x: x[None, ...], inputs(normal(3, 4))),
    ("slice_ellipsis", lambda x: x[..., 1:3], inputs(normal(2, 3, 4))),
    ("slice_mixed", lambda x: x[0, None, ::2, ..., -1], inputs(normal(2, 3, 4, 5))),
    ("slice_step", lambda x: x[::2, 1::2], inputs(normal(5, 4))),
    ("gather", lambda x: pj.gather(x, pj.constant(IDX)), inputs(normal(4, 3))),
    ("gather_axis1", lambda x: pj.gather(x, pj.constant(IDX), axis=1), inputs(normal(2, 3))),
    ("gather_2d_index", lambda x: pj.gather(x, pj.constant(IDX2), axis=-1), inputs(normal(2, 3))),
    ("getitem_index_tensor", lambda x: x[pj.constant(IDX)], inputs(normal(4, 3))),
    ("getitem_index_array_axis1", lambda x: x[:, IDX], inputs(normal(2, 3))),
    ("take_method", lambda x: x.take(pj.constant(IDX2)), inputs(normal(3))),
    # composites
    ("mlp", lambda x, w, b: pj.tanh(x @ w + b).sum(axis=1), inputs(normal(3, 4), normal(4, 5), normal(5))),
    ("cross_entropy", lambda z: -pj.sum(pj.log_softmax(z) * pj.constant(np.eye(4)[[0, 2, 3]])),
     inputs(normal(3, 4))),
]

# Cases whose forward rounds to float32: coarser steps, float32-sized tolerance.
TOLERANCE = {"cast_64_32_64": dict(eps=1e-2, rtol=1e-3)}

CASE_IDS = [c[0] for c in CASES]
assert len(set(CASE_IDS)) == len(CASE_IDS)


def _rng(name: str):
    return np.random.default_rng(sum(map(ord, name)) * 7919)


def _value_of(fn, arrays) -> np.ndarray:
    return np.asarray(fn(*[pj.constant(a) for a in arrays]).numpy(), dtype=np.float64)


def numeric_vjp(fn, arrays, ct, eps=EPS) -> list[np.ndarray]:
    """Central differences of `sum(ct * fn(*arrays))` w.r.t. each array."""
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
            plus[k][i] += eps
            minus[k][i] -= eps
            g[i] = np.sum(ct * (_value_of(fn, plus) - _value_of(fn, minus))) / (2 * eps)
        grads.append(g)
    return grads


def tape_vjp(fn, arrays, ct):
    xs = [pj.constant(a) for a in arrays]
    with pj.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    grads = tape.gradient(y, xs, output_gradients=pj.constant(ct))
    return y, grads


@pytest.mark.parametrize("name, fn, make", CASES, ids=CASE_IDS)
def test_gradient_matches_finite_differences(name, fn, make):
    rng = _rng(name)
    arrays = make(rng)
    y = fn(*[pj.constant(a) for a in arrays])
    assert y.dtype == np.float64, f"{name}: float64 inputs gave {y.dtype}"
    ct = rng.standard_normal(y.shape)
    y, grads = tape_vjp(fn, arrays, ct)
    tol = TOLERANCE.get(name, {})
    rtol = tol.get("rtol", RTOL)
    expected = numeric_vjp(fn, arrays, ct, tol.get("eps", EPS))
    for k, (g, e, a) in enumerate(zip(grads, expected, arrays)):
        assert g is not None, f"{name}: no gradient for input {k}"
        assert g.shape == a.shape and g.dtype == np.float64, f"{name}: input {k}: {g.shape} {g.dtype}"
        np.testing.assert_allclose(g.numpy(), e, rtol=rtol, atol=rtol / 100 * max(1.0, np.abs(e).max()),
                                   err_msg=f"{name}: gradient of input {k}")


# -- forward mode: jvp rules, run over the recorded ops, agree with the vjp ---------------
def forward_tangents(tape, xs, tangents):
    """Pushes `tangents` of `xs` through the tape's recorded ops with the jvp rules."""
    tan = {id(x): t for x, t in zip(xs, tangents)}
    for entry in tape._entries:
        ts = [tan.get(id(a)) for a in entry.inputs]
        if all(t is None for t in ts):
            continue
        out = core.jvp_rules[entry.prim](ts, entry.outputs if entry.prim.multiple_results
                                         else entry.outputs[0], *entry.inputs, **entry.params)
        outs = out if entry.prim.multiple_results else [out]
        for o, t in zip(entry.outputs, outs):
            if t is not None:
                assert tuple(t.shape) == tuple(o.shape), f"{entry.prim}: jvp shape {t.shape} vs {o.shape}"
                tan[id(o)] = t
    return tan


@pytest.mark.parametrize("name, fn, make", CASES, ids=CASE_IDS)
def test_jvp_rules_match_finite_differences(name, fn, make):
    rng = _rng(name)
    arrays = make(rng)
    xs = [pj.constant(a) for a in arrays]
    with pj.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    directions = [rng.standard_normal(a.shape) for a in arrays]
    tan = forward_tangents(tape, xs, [pj.constant(d) for d in directions])
    got = tan.get(id(y))
    got = np.zeros(y.shape) if got is None else got.numpy()
    tol = TOLERANCE.get(name, {})
    eps, rtol = tol.get("eps", EPS), tol.get("rtol", RTOL)
    plus = _value_of(fn, [a + eps * d for a, d in zip(arrays, directions)])
    minus = _value_of(fn, [a - eps * d for a, d in zip(arrays, directions)])
    expected = (plus - minus) / (2 * eps)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol / 100 * max(1.0, np.abs(expected).max()),
                               err_msg=f"{name}: jvp")


def test_every_differentiable_primitive_has_rules():
    """Fails when a differentiable primitive lacks a vjp/jvp rule (tests/test_rules.py checks
    them all against finite differences, on each primitive's own examples)."""
    missing = [p.name for p in core.primitives.values()
               if p.differentiable and (p not in core.vjp_rules or p not in core.jvp_rules)]
    assert not missing, f"differentiable primitives without vjp or jvp rules: {missing}"


# -- float32 <-> float64 casts: the gradient comes back in the source's dtype ------------------
@pytest.mark.parametrize("src, dst", [(np.float32, np.float64), (np.float64, np.float32)])
def test_cast_gradient_dtype_and_value(src, dst):
    x = pj.constant(np.array([0.5, -1.5, 2.0], dtype=src))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.cast(x, dst) * pj.constant(np.array([1.0, 2.0, 3.0], dtype=dst))
    assert y.dtype == np.dtype(dst)
    g = tape.gradient(y, x)
    assert g.dtype == np.dtype(src)
    np.testing.assert_allclose(g.numpy(), [1.0, 2.0, 3.0])


def test_cast_to_int_has_no_gradient():
    x = pj.constant(np.array([0.5, 1.5]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.cast(pj.cast(x, np.int32), np.float64) + x
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.0, 1.0])


def test_stop_gradient_blocks_the_gradient():
    x = pj.constant(np.array([1.5, -2.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * pj.stop_gradient(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1.5, -2.0])


@pytest.mark.parametrize("spec,shapes", [
    ("ii->i", [(3, 3)]),                      # diagonal
    ("ii", [(3, 3)]),                         # trace
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),      # repeated axis beside a contraction
    ("ij,jj->i", [(3, 3), (3, 3)]),           # one operand repeats, the other does not
    ("iii->", [(2, 2, 2)]),                   # an axis three times
])
def test_einsum_with_a_repeated_axis_differentiates(spec, shapes):
    """Gradients and jvps to second order against central differences; the pfor jacobian
    equals the while-loop's (the cotangent is embedded on the diagonal it was read from)."""
    from pforjac.testing import check_grads
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(s) for s in shapes]
    f = (lambda *a: pj.einsum(spec, *a) * 1.5) if spec != "ij,jj->i" else \
        (lambda a, b: pj.einsum(spec, a, b * a))
    check_grads(f, xs, order=2)
    x = pj.constant(xs[0])
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x, *[pj.constant(v) for v in xs[1:]])
    np.testing.assert_allclose(tape.jacobian(y, x).numpy(),
                               tape.jacobian(y, x, experimental_use_pfor=False).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_max_splits_gradient_among_ties():
    x = pj.constant(np.array([1.0, 3.0, 3.0, 2.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.max(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.0, 0.5, 0.5, 0.0])


# -- second derivatives through nested tapes -------------------------------------------------
SECOND_ORDER = ["exp", "tanh", "sigmoid", "multiply", "multiply_bcast", "matmul", "matmul_vec_vec",
                "softmax", "logsumexp_axis", "power", "power_const_exp", "divide", "divide_bcast",
                "log", "sqrt", "sin", "softplus", "arcsin", "arctan", "arcsinh", "arccosh", "arctanh", "cosh", "einsum_three", "prod_all", "prod_one_zero_per_row",
                "prod_all_two_zeros", "prod_zeros_mixed", "max_axis", "mlp", "cross_entropy", "gather", "slice_mixed", "pad", "tile", "concat", "where_bcast"]
_BY_NAME = {c[0]: c for c in CASES}


def _first_gradient(fn, xs, ct):
    with pj.GradientTape() as inner:
        inner.watch(xs)
        y = fn(*xs)
    return inner.gradient(y, xs, output_gradients=ct)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_second_derivative_matches_finite_differences(name):
    _, fn, make = _BY_NAME[name]
    rng = _rng(name + "2")
    arrays = make(rng)
    ct = pj.constant(rng.standard_normal(fn(*[pj.constant(a) for a in arrays]).shape))
    cts2 = [rng.standard_normal(a.shape) for a in arrays]

    xs = [pj.constant(a) for a in arrays]
    with pj.GradientTape() as outer:
        outer.watch(xs)
        with pj.GradientTape() as inner:
            inner.watch(xs)
            y = fn(*xs)
        grads = inner.gradient(y, xs, output_gradients=ct)
    hess = outer.gradient(grads, xs, output_gradients=[pj.constant(c) for c in cts2],
                          unconnected_gradients="zero")

    def phi(*ts):  # sum_k <cts2_k, d/dx_k <ct, fn(x)>>
        gs = _first_gradient(fn, list(ts), ct)
        total = 0.0
        for g, c in zip(gs, cts2):
            total = total + (0.0 if g is None else np.sum(g.numpy() * c))
        return pj.constant(np.float64(total))

    expected = numeric_vjp(phi, arrays, np.float64(1.0))
    for k, (h, e) in enumerate(zip(hess, expected)):
        np.testing.assert_allclose(h.numpy(), e, rtol=1e-4, atol=1e-6 * max(1.0, np.abs(e).max()),
                                   err_msg=f"{name}: second derivative, input {k}")


def test_third_derivative_of_power():
    x = pj.constant(np.array([0.7, 1.3]))
    with pj.GradientTape() as t3:
        t3.watch(x)
        with pj.GradientTape() as t2:
            t2.watch(x)
            with pj.GradientTape() as t1:
                t1.watch(x)
                y = x ** 4.0
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    np.testing.assert_allclose(d1.numpy(), 4 * x.numpy() ** 3)
    np.testing.assert_allclose(d2.numpy(), 12 * x.numpy() ** 2)
    np.testing.assert_allclose(d3.numpy(), 24 * x.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_and_softplus_tails_are_accurate_and_quiet(dtype):
    """Far into both tails: no overflow warnings, values to a few ulps of the float64 (or
    long double) formula, gradients finite."""
    limit = 100.0 if dtype == np.float32 else 745.0
    xs = np.concatenate([np.linspace(-limit, limit, 4001), [0.0, -1e-8, 1e-8]]).astype(dtype)
    ref_x = xs.astype(np.longdouble)
    ref_sig = 1 / (1 + np.exp(-ref_x))
    ref_sp = np.logaddexp(ref_x, 0)
    x = pj.constant(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            s, sp = pj.sigmoid(x), pj.softplus(x)
        ds, dsp = tape.gradient(s, x).numpy(), tape.gradient(sp, x).numpy()
    tiny = np.finfo(dtype).tiny
    s = s.numpy()
    normal = ref_sig > tiny
    np.testing.assert_allclose(s[normal], ref_sig[normal].astype(dtype), rtol=4 * np.finfo(dtype).eps)
    assert np.all((s[~normal] >= 0) & (s[~normal] <= tiny))
    np.testing.assert_allclose(sp.numpy(), ref_sp.astype(dtype), rtol=4 * np.finfo(dtype).eps,
                               atol=tiny)
    assert np.isfinite(ds).all() and np.isfinite(dsp).all()


# -- prod: exact derivatives of every order at zeros ------------------------------------------
def _prod_derivative(x: np.ndarray, idx: tuple) -> float:
    """d^k prod(x) / dx_i dx_j ...: the product of the entries not in `idx` (0 if an index
    repeats: prod is linear in each entry)."""
    if len(set(idx)) < len(idx):
        return 0.0
    return float(np.prod(np.delete(x, list(idx))))


@pytest.mark.parametrize("zeros", [(), (2,), (0, 3), (1, 2, 4)])
@pytest.mark.parametrize("use_pfor", [True, False])
def test_prod_derivatives_up_to_third_order_are_exact_at_zeros(zeros, use_pfor):
    """With 0 to 3 zeros in the slice: gradient, Hessian and third derivatives against
    the closed form (the product of the other entries), through pfor and the while-loop."""
    x0 = np.array([1.5, -2.0, 0.5, 3.0, -1.25])
    x0[list(zeros)] = 0.0
    n = x0.size
    x = pj.constant(x0)
    with pj.GradientTape(persistent=True) as t3:
        t3.watch(x)
        with pj.GradientTape(persistent=True) as t2:
            t2.watch(x)
            with pj.GradientTape() as t1:
                t1.watch(x)
                y = pj.prod(x)
            g = t1.gradient(y, x)
        h = t2.jacobian(g, x, experimental_use_pfor=use_pfor)
    third = t3.jacobian(h, x, experimental_use_pfor=use_pfor).numpy()
    np.testing.assert_array_equal(g.numpy(), [_prod_derivative(x0, (i,)) for i in range(n)])
    np.testing.assert_array_equal(h.numpy(), [[_prod_derivative(x0, (i, j)) for j in range(n)]
                                              for i in range(n)])
    expected = np.array([[[_prod_derivative(x0, (i, j, k)) for k in range(n)] for j in range(n)]
                         for i in range(n)])
    np.testing.assert_array_equal(third, expected)


@pytest.mark.parametrize("axis,keepdims", [(1, False), (0, True), ((0, 2), False), (None, True)])
def test_prod_hessian_over_axes_with_several_zeros(axis, keepdims):
    """Reductions over some axes (the tree runs over the moved, flattened axes) with two
    zeros in some slices: the Hessian of sum(ct * prod) against brute force."""
    rng = np.random.default_rng(7)
    x0 = rng.uniform(0.5, 1.5, (3, 4, 2)) * rng.choice([-1.0, 1.0], (3, 4, 2))
    x0[0, 1, 0] = x0[0, 2, 0] = x0[2, 3, 1] = x0[1, 0, 0] = 0.0
    x = pj.constant(x0)
    y0 = np.prod(x0, axis=axis, keepdims=keepdims)
    ct = rng.standard_normal(np.shape(y0))
    with pj.GradientTape() as outer:
        outer.watch(x)
        with pj.GradientTape() as inner:
            inner.watch(x)
            y = pj.sum(pj.constant(ct) * pj.prod(x, axis=axis, keepdims=keepdims))
        g = inner.gradient(y, x)
    hess = outer.jacobian(g, x).numpy().reshape(x0.size, x0.size)

    def f(v):
        return float(np.sum(ct * np.prod(v.reshape(x0.shape), axis=axis, keepdims=keepdims)))
    flat, expected = x0.ravel(), np.zeros((x0.size, x0.size))
    for i in range(x0.size):            # multilinear: a mixed difference of step 1 is exact
        for j in range(x0.size):
            if i == j:
                continue
            e_i, e_j = np.eye(x0.size)[i], np.eye(x0.size)[j]
            expected[i, j] = f(flat + e_i + e_j) - f(flat + e_i) - f(flat + e_j) + f(flat)
    np.testing.assert_allclose(hess, expected, rtol=1e-12, atol=1e-12)


@st.composite
def _prods_with_zeros(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    size = int(np.prod(shape))
    axes = draw(st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), min_size=1,
                                              max_size=len(shape), unique=True).map(tuple)))
    keepdims = draw(st.booleans())
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    zeros = draw(st.lists(st.integers(0, size - 1), max_size=min(size, 4), unique=True))
    x.reshape(-1)[zeros] = 0.0
    ct = rng.standard_normal(np.shape(np.prod(x, axis=axes, keepdims=keepdims)))
    return x, axes, keepdims, ct


@given(_prods_with_zeros())
@settings(max_examples={"ci": 60, "long": 2000}.get(settings.get_current_profile_name(),
                                                   settings.default.max_examples))
def test_prod_hessian_with_random_zeros_every_mode(case):
    """Random shapes, axes and zero patterns: the Hessian of sum(ct * prod(x, axes)) by
    reverse-over-reverse with pfor and with the while-loop, and by forward-over-reverse,
    all equal the exact mixed differences of the multilinear product."""
    x0, axes, keepdims, ct = case
    n = x0.size

    def f(v):
        return pj.sum(pj.constant(ct) * pj.prod(v, axis=axes, keepdims=keepdims))

    def f_np(v):
        return float(np.sum(ct * np.prod(v.reshape(x0.shape), axis=axes, keepdims=keepdims)))
    flat, eye, expected = x0.ravel(), np.eye(n), np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                expected[i, j] = f_np(flat + eye[i] + eye[j]) - f_np(flat + eye[i]) \
                    - f_np(flat + eye[j]) + f_np(flat)
    x = pj.constant(x0)
    with pj.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with pj.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    for use_pfor in (True, False):
        got = outer.jacobian(g, x, experimental_use_pfor=use_pfor,     # one entry: unconnected
                             unconnected_gradients=pj.UnconnectedGradients.ZERO)
        got = got.numpy().reshape(n, n)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    fwd = np.asarray(pj.hessian(f, x0, vectorize=True, outer_jacobian_strategy="forward-mode"))
    np.testing.assert_allclose(fwd.reshape(n, n), expected, rtol=1e-12, atol=1e-12)


# -- derivatives at points where a rule's formula meets 0 * inf -------------------------------
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")   # 0.0 ** -1: inf, as numpy
@pytest.mark.parametrize("k", [0, 1, 2])
def test_integer_powers_have_finite_derivatives_at_zero(k):
    """The (k+1)-th derivative of x**k at 0 is 0 (JAX's integer_pow, PyTorch): y x**(y-1)
    must not multiply y = 0 by 0**-1 = inf."""
    x = pj.constant(np.array([0.0, 1.5]))
    h = pj.hessian(lambda t: pj.sum(t ** float(k)), x, vectorize=True).numpy()
    np.testing.assert_array_equal(h, np.diag([k * (k - 1) * v ** max(k - 2, 0) if k >= 2 else 0.0
                                              for v in (0.0, 1.5)]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.sum(x ** float(k))
    np.testing.assert_array_equal(g.gradient(y, x).numpy(), [0.0 if k != 1 else 1.0,
                                                           k * 1.5 ** (k - 1) if k else 0.0])


def test_prod_forward_mode_with_an_overflowed_product_of_others():
    """Entry 2's product of the others overflows; the tangent along e0 does not involve
    it, so forward mode gives reverse mode's finite entries (it gave NaN)."""
    x = pj.constant(np.array([1e200, 1e200, 1.0]))
    with np.errstate(over="ignore"):
        fwd = pj.jacobian(pj.prod, x, vectorize=True, strategy="forward-mode").numpy()
        rev = pj.jacobian(pj.prod, x, vectorize=True).numpy()
    np.testing.assert_array_equal(fwd, [1e200, 1e200, np.inf])
    np.testing.assert_array_equal(fwd, rev)


def test_prod_hessian_with_overflowed_partial_products():
    """Row 0 of the Hessian at [1e200, 1e200, 1, 1]: x1 x3 and x1 x2 are finite although
    the product tree's partial products overflow; the seed's zero cotangents meet those
    infinities (they gave NaN). Exact zeros are handled too (closed form at a zero)."""
    x = np.array([1e200, 1e200, 1.0, 1.0])
    with np.errstate(over="ignore", invalid="ignore"):
        h = pj.hessian(pj.prod, pj.constant(x), vectorize=True).numpy()
    np.testing.assert_array_equal(h[0], [0.0, 1.0, 1e200, 1e200])
    z = np.array([0.5, 2.0, 0.0, 3.0])
    h = pj.hessian(pj.prod, pj.constant(z), vectorize=True).numpy()
    want = np.array([[np.prod(np.delete(z, [i, j])) if i != j else 0.0 for j in range(4)]
                     for i in range(4)])
    np.testing.assert_array_equal(h, want)
