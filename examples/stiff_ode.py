"""Robertson's stiff chemical kinetics in plain numpy, integrated by scipy's implicit
solvers with the exact Jacobian from pforjac (`solve_ivp(..., jac=...)`) instead of scipy's
finite differences.

Run: python examples/stiff_ode.py
"""
import numpy as np
from scipy.integrate import solve_ivp

import pforjac as pj

RATES = (0.04, 1e4, 3e7)


def robertson(t, y, k1=RATES[0], k2=RATES[1], k3=RATES[2]):
    """dy/dt of the three species; np.stack (which dispatches on Tensors) joins them."""
    y1, y2, y3 = y[0], y[1], y[2]
    return np.stack([-k1 * y1 + k2 * y2 * y3,
                     k1 * y1 - k2 * y2 * y3 - k3 * y2 ** 2,
                     k3 * y2 ** 2])


def jacobian(t, y):
    """d(dy/dt)/dy, a (3, 3) numpy array for scipy (numpy in, numpy out)."""
    return pj.jacobian(lambda y: robertson(t, y), y)


def main(t_end=1e5, method="Radau"):
    y0 = np.array([1.0, 0.0, 0.0])
    exact = solve_ivp(robertson, (0.0, t_end), y0, method=method, jac=jacobian, rtol=1e-8,
                      atol=1e-12)
    estimated = solve_ivp(robertson, (0.0, t_end), y0, method=method, rtol=1e-8, atol=1e-12)
    print(f"{method} to t={t_end:g}: y = {exact.y[:, -1]} with pforjac's Jacobian "
          f"({exact.njev} Jacobians, {exact.nfev} rhs calls; with scipy's finite differences: "
          f"{estimated.nfev}); mass conserved to {abs(exact.y[:, -1].sum() - 1):.1e}")
    return {"exact": exact, "estimated": estimated, "y": exact.y[:, -1]}


if __name__ == "__main__":
    main()
