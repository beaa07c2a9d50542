import numpy as onp

import pforjac.autograd.numpy as np
from pforjac.autograd import grad
from pforjac.autograd.misc import flatten
from pforjac.autograd.misc.optimizers import adam
from pforjac.autograd.scipy.special import logsumexp


def init_params(layer_sizes, rng):
    return [(0.1 * rng.normal(size=(m, n)), 0.1 * rng.normal(size=n))
            for m, n in zip(layer_sizes[:-1], layer_sizes[1:])]


def predict(params, inputs):
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs - logsumexp(outputs, axis=1, keepdims=True)


def l2_norm(params):
    flat, _ = flatten(params)
    return np.dot(flat, flat)


def log_posterior(params, inputs, targets, scale=0.01):
    return np.sum(predict(params, inputs) * targets) - scale * l2_norm(params)


def main():
    rng = onp.random.default_rng(1)
    inputs = rng.normal(size=(16, 4))
    targets = onp.eye(3)[rng.integers(0, 3, size=16)]
    params = init_params([4, 5, 3], rng)

    def objective(params, i):
        return -log_posterior(params, inputs, targets)
    first, _ = flatten(grad(objective)(params, 0))
    trained = adam(grad(objective), params, step_size=0.05, num_iters=60)
    flat, unflatten = flatten(trained)
    return {"first_gradient": first, "trained": flat,
            "loss": objective(trained, 0), "round_trip": flatten(unflatten(flat))[0]}
