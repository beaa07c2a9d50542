"""One program through every path, each result against the oracles: `check_program`.

Smooth programs: each Jacobian-like call against central differences at its own point
(and against JAX's at the base point when a JAX reply is given). Tolerances: the finite
differences' own (oracle.py) plus, for float32/float16 results, `RTOL[dtype]` times the
Jacobian's scale and the program's length. Programs with special values in their source:
pforjac's forward against numpy's own (NaN positions, infinities, zeros' signs), and every
path's Jacobian against the uncached eager one's (same NaN/inf pattern, close values).
Batch programs: the full Jacobian by finite differences says whether rows mix; if they do,
every batch_jacobian path must warn (strict=True: raise); if not, its result must be the
diagonal blocks and it should not warn.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import generator, interp, oracle, paths
from .closed import closed_oracles, closed_program
from .known import known_issue

RTOL = {"float64": 0.0, "float32": 64 * 2.0 ** -23, "float16": 16 * 2.0 ** -10}
JAX_RTOL = 1e-9
ROW_WARNING = "batch_jacobian assumes"             # rows mix
UNCHECKED_WARNING = "batch_jacobian could not check"  # the check cannot follow the batch


@dataclass
class Outcome:
    seed: int
    program: dict
    compared: int = 0
    declined: list = field(default_factory=list)
    mismatches: list = field(default_factory=list)
    paths: set = field(default_factory=set)
    calls: list = field(default_factory=list)
    mixing: bool | None = None          # batch programs: do rows mix (None: not decided)


def _mismatch(out: Outcome, c: paths.Call, what: str, detail: str) -> None:
    record = {"seed": out.seed, "path": c.path, "point": c.point, "what": what,
              "detail": detail, "program": out.program}
    record["known"] = known_issue(record, c)
    out.mismatches.append(record)


def close(got, want, tol, dtype: str, lines: int, floor: float = 0.0) -> str | None:
    """None if got matches want within tol (+ the dtype's share, relative to the largest
    entry or `floor`), else what differs."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    scale = max(float(np.abs(want).max(initial=0.0)), floor)
    allowed = tol + RTOL[dtype] * (1 + lines) * (np.abs(want) + scale)
    err = np.abs(got.astype(np.float64) - want)
    bad = ~(err <= allowed)
    big = float(np.finfo(dtype).max)        # a derivative past the dtype's range: inf is right
    bad &= ~((np.abs(want) > big) & (np.abs(got.astype(np.float64)) >= big / 2)
             & (np.sign(got) == np.sign(want)))
    if not bad.any():
        return None
    k = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1))), bad.shape)
    return (f"{int(bad.sum())} of {bad.size} entries differ; at {tuple(int(i) for i in k)}: "
            f"got {got[k]!r}, want {want[k]!r} (allowed {allowed[k]:.2g})")


def _expected(c: paths.Call, oracles: dict):
    """(want, tol) for call c from the oracles at its point, or None."""
    base = oracles.get((c.kind if c.kind in ("hess",) else "jac", c.point))
    if c.kind == "hvp":
        base = oracles.get(("hess", c.point))
    if base is None:
        return None
    want, tol = base
    if c.kind == "vjp":
        v = c.vector.astype(np.float64)
        return np.tensordot(v, want, v.ndim), np.tensordot(np.abs(v), tol, v.ndim)
    if c.kind in ("jvp", "hvp"):
        u = c.vector.astype(np.float64)
        axes = (list(range(want.ndim - u.ndim, want.ndim)), list(range(u.ndim)))
        return np.tensordot(want, u, axes), np.tensordot(tol, np.abs(u), axes)
    return want, tol


def compare_calls(out: Outcome, calls: list, oracles: dict, name: str = "fd") -> None:
    for c in calls:
        try:
            _compare_call(out, c, oracles, name)
        except Exception as e:      # noqa: BLE001  (the harness's own fault: counted, not a finding)
            out.declined.append(f"harness: {c.path} vs {name}: {type(e).__name__}: {e}"[:300])


def _compare_call(out: Outcome, c, oracles: dict, name: str) -> None:
    dtype = out.program["dtype"]
    lines = len(out.program["lines"])
    out.paths.add(c.path)
    expected = _expected(c, oracles)
    if expected is None:
        return
    out.compared += 1
    if c.error is not None:
        _mismatch(out, c, "raised", c.error)
        return
    if c.value.dtype != np.dtype(dtype):
        _mismatch(out, c, "dtype", f"result dtype {c.value.dtype}, source {dtype}")
    # float32/16 round a saturated tanh's 1 - t**2 to 0 where the true slope is 1e-9:
    # their errors are absolute below a scale of 1e-2 (second derivatives: of 1, the
    # first ones' terms cancelling)
    floor = 1.0 if c.kind in ("hess", "hvp") else 1e-2
    problem = close(c.value, *expected, dtype, lines, floor)
    if problem and c.kind not in ("hess", "hvp"):
        problem = close_by_chain(out, c, c.value, *expected)
    if problem:
        _mismatch(out, c, f"value vs {name}", problem)


