"""Logistic regression in plain numpy: the loss, its gradient (pj.grad) and the per-example
gradients (GradientTape.batch_jacobian), as differential-privacy clipping needs them.

Run: python examples/logistic_regression.py
"""
import numpy as np

import pforjac as pj


def per_example_loss(w, X, y):
    """The logistic loss of each example; `w` is (d,) or, one row per example, (n, d)."""
    logits = np.sum(X * w, axis=-1)
    return np.logaddexp(0.0, logits) - y * logits


def loss(w, X, y):
    return np.mean(per_example_loss(w, X, y))


def per_example_gradients(w, X, y):
    """(n, d): the gradient of each example's loss. The weights are repeated once per example
    (a batch of copies), so that row i of the loss depends on row i of the copies only:
    batch_jacobian's assumption, which it checks."""
    copies = pj.constant(np.broadcast_to(w, X.shape).copy())
    with pj.GradientTape() as tape:
        tape.watch(copies)
        losses = per_example_loss(copies, X, y)[:, None]
    return tape.batch_jacobian(losses, copies)[:, 0, :]


def data(n=64, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w_true = rng.standard_normal(d)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ w_true))).astype(float)
    return X, y


def main(steps=100, learning_rate=0.5):
    X, y = data()
    w = np.zeros(X.shape[1])
    for _ in range(steps):
        w = w - learning_rate * pj.grad(loss)(w, X, y)       # numpy in, numpy out
    grads = per_example_gradients(w, X, y).numpy()
    norms = np.linalg.norm(grads, axis=1)
    print(f"loss {loss(w, X, y):.4f}; per-example gradient norms: median {np.median(norms):.3f}, "
          f"max {norms.max():.3f}; their mean is the full gradient: "
          f"{np.allclose(grads.mean(0), pj.grad(loss)(w, X, y))}")
    return {"w": w, "X": X, "y": y, "per_example": grads}


if __name__ == "__main__":
    main()
