import numpy as onp
from scipy.optimize import minimize

import pforjac.autograd.numpy as np
from pforjac.autograd import value_and_grad


def rosenbrock(x):
    return 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2


def main():
    value, gradient = value_and_grad(rosenbrock)(onp.array([-1.2, 1.0]))
    result = minimize(value_and_grad(rosenbrock), x0=onp.array([-1.2, 1.0]), jac=True,
                      method="CG")
    return {"value": value, "gradient": gradient, "optimum": onp.round(result.x, 4)}
