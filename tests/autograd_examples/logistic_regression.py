import numpy as onp

import pforjac.autograd.numpy as np
from pforjac.autograd import grad


def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.0) + 1)


def predictions(weights, inputs):
    return sigmoid(np.dot(inputs, weights))


def training_loss(weights, inputs, targets):
    preds = predictions(weights, inputs)
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))


def main():
    rng = onp.random.default_rng(0)
    inputs = rng.normal(size=(8, 3))
    targets = (inputs @ onp.array([1.0, -2.0, 0.5]) > 0).astype(float)
    training_gradient = grad(training_loss)
    weights = onp.array([0.0, 0.0, 0.0])
    first = training_gradient(weights, inputs, targets)
    for _ in range(100):
        weights = weights - 0.1 * training_gradient(weights, inputs, targets)
    by_inputs = grad(training_loss, 1)(weights, inputs, targets)
    return {"first_gradient": first, "weights": weights,
            "loss": training_loss(weights, inputs, targets), "by_inputs": by_inputs}
