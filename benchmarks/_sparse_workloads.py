"""The sparse benchmark's workloads, written once for any numpy-like module `xp` with
pad, roll, stack, where and reshape (pforjac itself, or jax.numpy), with their patterns."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def brusselator(xp, N: int):
    """The 2-D Brusselator of SciMLBenchmarks (periodic, A=3.4, B=1, alpha=10/dx^2, the
    forcing disc switched on at t=1.1): (rhs(t, y), y0), y the two species on N x N."""
    xs = np.linspace(0, 1, N)
    dx = xs[1] - xs[0]
    A, B, alpha = 3.4, 1.0, 10.0 / dx ** 2
    X, Y = np.meshgrid(xs, xs, indexing="ij")
    disc = ((X - 0.3) ** 2 + (Y - 0.6) ** 2 <= 0.1 ** 2).astype(np.float64)

    def lap(v):
        return xp.roll(v, 1, 0) + xp.roll(v, -1, 0) + xp.roll(v, 1, 1) + xp.roll(v, -1, 1) - 4 * v

    def rhs(t, y):
        u = xp.reshape(y, (2, N, N))
        u1, u2 = u[0], u[1]
        forcing = disc * xp.where(t >= 1.1, 5.0, 0.0)
        d1 = alpha * lap(u1) + B + u1 * u1 * u2 - (A + 1) * u1 + forcing
        d2 = alpha * lap(u2) + A * u1 - u1 * u1 * u2
        return xp.reshape(xp.stack([d1, d2]), (-1,))
    y0 = np.stack([22 * (Y * (1 - Y)) ** 1.5, 27 * (X * (1 - X)) ** 1.5]).ravel()
    return rhs, y0


def brusselator_pattern(N: int):
    idx = np.arange(2 * N * N).reshape(2, N, N)
    rows, cols = [], []
    for s in range(2):
        for d in [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]:
            rows.append(idx[s].ravel())
            cols.append(np.roll(idx[s], d, (0, 1)).ravel())
        rows.append(idx[s].ravel())
        cols.append(idx[1 - s].ravel())
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_array((np.ones(r.size, bool), (r, c)), shape=(2 * N * N, 2 * N * N))


def heat(xp):
    """1-D heat equation with conductivity 1 + u^2, zero Dirichlet boundaries."""
    def f(u):
        up = xp.pad(u, [(1, 1)])
        k = 1 + up * up
        flux = 0.5 * (k[1:] + k[:-1]) * (up[1:] - up[:-1])
        return flux[1:] - flux[:-1]
    return f


def tridiagonal(n: int):
    return sp.csr_array(sum(sp.eye_array(n, k=k) for k in (-1, 0, 1)).astype(bool))


def rosenbrock(xp):
    """The extended Rosenbrock function (Moré, Garbow, Hillstrom): independent pairs."""
    def f(x):
        pairs = xp.reshape(x, (-1, 2))
        a, b = pairs[:, 0], pairs[:, 1]
        return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()
    return f


def rosenbrock_pattern(n: int):
    return sp.csr_array(sp.block_diag([np.ones((2, 2))] * (n // 2)).astype(bool))


def points(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 1.5, n)
