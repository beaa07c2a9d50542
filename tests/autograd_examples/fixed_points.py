import pforjac.autograd.numpy as np
from pforjac.autograd import grad
from pforjac.autograd.misc.fixed_points import fixed_point


def newton_sqrt_step(a):
    return lambda x: 0.5 * (x + a / x)


def distance(x, y):
    return np.abs(x - y)


def sqrt(a, guess=10.0):
    return fixed_point(newton_sqrt_step, a, guess, distance, 1e-10)


def main():
    return {"value": sqrt(2.0), "first": grad(sqrt)(2.0), "second": grad(grad(sqrt))(2.0)}
