"""Programs whose source holds special values (NaN, +-inf, +-0, subnormals, the largest).

No derivative oracle holds there, so two checks: pforjac's forward, line by line,
against numpy's own (same NaN positions, infinities and zeros' signs, values close), and
every Jacobian path against the uncached eager Jacobian at the same point (the same
pattern of NaN and infinities, close finite values): compiled code built on finite values
must notice the special ones (its structure guards) and give what eager gives.
"""
from __future__ import annotations

import numpy as np

import pforjac as pj

from . import interp, paths
from .ops import OPS, Ref

FORWARD_RTOL = {"float64": 1e-12, "float32": 64 * 2.0 ** -23, "float16": 8 * 2.0 ** -10}
PATH_RTOL = {"float64": 1e-9, "float32": 1e-4, "float16": 2e-2}


def pattern_difference(got, want, rtol: float, signs: bool = True) -> str | None:
    """None if got and want have the same NaN/inf pattern, zero signs (where both are zero,
    with `signs`) and close finite values; else what differs."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape}, want {want.shape}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(all="ignore"):
        return _first_difference(g, w, rtol, signs)


def _first_difference(g, w, rtol: float, signs: bool) -> str | None:
    checks = [("NaN", np.isnan(g) != np.isnan(w)),
              ("infinity", (np.isinf(g) | np.isinf(w)) & (g != w) & ~(np.isnan(g) | np.isnan(w)))]
    if signs:
        checks.append(("zero sign", (g == 0) & (w == 0) & (np.signbit(g) != np.signbit(w))))
    finite = np.isfinite(g) & np.isfinite(w)
    scale = float(np.abs(w[finite]).max(initial=0.0))
    checks.append(("value", finite & ~(np.abs(g - w) <= rtol * (np.abs(w) + scale) + 1e-300)))
    for name, bad in checks:
        if bad.any():
            k = tuple(int(i) for i in np.argwhere(bad)[0])
            return f"{name}: {int(bad.sum())} of {bad.size} entries; at {k} got {g[k]!r}, want {w[k]!r}"
    return None


def forward_difference(program: dict) -> tuple[int, str] | None:
    """(line, what differs) at the first line whose pforjac value, computed from numpy's
    values of its inputs, is not numpy's. Where numpy has no such function (softmax,
    sigmoid: the reference is a formula) an input with an infinity has no one answer
    (softmax([1, inf]) is NaN in JAX and TensorFlow, [0, 1] in the limit): not compared."""
    x = interp.x_value(program)
    with np.errstate(all="ignore"):
        want = interp.run_ref(program, Ref(np), x)
    rtol = FORWARD_RTOL[program["dtype"]]
    for k, line in enumerate(program["lines"], 1):
        inputs = [pj.constant(np.asarray(v)) for v in want[:k]]
        with np.errstate(all="ignore"):
            g = interp.run_pj(dict(program, lines=[line]), pj, inputs)[-1].numpy()
        w = np.asarray(want[k])
        if g.dtype != w.dtype:
            return k, f"dtype {g.dtype}, numpy's {w.dtype}"
        if OPS[line["op"]].formula and any(np.isinf(np.asarray(want[a["v"]], np.float64)).any()
                                           for a in line["args"] if isinstance(a, dict) and "v" in a):
            continue
        # a formula's zeros have no sign numpy gives (log_softmax of one entry: x - x)
        problem = pattern_difference(g, w, rtol, signs=not OPS[line["op"]].formula)
        if problem:
            return k, problem
    return None


def check(out, rng) -> None:
    from .check import _mismatch
    program = out.program
    out.compared += 1
    out.paths.add("forward")
    try:
        diff = forward_difference(program)
    except Exception as e:      # noqa: BLE001
        diff = (0, f"raised {type(e).__name__}: {e}"[:400])
    if diff is not None:
        line, problem = diff
        op = program["lines"][line - 1]["op"] if line else "?"
        _mismatch(out, paths.Call("forward", "forward", "special"),
                  "forward vs numpy", f"line v{line} ({op}): {problem}")
    n_out = int(np.prod(np.shape(interp.numpy_f(program)(interp.x_value(program))), dtype=int))
    calls = paths.special_paths(program, rng, max(n_out, 1))
    _compare_to_eager(out, calls)


def _compare_to_eager(out, calls) -> None:
    from .check import _mismatch
    reference, others = calls[0], calls[1:]
    rtol = PATH_RTOL[out.program["dtype"]]
    for c in others:
        out.paths.add(c.path + "@special")
        out.compared += 1
        if (c.error is None) != (reference.error is None):
            _mismatch(out, c, "raised" if c.error else "eager raised",
                      c.error or reference.error)
            continue
        if c.error is None:
            problem = pattern_difference(c.value, reference.value, rtol, signs=False)
            if problem:
                _mismatch(out, c, "special point vs eager jacobian", problem)
