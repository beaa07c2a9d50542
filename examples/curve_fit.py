"""Nonlinear least squares and Newton-type minimization with scipy, derivatives from
pforjac, model written in plain numpy: `least_squares(jac=...)` fits a decaying oscillation,
`minimize(jac=..., hess=..., method="trust-exact")` the Rosenbrock function.

Run: python examples/curve_fit.py
"""
import numpy as np
from scipy.optimize import least_squares, minimize

import pforjac as pj


def model(p, t):
    amplitude, decay, frequency, offset = p[0], p[1], p[2], p[3]
    return amplitude * np.exp(-decay * t) * np.cos(frequency * t) + offset


def residuals(p, t, y):
    return model(p, t) - y


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def jacobian(p, t, y):
    """The (n, 4) Jacobian of the residuals (numpy in, numpy out: an array for scipy)."""
    return pj.jacobian(lambda p: residuals(p, t, y), p)


def fit(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 10.0, n)
    truth = np.array([2.0, 0.3, 1.7, 0.5])
    y = model(truth, t) + 0.01 * rng.standard_normal(n)
    result = least_squares(residuals, np.array([1.0, 0.1, 1.5, 0.0]), jac=jacobian, args=(t, y))
    return result, truth, (t, y)


def minimize_rosenbrock(dim=100):
    x0 = np.full(dim, -0.5)
    return minimize(rosenbrock, x0, jac=pj.grad(rosenbrock), hess=pj.hessian(rosenbrock),
                    method="trust-exact")


def main(dim=100):
    fitted, truth, data = fit()
    newton = minimize_rosenbrock(dim)
    print(f"least_squares: {np.round(fitted.x, 3)} (truth {truth}), {fitted.njev} Jacobians; "
          f"trust-exact on {dim}-D Rosenbrock: f = {newton.fun:.2e} after {newton.nit} "
          f"iterations, x = 1 to {np.abs(newton.x - 1).max():.1e}")
    return {"fit": fitted, "truth": truth, "data": data, "newton": newton}


if __name__ == "__main__":
    main()
