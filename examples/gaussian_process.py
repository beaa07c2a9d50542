"""A Gaussian process's negative log marginal likelihood in plain numpy (`np.linalg.cholesky`,
`solve`, `slogdet`), and its gradient with respect to the log hyperparameters (pj.grad), used
by scipy to fit them.

Run: python examples/gaussian_process.py   (needs pforjac's np.linalg.cholesky, solve, slogdet)
"""
import numpy as np
from scipy.optimize import minimize

import pforjac as pj


def kernel(X, log_length, log_variance):
    sq = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    return np.exp(log_variance) * np.exp(-0.5 * sq / np.exp(2.0 * log_length))


def neg_log_marginal_likelihood(log_params, X, y):
    """-log p(y | X, params) for an RBF kernel plus noise; log_params = (log length scale,
    log signal variance, log noise variance)."""
    n = X.shape[0]
    K = kernel(X, log_params[0], log_params[1]) + np.exp(log_params[2]) * np.eye(n)
    L = np.linalg.cholesky(K)                              # K = L L^T
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))    # K^-1 y, by the two factors
    _, logdet = np.linalg.slogdet(K)
    return 0.5 * np.dot(y, alpha) + 0.5 * logdet + 0.5 * n * np.log(2 * np.pi)


def data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, np.sin(2 * X[:, 0]) + 0.1 * rng.standard_normal(n)


def main():
    X, y = data()
    start = np.log(np.array([1.0, 1.0, 0.1]))
    # numpy arrays in, numpy array out: scipy calls jac(p, X, y) and gets an array
    fitted = minimize(lambda p, X, y: float(neg_log_marginal_likelihood(p, X, y)), start,
                      args=(X, y), jac=pj.grad(neg_log_marginal_likelihood), method="L-BFGS-B")
    print(f"log marginal likelihood {-fitted.fun:.3f} at length {np.exp(fitted.x[0]):.3f}, "
          f"signal variance {np.exp(fitted.x[1]):.3f}, noise variance {np.exp(fitted.x[2]):.4f}")
    return {"start": start, "fitted": fitted, "X": X, "y": y}


if __name__ == "__main__":
    main()
