"""Second-order checks at degenerate and ill-conditioned matrices (`pforjac.testing`).

Linear algebra derivatives fail where generic checks never look: at repeated eigenvalues
or singular values, at rank-deficient and at ill-conditioned matrices. There a derivative
is either defined, and must equal central differences, or not (a lone eigenvector at a
tie), and must then be NaN: never a plausible finite number.

- `degenerate_matrices(n)`: named matrices of those kinds, each with the finite-difference
  step that suits it.
- `check_degenerate(f, points)`: f's first and second derivatives at each point, in reverse
  and forward mode (rev, fwd, rev-over-rev, fwd-over-rev, rev-over-fwd, fwd-over-fwd), along
  random directions, against central differences in float64: each must agree, or be NaN
  where the caller allows it.

Example:
    >>> import numpy as np, pforjac as pj
    >>> from pforjac.testing import check_degenerate, degenerate_matrices
    >>> points = degenerate_matrices(3, symmetric=True)
    >>> report = check_degenerate(lambda s: pj.sym_matrix_function(s, "exp"), points,
    ...                           symmetric=True)
    >>> sorted(set(report.values()))
    ['ok']
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .tensor import constant

__all__ = ["degenerate_matrices", "check_degenerate"]


def _orthogonal(rng, n: int) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def degenerate_matrices(n: int = 3, symmetric: bool = False, seed: int = 0) -> dict:
    """{name: (matrix, step)}: "identity" (every eigenvalue and singular value tied),
    "repeated" (Q diag(1, .., 1, 2.5) Q^T: a tie at rounding level), "near_tie" (two
    eigenvalues 1e-7 apart), "rank_deficient" (one zero singular value), "ill_conditioned"
    (condition number 1e8), and unless `symmetric`, "scaled_orthogonal" (2 Q: singular
    values tied, eigenvalues not) and "general_rank_deficient"."""
    rng = np.random.default_rng(seed)
    q, p = _orthogonal(rng, n), _orthogonal(rng, n)
    ramp = np.linspace(1.0, 2.5, n)

    def sym(values):
        return (q * np.asarray(values, float)) @ q.T
    points = {"identity": (np.eye(n), 1e-6),
              "repeated": (sym(np.r_[np.ones(n - 1), 2.5]), 1e-6),
              "near_tie": (sym(np.r_[1.0, 1.0 + 1e-7, ramp[2:] + 1.0]), 1e-10),
              "rank_deficient": (sym(np.r_[0.0, ramp[1:]]), 1e-6),
              "ill_conditioned": (sym(np.logspace(-8, 0, n)), 1e-11)}
    if not symmetric:
        points["scaled_orthogonal"] = (2.0 * q, 1e-6)
        points["general_rank_deficient"] = ((q * np.r_[0.0, ramp[1:]]) @ p.T, 1e-6)
    return points


def check_degenerate(f: Callable, points: dict, order: int = 2, nan_ok=(), rtol: float = 1e-5,
                     atol: float = 1e-6, symmetric: bool = False, seed: int = 0) -> dict:
    """Checks f's derivatives at each of `points` ({name: (x, step)} as
    `degenerate_matrices` gives) up to `order` (1 or 2): the probe <u, f(x)> for a random u,
    differentiated along random directions in every mix of reverse and forward mode, against
    central differences of the same probe (of its derivative, for order 2) at steps from
    1e-3 down to the point's. A NaN result passes only at the points named in `nan_ok` (where the derivative is
    not defined); a finite one must agree (|got - fd| <= atol + rtol * scale, scale the
    difference quotient's size, plus the spread of the differences at successive steps).

    Returns {(point, check): "ok" or "nan"}; raises AssertionError naming the point, the
    check and both numbers at the first disagreement."""
    from . import _derivatives as testing
    report = {}
    for name, (x, step) in points.items():
        rng = np.random.default_rng(seed)
        xs = [constant(np.asarray(x, np.float64))]
        us = [constant(rng.standard_normal(np.shape(y))) for y in testing.float_outputs(f, xs)]
        v, w = (constant(_direction(rng, np.shape(x), symmetric)) for _ in range(2))
        probes = {"": lambda a: _dot(us, testing.float_outputs(f, [a]))}
        if order >= 2:
            probes["rev-over-"] = lambda a: _dot([w], testing.vjp(f, [a], us))
            probes["fwd-over-"] = lambda a: _dot(us, testing.jvp(f, [a], [w]))
        for label, probe in probes.items():
            fds = _central(probe, xs[0], v, step)
            for mode, got in (("rev", _dot([v], testing.vjp(probe, xs, [constant(1.0)]))),
                              ("fwd", _dot([constant(1.0)], testing.jvp(probe, xs, [v])))):
                check = f"{label}{mode}"
                report[name, check] = _judge(float(got.numpy()), fds, name, check, nan_ok,
                                             rtol, atol)
    return report


def _direction(rng, shape, symmetric: bool) -> np.ndarray:
    d = rng.standard_normal(shape)
    return (d + np.swapaxes(d, -1, -2)) / 2 if symmetric else d


def _dot(us, ys):
    """sum of <u, y> over the pairs, as a pforjac scalar (probes are differentiated)."""
    from .ops import sum as total
    out = None
    for u, y in zip(us, ys):
        term = total(u * y)
        out = term if out is None else out + term
    return out


def _central(probe, x, v, smallest: float) -> list:
    """Fourth-order central differences of a scalar probe along v, at steps 1e-3, 1e-5, ...
    down to `smallest` (the point's step): the rule is judged against the pair of
    successive steps that agree best (truncation error falls, rounding error grows)."""
    def at(h):
        return float(probe(constant(x.numpy() + h * v.numpy())).numpy())
    out, h = [], 1e-3
    while h >= smallest * 0.99:
        try:             # a step that leaves the function's domain (a definite matrix) is skipped
            out.append((8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h))
        except (ArithmeticError, ValueError):
            out.append(np.nan)
        h /= 100
    return out


def _judge(got: float, fds: list, name, check, nan_ok, rtol, atol) -> str:
    if np.isnan(got) and name in nan_ok:
        return "nan"
    pairs = sorted((p for p in zip(fds, fds[1:]) if np.all(np.isfinite(p))),
                   key=lambda p: abs(p[0] - p[1]) / (abs(p[1]) + atol)) or [(np.nan, np.nan)]
    fd, spread = pairs[0][1], abs(pairs[0][0] - pairs[0][1])
    if not np.isfinite(fd):
        raise AssertionError(f"check_degenerate: at {name!r} the central differences of the "
                             f"{check} probe are {fds}: choose another point or step")
    if not abs(got - fd) <= atol + rtol * abs(fd) + spread:
        raise AssertionError(f"check_degenerate: at the {name!r} point, {check} gives {got!r}, "
                             f"central differences {fd!r} (steps agree to {spread:.2g}; "
                             f"rtol={rtol}, atol={atol}"
                             f"{'; NaN is allowed here' if name in nan_ok else ''})")
    return "ok"
