import numpy as onp

import pforjac.autograd.numpy as np
from pforjac.autograd import elementwise_grad, grad
from pforjac.autograd.extend import defvjp, primitive
from pforjac.autograd.test_util import check_grads


@primitive
def logsumexp(x):
    """log(sum(exp(x))) on plain arrays: its body is not differentiated."""
    biggest = onp.max(x)
    return biggest + onp.log(onp.sum(onp.exp(x - biggest)))


def logsumexp_vjp(ans, x):
    shape = x.shape
    return lambda g: np.full(shape, g) * np.exp(x - np.full(shape, ans))


defvjp(logsumexp, logsumexp_vjp)


@primitive
def scaled_product(x, y, scale=1.0):
    return scale * x * y


defvjp(scaled_product, lambda ans, x, y, scale=1.0: lambda g: scale * g * y,
       lambda ans, x, y, scale=1.0: lambda g: scale * g * x)


def example(y):
    return np.sum(logsumexp(y ** 2))


def main():
    y = onp.linspace(-1.0, 1.0, 5)
    check_grads(example, modes=["rev"])(y)
    softmax_sq = grad(lambda y: np.sum(elementwise_grad(logsumexp)(y) ** 2))(y)
    dx, dy = grad(lambda x, y: np.sum(scaled_product(x, y, scale=3.0)), (0, 1))(y, y + 1.0)
    return {"gradient": grad(example)(y), "second_order": softmax_sq, "dx": dx, "dy": dy,
            "value": logsumexp(y)}
