"""Test problems the scipy helpers' tests share: Robertson's stiff chemical kinetics
(k1 = 0.04, k2 = 3e7, k3 = 1e4) and its Jacobian written by hand."""
import numpy as np


def robertson(t, y):
    return np.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                     0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2, 3e7 * y[1] ** 2])


def robertson_jac(t, y):
    return np.array([[-0.04, 1e4 * y[2], 1e4 * y[1]],
                     [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]], [0.0, 6e7 * y[1], 0.0]])
