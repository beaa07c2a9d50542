"""Batch programs: batch_jacobian's paths against the full Jacobian's diagonal blocks.

The full Jacobian J[b, y.., c, x..] by finite differences (or JAX's) decides: rows mix if
an off-diagonal block (b != c) is not zero. Then every batch_jacobian path must warn (and
raise under strict=True): its result would be the sum over b of J[b, .., c, ..], not the
diagonal. If rows don't mix, each path's result must be the diagonal blocks, without a
warning (strict=True may still refuse an op its check has no rule for).
"""
from __future__ import annotations

import numpy as np

from . import interp, paths
from .check import (UNCHECKED_WARNING, ROW_WARNING, _mismatch, close, close_by_chain,
                    compare_calls, fd_oracles)
from .ops import OPS


def diagonal_blocks(jac: np.ndarray, y_ndim: int) -> np.ndarray:
    b = jac.shape[0]
    return np.stack([jac[(k,) + (slice(None),) * (y_ndim - 1) + (k,)] for k in range(b)])


def off_diagonal(jac: np.ndarray, y_ndim: int) -> float:
    b = jac.shape[0]
    moved = np.moveaxis(jac, y_ndim, 1).reshape(b, b, -1)
    mask = ~np.eye(b, dtype=bool)
    return float(np.abs(moved[mask]).max(initial=0.0))


def check(out, rng) -> None:
    program = out.program
    fd = fd_oracles(program, declined=out.declined)
    y_shape = np.shape(interp.numpy_f(program)(interp.x_value(program)))
    calls = paths.jacobian_paths(program, rng, 1, light=True)
    compare_calls(out, calls, fd, "finite differences")
    out.calls = calls
    if ("jac", 0) not in fd:
        return
    # rows mix if they do at any of the three points (a saturated tanh hides it at one)
    verdicts = [_mixing(out, *fd[key], len(y_shape)) for key in sorted(fd)]
    out.mixing = True if True in verdicts else None if None in verdicts else False
    if out.mixing is None:
        return
    # an op that mixes rows by construction, or a step or selection that zeroes the
    # derivative of one that does: the check may warn though the numbers don't mix
    structural = any(OPS[line["op"]].batch_mixing or OPS[line["op"]].zeroing
                     for line in program["lines"])
    batch_calls = paths.batch_paths(program, rng, max(int(np.prod(y_shape[1:], dtype=int)), 1))
    out.calls += batch_calls
    for c in batch_calls:
        out.paths.add(c.path)
        out.compared += 1
        if out.mixing:
            _expect_refusal(out, c)
        else:
            _expect_diagonal(out, c, fd, len(y_shape), structural)


def _mixing(out, jac, tol, y_ndim) -> bool | None:
    off, noise = off_diagonal(jac, y_ndim), float(tol.max(initial=0.0))
    scale = float(np.abs(jac).max(initial=1.0))
    if noise * 10 < off and off > 1e-6 * scale:
        return True
    if off <= max(noise * 10, 1e-12 * scale):
        return False
    out.declined.append(f"off-diagonal blocks {off:.1e} near the noise {noise:.1e}")
    return None


def _expect_refusal(out, c) -> None:
    warned = any(ROW_WARNING in w or UNCHECKED_WARNING in w for w in c.warnings)
    if c.path.endswith("strict"):
        if c.error is None:
            _mismatch(out, c, "rows mix, strict=True returned",
                      f"warnings {c.warnings[:1]}" if c.warnings else "no warning either")
        elif not c.error.startswith(("ValueError", "StrictCheckError")):
            _mismatch(out, c, "raised", c.error)
    elif c.error is not None:
        _mismatch(out, c, "raised", c.error)
    elif not warned:
        _mismatch(out, c, "rows mix, no warning", "batch_jacobian returned a result silently "
                  "though off-diagonal blocks of the Jacobian are not zero")


def _expect_diagonal(out, c, oracles, y_ndim, structural: bool) -> None:
    """Rows don't mix (numerically): the diagonal blocks, and no warning unless an op mixes
    them structurally (with a zero derivative: a round, a variance over one entry)."""
    if c.error is not None:
        refused = "could not check" in c.error or (structural and ROW_WARNING in c.error)
        if not (c.path.endswith("strict") and refused):
            _mismatch(out, c, "spurious row refusal" if ROW_WARNING in c.error else "raised",
                      c.error)
        return
    if not structural and any(ROW_WARNING in w for w in c.warnings):
        _mismatch(out, c, "spurious row warning", c.warnings[0][:300])
    expect_diagonal_values(out, c, oracles, "finite differences")


def expect_diagonal_values(out, c, oracles, name: str) -> None:
    base = oracles.get(("jac", c.point))
    if base is None:
        return
    want, tol = base
    y_ndim = want.ndim - len(out.program["x_shape"])
    # (errors absolute below a scale of 1e-2, as check._compare_call's: a float32 Jacobian
    # that is 0, sum(softmax(x)) along its axis, comes out as roundings of 1e-8)
    want, tol = diagonal_blocks(want, y_ndim), diagonal_blocks(tol, y_ndim)
    problem = close(c.value, want, tol, out.program["dtype"], len(out.program["lines"]), floor=1e-2)
    if problem:     # float32/16: rounding scales with the chain's terms, as for the other paths
        problem = close_by_chain(out, c, c.value, want, tol)
    if problem:
        _mismatch(out, c, f"value vs diagonal blocks ({name})", problem)
