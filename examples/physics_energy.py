"""A Lennard-Jones cluster's potential energy in plain numpy (`np.linalg.norm` of the pair
separations), its forces (pj.grad) and its Hessian (pj.hessian), whose eigenvalues at a
minimum are the squared vibration frequencies: six near zero (three translations, three
rotations), the rest positive.

Run: python examples/physics_energy.py   (needs pforjac's np.linalg.norm)
"""
import numpy as np
from scipy.optimize import minimize

import pforjac as pj


def pairs(n):
    i, j = np.triu_indices(n, 1)
    return i, j


def energy(x, epsilon=1.0, sigma=1.0):
    """Lennard-Jones energy of positions `x` (n, 3)."""
    i, j = pairs(x.shape[0])
    r = np.linalg.norm(x[i] - x[j], axis=1)
    s6 = (sigma / r) ** 6
    return np.sum(4.0 * epsilon * (s6 ** 2 - s6))


def relaxed(n=7, seed=0):
    """A local minimum of the energy, from a perturbed lattice (scipy's BFGS, pforjac's
    gradient)."""
    rng = np.random.default_rng(seed)
    grid = np.array([[a, b, c] for a in range(2) for b in range(2) for c in range(2)], float)
    x0 = 1.12 * grid[:n] + 0.05 * rng.standard_normal((n, 3))
    flat_energy = lambda v: float(energy(v.reshape(n, 3)))                        # noqa: E731
    flat_gradient = lambda v: pj.grad(energy)(v.reshape(n, 3)).ravel()    # noqa: E731
    result = minimize(flat_energy, x0.ravel(), jac=flat_gradient, method="BFGS", tol=1e-10)
    return result.x.reshape(n, 3)


def main(n=7):
    x = relaxed(n)
    H = pj.hessian(energy, x).reshape(3 * n, 3 * n)        # numpy in, numpy out
    eigenvalues = np.linalg.eigvalsh(H)
    print(f"{n} atoms: E = {float(energy(x)):.4f}, |force| = "
          f"{np.abs(pj.grad(energy)(x)).max():.1e}; Hessian eigenvalues: six near zero "
          f"(max {np.abs(eigenvalues[:6]).max():.1e}), then {eigenvalues[6]:.3f} .. "
          f"{eigenvalues[-1]:.1f}")
    return {"x": x, "hessian": H, "eigenvalues": eigenvalues}


if __name__ == "__main__":
    main()