def close_by_chain(out: Outcome, c, got, want, tol) -> str | None:
    """close() with the float32/16 share relative to the chain rule's largest term at c's
    point (oracle.chain_scale), not the result's: a low-precision derivative's rounding
    scales with its terms, which may cancel or be small factors of a saturated tanh's
    1 - t**2 (a difference of ones). float64 results and off-grid points keep close()."""
    dtype = out.program["dtype"]
    if dtype == "float64" or not isinstance(c.point, int):
        return close(got, want, tol, dtype, len(out.program["lines"]), 1e-2)
    scale = oracle.chain_scale(out.program, c.point)
    return close(got, want, tol, dtype, len(out.program["lines"]), max(scale, 1e-2))


def fd_oracles(program: dict, kinds=("jac",), variants=(0, 1, 2), declined=None) -> dict:
    """Finite-difference Jacobians (and the Hessian at x0) keyed by (kind, x variant)."""
    out = {}
    for variant in variants:
        try:
            if variant == 0:
                x, frozen = oracle.base_point(program)
            else:
                x = interp.x_value(program, variant).astype(np.float64)
                frozen = _frozen_at(program, x)
            if "jac" in kinds:
                out[("jac", variant)] = oracle.fd_jacobian(program, x, frozen)
            if "hess" in kinds and variant == 0:
                out[("hess", 0)] = oracle.fd_hessian(program, x, frozen)
        except oracle.Declined as e:
            if declined is not None:
                declined.append(f"x{variant}: {e}")
    return out


def _frozen_at(program: dict, x) -> dict:
    margins, frozen = [], {}
    y = interp.numpy_f(program, margins=margins, frozen=frozen)(x)
    if not np.all(np.isfinite(y)) or (margins and min(margins) < oracle.MIN_MARGIN):
        raise oracle.Declined("near a kink or not finite")
    return frozen


# JAX's derivative at a point closer than this to a kink (in the program's dtype's rounding
# of x: an argmax of a near tie may pick the other entry) is not pforjac's to match
JAX_MIN_MARGIN = {"float64": 1e-9, "float32": 1e-4, "float16": 5e-2}


def jax_oracles(reply: dict | None, program: dict) -> dict:
    if not reply or "error" in reply:
        return {}
    margins = []
    y = interp.numpy_f(program, margins=margins)(interp.x_value(program).astype(np.float64))
    if margins and min(margins) < JAX_MIN_MARGIN[program["dtype"]]:
        return {}
    out = {}
    x_shape = tuple(program["x_shape"])
    for kind, shape in (("jac", y.shape + x_shape), ("hess", x_shape + x_shape)):
        if kind in reply:
            if reply[kind].size != int(np.prod(shape, dtype=int)):
                continue
            want = reply[kind].reshape(shape)
            if np.all(np.isfinite(want)):
                scale = float(np.abs(want).max(initial=1.0))
                out[(kind, 0)] = (want, JAX_RTOL * (np.abs(want) + scale))
    return out


def wants_hessian(program: dict, seed: int) -> bool:
    """Hessian paths (costly: second differences) for a third of the small smooth programs."""
    return program["dtype"] != "float16" and not program.get("batch") and \
        not program.get("special") and int(np.prod(program["x_shape"], dtype=int)) <= 6 \
        and seed % 3 == 0


def check_program(seed: int, program: dict) -> Outcome:
    """Runs every path on `program` and compares (see the module docstring); the calls
    stay on the outcome for `apply_jax`."""
    from . import batch, special
    from pforjac.compiled import loopcache
    out = Outcome(seed, program)
    rng = np.random.default_rng([seed, 2])
    with loopcache.verifying(False):
        if program.get("special"):
            special.check(out, rng)
        elif program.get("batch"):
            batch.check(out, rng)
        else:
            _check_smooth(out, rng, wants_hessian(program, seed))
    return out


def _check_smooth(out: Outcome, rng, hessian: bool) -> None:
    program = out.program
    kinds = ("jac", "hess") if hessian else ("jac",)
    fd = fd_oracles(program, kinds, declined=out.declined)
    n_out = int(np.prod(np.shape(interp.numpy_f(program)(interp.x_value(program))), dtype=int))
    calls = paths.jacobian_paths(program, rng, max(n_out, 1))
    calls += paths.functional_paths(program, rng, n_out)
    if hessian:
        calls += paths.hessian_paths(program, rng)
    compare_calls(out, calls, fd, "finite differences")
    compare_calls(out, calls, closed_oracles(program), "closed form")
    out.calls = calls


def program_for(seed: int) -> dict:
    """The seed's program: one in eight a closed-form one (closed.py)."""
    return closed_program(seed) if seed % 8 == 7 else generator.generate(seed)


def jax_request(seed: int, program: dict) -> dict:
    x = interp.x_value(program).astype(np.float64).reshape(-1).tolist()
    want = ["jac", "hess"] if wants_hessian(program, seed) else ["jac"]
    return {"id": seed, "program": program, "x": x, "want": want}


def apply_jax(out: Outcome, reply: dict) -> None:
    """Compares the outcome's calls at the base point with JAX's derivatives."""
    oracles = jax_oracles(reply, out.program)
    if not oracles:
        if reply.get("error"):
            out.declined.append("jax: " + reply["error"][:200])
        return
    calls = [c for c in out.calls if c.point == 0 and c.kind != "batch"]
    compare_calls(out, calls, oracles, "JAX")
    if out.program.get("batch") and out.mixing is False:
        from .batch import expect_diagonal_values
        for c in out.calls:
            if c.kind == "batch" and c.point == 0 and c.error is None:
                out.compared += 1
                expect_diagonal_values(out, c, oracles, "JAX")
