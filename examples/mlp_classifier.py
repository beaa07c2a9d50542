"""A small MLP classifier in plain numpy, trained with pj.value_and_grad over a dict of
parameters, and its per-example gradients by vmap(grad), as in JAX.

Run: python examples/mlp_classifier.py
"""
import numpy as np

import pforjac as pj


def init(sizes=(2, 16, 3), seed=0):
    rng = np.random.default_rng(seed)
    return {f"W{k}": rng.standard_normal((m, n)) / np.sqrt(m) for k, (m, n) in
            enumerate(zip(sizes[:-1], sizes[1:]))} | \
        {f"b{k}": np.zeros(n) for k, n in enumerate(sizes[1:])}


def logits(params, X):
    """The logits of one example (X: (d,)) or of a batch (X: (n, d))."""
    h = np.tanh(X @ params["W0"] + params["b0"])
    return h @ params["W1"] + params["b1"]


def per_example_loss(params, X, labels):
    """Cross-entropy of each example (a scalar for one example)."""
    z = logits(params, X)
    top = np.max(z, axis=-1)
    log_norm = np.log(np.sum(np.exp(z - top[..., None]), axis=-1)) + top
    return log_norm - np.sum(z * labels, axis=-1)


def loss(params, X, labels):
    return np.mean(per_example_loss(params, X, labels))


# {name: (n, *shape)}: each example's gradient; the parameters are shared (None), the
# examples and labels mapped (0). pj.function compiles it once per input signature.
per_example_gradients = pj.function(pj.vmap(pj.grad(per_example_loss), in_axes=(None, 0, 0)))


def data(n=90, seed=1):
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 2.0], [-1.7, -1.0], [1.7, -1.0]])
    classes = rng.integers(0, 3, n)
    return centers[classes] + 0.6 * rng.standard_normal((n, 2)), np.eye(3)[classes]


def main(steps=150, learning_rate=0.3):
    X, labels = data()
    params = init()
    for _ in range(steps):
        value, grads = pj.value_and_grad(loss)(params, X, labels)
        params = {k: v - learning_rate * grads[k] for k, v in params.items()}
    accuracy = np.mean(np.argmax(logits(params, X), axis=1) == np.argmax(labels, axis=1))
    per_example = {k: np.asarray(g) for k, g in per_example_gradients(params, X, labels).items()}
    print(f"loss {float(value):.4f}, training accuracy {accuracy:.2f}; per-example gradient "
          f"of W0: {per_example['W0'].shape}")
    return {"params": params, "X": X, "labels": labels, "per_example": per_example}


if __name__ == "__main__":
    main()
