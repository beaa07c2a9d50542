"""The per-example-gradient workloads of benchmarks/per_example.py, in plain numpy (imported
by the pforjac side and by the JAX and torch workers, so all three see the same data).

Two tanh MLPs with a softmax cross-entropy loss per example and a dict of parameters:
small 4-32-8-3 (451 parameters, batch 64) and medium 14-48-36-4 (2,632 parameters, batch
256); each in float32 and float64."""
from __future__ import annotations

import numpy as np

SIZES = {"small": ((4, 32, 8, 3), 64), "medium": ((14, 48, 36, 4), 256)}
DTYPES = ("float32", "float64")
CONFIGS = [(size, dtype) for size in SIZES for dtype in DTYPES]


def n_params(layers) -> int:
    return sum(i * o + o for i, o in zip(layers[:-1], layers[1:]))


def make(size: str, dtype: str, seed: int = 0):
    """(params: dict of arrays, X (batch, d), Y one-hot (batch, c)) in `dtype`."""
    layers, batch = SIZES[size]
    rng = np.random.default_rng(seed)
    params = {}
    for k, (i, o) in enumerate(zip(layers[:-1], layers[1:])):
        params[f"w{k}"] = (rng.standard_normal((i, o)) / np.sqrt(i)).astype(dtype)
        params[f"b{k}"] = (0.1 * rng.standard_normal(o)).astype(dtype)
    X = rng.standard_normal((batch, layers[0])).astype(dtype)
    Y = np.eye(layers[-1], dtype=dtype)[rng.integers(0, layers[-1], batch)]
    return params, X, Y


def make_loss(xp):
    """The loss of one example, for the array namespace `xp` (numpy, jax.numpy, torch)."""
    def loss(params, x, y):
        n_layers = len(params) // 2
        h = x
        for k in range(n_layers):
            h = h @ params[f"w{k}"] + params[f"b{k}"]
            if k < n_layers - 1:
                h = xp.tanh(h)
        top = xp.max(h)
        log_norm = xp.log(xp.sum(xp.exp(h - top))) + top
        return log_norm - xp.sum(h * y)
    return loss
