"""Jacobians of small models against central finite differences (float64), pfor and while-loop."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

RNG = np.random.default_rng(7)
W1, B1 = pj.constant(RNG.standard_normal((3, 5))), pj.constant(RNG.standard_normal(5))
W2, B2 = pj.constant(RNG.standard_normal((5, 2))), pj.constant(RNG.standard_normal(2))
LABELS = pj.constant(np.eye(3)[[0, 2, 1, 2]])
GAMMA, BETA = pj.constant(RNG.uniform(0.5, 1.5, 5)), pj.constant(RNG.standard_normal(5))
WQ, WK, WV = (pj.constant(RNG.standard_normal((4, 4)) / 2) for _ in range(3))


def mlp(x):
    return pj.matmul(pj.tanh(pj.matmul(x, W1) + B1), W2) + B2


def softmax_cross_entropy(logits):
    return -(LABELS * pj.log_softmax(logits, axis=-1)).sum(axis=-1)


def layer_norm(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / pj.sqrt(var + 1e-5) * GAMMA + BETA


def attention(x):
    q, k, v = pj.matmul(x, WQ), pj.matmul(x, WK), pj.matmul(x, WV)
    scores = pj.matmul(q, pj.swapaxes(k, -1, -2)) / np.sqrt(4.0)
    return pj.matmul(pj.softmax(scores, axis=-1), v)


def exp_reducer(x):
    return x.exp().sum(axis=1)


# (name, function, source shape, does row b of the output depend only on row b of x?)
MODELS = [
    ("mlp", mlp, (4, 3), True),
    ("softmax_cross_entropy", softmax_cross_entropy, (4, 3), False),
    ("layer_norm", layer_norm, (3, 5), True),
    ("attention", attention, (3, 4), False),
    ("batched_attention", attention, (2, 3, 4), True),
    ("exp_reducer", exp_reducer, (3, 4), False),
]


def central_differences(fn, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    y_shape = fn(pj.constant(x)).shape
    jac = np.zeros(tuple(y_shape) + x.shape)
    for idx in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        jac[(Ellipsis,) + idx] = (fn(pj.constant(up)).numpy() - fn(pj.constant(down)).numpy()) / (2 * eps)
    return jac


MODES = [pytest.param(True, id="pfor"), pytest.param(False, id="while_loop")]


@pytest.mark.parametrize("use_pfor", MODES)
@pytest.mark.parametrize("name,fn,shape,per_row", MODELS, ids=[m[0] for m in MODELS])
def test_jacobian_matches_finite_differences(name, fn, shape, per_row, use_pfor):
    x_np = np.random.default_rng(len(name)).standard_normal(shape)
    x = pj.constant(x_np)
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = fn(x)
    jac = g.jacobian(y, x, experimental_use_pfor=use_pfor)
    want = central_differences(fn, x_np)
    assert jac.shape == want.shape and jac.dtype == np.float64
    np.testing.assert_allclose(jac.numpy(), want, rtol=1e-6, atol=1e-7)
    if per_row and y.ndim >= 2:
        batch = g.batch_jacobian(y, x, experimental_use_pfor=use_pfor).numpy()
        blocks = np.stack([want[b][(Ellipsis, b) + (slice(None),) * (x.ndim - 1)]
                           for b in range(shape[0])])
        np.testing.assert_allclose(batch, blocks, rtol=1e-6, atol=1e-7)


def test_exp_reducer_closed_form():
    x_np = np.random.default_rng(0).standard_normal((3, 4))
    x = pj.constant(x_np)
    with pj.GradientTape() as g:
        g.watch(x)
        y = exp_reducer(x)
    want = np.zeros((3, 3, 4))
    for b in range(3):
        want[b, b] = np.exp(x_np[b])
    np.testing.assert_allclose(g.jacobian(y, x).numpy(), want, rtol=1e-14)
