"""Sums of booleans cast to floats in generated numpy code (compiled/count_sums.py): computed
by np.einsum, bit for bit numpy's sums, and only for those (not for other sums, full sums,
or counts too large for the dtype to hold exactly)."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.count_sums import COUNT_LIMIT, count_sums

pnp = pj.numpy
RNG = np.random.default_rng(3)


def _counts(x):
    mask = (x == pnp.max(x, axis=1, keepdims=True)).astype(x.dtype)
    ties = (x >= 0.0).astype(x.dtype)
    return (pnp.sum(mask, axis=1, keepdims=True), pnp.sum(ties, axis=(0, 2)),
            pnp.sum(ties, axis=2), pnp.sum(mask), pnp.sum(mask * x, axis=1))


def _numpy_counts(x):
    mask = (x == np.max(x, axis=1, keepdims=True)).astype(x.dtype)
    ties = (x >= 0.0).astype(x.dtype)
    return (np.sum(mask, axis=1, keepdims=True), np.sum(ties, axis=(0, 2)),
            np.sum(ties, axis=2), np.sum(mask), np.sum(mask * x, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_counts_are_numpys_sums_bit_for_bit(dtype):
    f = pj.function(_counts)
    for shape in [(64, 3, 2), (7, 5, 9), (300, 4, 1)]:
        x = np.round(RNG.normal(size=shape) * 2.0).astype(dtype)   # (ties in every row)
        x[0] = -0.0
        x[1, 0] = np.nan
        source = f.source(x)
        assert source.count("c_einsum(") == 3, source      # (not the full or weighted sums)
        for _ in range(2):                                 # (the general path, then lean)
            for got, want in zip(f(x), _numpy_counts(x)):
                assert np.asarray(got).dtype == want.dtype and np.shape(got) == want.shape
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_per_example_gradients_count_the_max_by_einsum():
    def loss(w, x, y):
        h = x @ w
        top = pnp.max(h)
        return pnp.log(pnp.sum(pnp.exp(h - top))) + top - pnp.sum(h * y)
    w = RNG.normal(size=(4, 3)).astype(np.float32)
    x = RNG.normal(size=(64, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 64)]
    f = pj.function(pj.vmap(pj.grad(loss), in_axes=(None, 0, 0)))
    assert "c_einsum('ab->a'" in f.source(w, x, y)
    eager = pj.vmap(pj.grad(loss), in_axes=(None, 0, 0))(w, x, y)
    assert f(w, x, y).tobytes() == np.asarray(eager).tobytes()


def test_too_many_for_exact_counts_is_left_to_numpy(monkeypatch):
    monkeypatch.setitem(COUNT_LIMIT, np.dtype(np.float64), 5)
    x = RNG.normal(size=(8, 5, 3))
    program = pj.function(_counts).program(x)
    chosen = count_sums(program)             # (axis 2, of 3; not axis 1 of 5, nor (0, 2) of 24)
    assert [program.equations[k].params["axes"] for k in chosen] == [(2,)]
