"""Oracles that share nothing with pforjac's rules: finite differences on numpy, and JAX.

`fd_jacobian` takes central differences of the program run on numpy in float64 at two
steps, h and h/2, and returns their Richardson extrapolation with a per-entry tolerance
built from the steps: |D(h) - D(h/2)| (an upper bound of the truncation error left) plus
the rounding error eps * |f| / h. It declines (returns None, with the reason) where the
program is not smooth around x: an op's input within `MIN_MARGIN` of its kink (abs, a
max, a comparison, floor), a non-finite value nearby, or the two steps disagreeing.
`fd_hessian` does the same with second differences of the scalar `weights . f(x)`.

`JaxOracle` runs tests/fuzz/jax_worker.py in a separate Python that has JAX (pforjac
never imports it); programs go there as JSON and come back as float64 Jacobians and
Hessians by jax.jacrev / jax.hessian.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np

from . import interp
from .ops import Ref

MIN_MARGIN = 2e-3
EPS64 = float(np.finfo(np.float64).eps)
HESSIAN_SEED = 4242


class Declined(Exception):
    """The oracle has no trustworthy answer here (the reason is the message)."""


def base_point(program: dict) -> tuple[np.ndarray, dict]:
    """x in float64 (the program's dtype rounded, then widened) and stop_gradient's frozen
    values there; raises Declined if an op sits at a kink."""
    x = interp.x_value(program).astype(np.float64)
    margins, frozen = [], {}
    y = interp.numpy_f(program, margins=margins, frozen=frozen)(x)
    if not np.all(np.isfinite(y)):
        raise Declined("the output is not finite at x")
    if margins and min(margins) < MIN_MARGIN:
        raise Declined(f"an input is {min(margins):.1e} from a kink")
    return x, frozen


def _steps(x: np.ndarray, h0: float) -> np.ndarray:
    return h0 * np.maximum(1.0, np.abs(x))


def fd_jacobian(program: dict, x=None, frozen=None) -> tuple[np.ndarray, np.ndarray]:
    """(J, tol), J of shape y.shape + x.shape, by central differences in float64."""
    if x is None:
        x, frozen = base_point(program)
    f = interp.numpy_f(program, frozen=frozen)
    y0 = f(x)
    steps = _steps(x, 2.0 ** -13).reshape(-1)
    cols, tols = [], []
    for j in range(x.size):
        d1, s1 = _central(f, x, j, steps[j])
        d2, s2 = _central(f, x, j, steps[j] / 2)
        rich = (4 * d2 - d1) / 3
        spread = np.abs(d1 - d2)
        if np.any(spread > 1e-3 * (1 + np.abs(rich))):
            raise Declined(f"finite differences did not converge along x[{j}]")
        cols.append(rich)
        tols.append(spread + 40 * EPS64 * max(s1, s2) / steps[j])
    shape = y0.shape + x.shape
    jac = np.stack(cols, -1).reshape(shape) if cols else np.zeros(shape)
    tol = np.stack(tols, -1).reshape(shape) if tols else np.zeros(shape)
    return jac, tol + 1e-12 * np.abs(jac).max(initial=1.0)


def _central(f, x, j, h):
    e = np.zeros(x.size)
    e[j] = h
    e = e.reshape(x.shape)
    up, down = f(x + e), f(x - e)
    if not (np.all(np.isfinite(up)) and np.all(np.isfinite(down))):
        raise Declined(f"a non-finite value within {h:.1e} of x along x[{j}]")
    scale = float(max(np.abs(up).max(initial=0), np.abs(down).max(initial=0), 1.0))
    return (up - down) / (2 * h), scale


def hessian_weights(out_shape) -> np.ndarray:
    return np.random.default_rng(HESSIAN_SEED).uniform(0.5, 1.5, out_shape)


def fd_hessian(program: dict, x=None, frozen=None) -> tuple[np.ndarray, np.ndarray]:
    """(H, tol) of s(x) = sum(weights * f(x)), by second central differences."""
    if x is None:
        x, frozen = base_point(program)
    f = interp.numpy_f(program, frozen=frozen)
    w = hessian_weights(f(x).shape)
    s = lambda z: float(np.sum(w * f(z)))       # noqa: E731
    h1, h2 = _hessian_at(s, x, _steps(x, 2.0 ** -8)), _hessian_at(s, x, _steps(x, 2.0 ** -9))
    rich = (4 * h2 - h1) / 3
    spread = np.abs(h1 - h2)
    if np.any(spread > 1e-2 * (1 + np.abs(rich))):
        raise Declined("second differences did not converge")
    scale = max(abs(s(x)), 1.0)
    steps = _steps(x, 2.0 ** -9).reshape(-1)
    rounding = 400 * EPS64 * scale / np.outer(steps, steps)
    shape = x.shape + x.shape
    tol = 2 * spread + rounding + 1e-9 * np.abs(rich).max(initial=1.0)
    return rich.reshape(shape), tol.reshape(shape)


def _hessian_at(s, x, steps) -> np.ndarray:
    n = x.size
    flat = x.reshape(-1)
    out = np.zeros((n, n))

    def at(*moves):
        z = flat.copy()
        for k, h in moves:
            z[k] += h
        value = s(z.reshape(x.shape))
        if not math.isfinite(value):
            raise Declined("a non-finite value near x (second differences)")
        return value
    for j in range(n):
        for k in range(j, n):
            hj, hk = steps.reshape(-1)[j], steps.reshape(-1)[k]
            v = (at((j, hj), (k, hk)) - at((j, hj), (k, -hk)) - at((j, -hj), (k, hk))
                 + at((j, -hj), (k, -hk))) / (4 * hj * hk)
            out[j, k] = out[k, j] = v
    return out


# -- JAX, in a worker process ------------------------------------------------------------------
class JaxOracle:
    """A JAX worker (its own Python: `python`, default $PFORJAC_FUZZ_JAX_PYTHON or
    /tmp/fw/bin/python). `ask` sends a batch of programs and returns one reply each:
    {"jac": ..., "hess": ...} as float64 arrays, or {"error": text}."""

    def __init__(self, python: str | None = None):
        python = python or os.environ.get("PFORJAC_FUZZ_JAX_PYTHON", "/tmp/fw/bin/python")
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.path.dirname(os.path.dirname(here))
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=root, OMP_NUM_THREADS="1",
                   XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
        self.proc = subprocess.Popen([python, "-m", "tests.fuzz.jax_worker"], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = self.proc.stdout.readline()
        if not hello.startswith("ready"):
            raise RuntimeError(f"the JAX worker did not start ({python}): {hello!r}")
        self.version = hello.split()[1]

    def send(self, requests: list[dict]) -> None:
        for r in requests:
            self.proc.stdin.write(json.dumps(r) + "\n")
        self.proc.stdin.flush()

    def receive(self, count: int) -> list[dict]:
        out = []
        for _ in range(count):
            reply = json.loads(self.proc.stdout.readline())
            for k in ("jac", "hess"):
                if k in reply:
                    reply[k] = np.asarray(reply[k], np.float64)
            out.append(reply)
        return out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def jax_available(python: str | None = None) -> bool:
    python = python or os.environ.get("PFORJAC_FUZZ_JAX_PYTHON", "/tmp/fw/bin/python")
    if not os.path.exists(python):
        return False
    r = subprocess.run([python, "-c", "import jax"], capture_output=True, timeout=120)
    return r.returncode == 0 and sys.platform != "win32"


# -- how large the terms of the chain rule are: what a float32/16 result's rounding scales with ---
def chain_scale(program: dict, variant: int = 0) -> float:
    """max over values v_j of |dv_j/dx| * max(|dy/dv_j|, |dy/dv_k| for the lines k reading
    v_j), by central differences: a derivative computed in low precision is a sum of such
    terms (1 - tanh(v)**2 at saturation is a difference of ones times |dv/dx|), so its
    rounding error is eps times this, not times the result, which may cancel to ~0."""
    x = interp.x_value(program, variant).astype(np.float64)
    with np.errstate(all="ignore"):
        values = [np.asarray(v, np.float64) for v in interp.run_ref(program, Ref(np), x, np.float64)]
    out = [_slope(lambda z, k=k: _with(program, x, {0: z})[k], x) for k in range(len(values))]
    down = [_slope(lambda v, k=k: _with(program, x, {k: v})[-1], values[k]) for k in range(len(values))]
    scale = 0.0
    for j in range(len(values)):
        readers = [k for k, line in enumerate(program["lines"], 1)
                   if any(isinstance(a, dict) and a.get("v") == j for a in line["args"])]
        scale = max(scale, out[j] * max([down[j]] + [down[k] for k in readers]))
    return scale


def _with(program: dict, x, override: dict) -> list:
    with np.errstate(all="ignore"):
        return [np.asarray(v, np.float64) for v in
                interp.run_ref(program, Ref(np), x, np.float64, override)]


def _slope(f, at) -> float:
    """max |df/dat| over entries, by central differences (0 where not finite)."""
    at = np.asarray(at, np.float64)
    best = 0.0
    for j in range(at.size):
        e = np.zeros(at.size)
        e[j] = 1e-6 * max(1.0, abs(float(at.reshape(-1)[j])))
        e = e.reshape(at.shape)
        d = (f(at + e) - f(at - e)) / (2 * e.reshape(-1)[j])
        d = np.abs(d[np.isfinite(d)])
        best = max(best, float(d.max(initial=0.0)))
    return best
