"""The fuzzer's point classes beside its random programs (`--classes`):

- `conformance`: the whole grid of tests/conformance.py (every dispatched numpy function,
  ufunc and ndarray method of Tensor on ndarrays and Tensors, 8 dtypes, 5 shapes, keyword
  variants, Python-number operands; the test suite runs a third of it);
- `complex`: random real-valued numpy expressions of complex tensors (a chain of complex
  blocks and a real finisher: norms, variances, cov, vdot, angle, parts). pj.grad, a tape's
  pfor Jacobian and forward mode against central differences in x and y (pforjac's
  convention, JAX's: the gradient is df/dx - i df/dy) and, with a JAX Python, jax.grad;
- `python_numbers`: the ops of ops_conform.py (Python floats and lists in float64 maths,
  vector norms over several axes, ndarray methods) run in the random programs (`--ops
  conform`); this module only names the class.

Each returns counts ("compared calls", "mismatches") and the mismatches' descriptions.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

BLOCKS = ["xp.exp(z / 2)", "xp.sin(z)", "z * w", "xp.conj(z) * w", "z * z / 3",
          "xp.real(z) * w + 1j * xp.imag(z)", "xp.cos(z) + xp.conj(z)", "z / (1.5 + xp.abs(z))",
          "xp.imag(z) - 2j * xp.real(z)", "z @ xp.conj(w.T) @ w / 4", "xp.vdot(w, z) * z / 3"]
FINISHERS = ["xp.linalg.norm(z)", "xp.var(z)", "xp.std(z, axis=0).sum()", "xp.abs(xp.vdot(z, w))",
             "xp.real(xp.sum(z * w))", "xp.nanvar(z, axis=1).sum()", "xp.sum(xp.abs(xp.cov(z)))",
             "xp.linalg.vector_norm(z, ord=3, axis=(0, 1))", "xp.sum(xp.abs(z) ** 2)",
             "xp.imag(xp.sum(z * z))", "xp.sum(xp.real(z) * xp.imag(z))",
             "xp.linalg.norm(z, 1, axis=1).sum()", "xp.linalg.matrix_norm(z)",
             "xp.sum(xp.abs(xp.corrcoef(z)))", "xp.sum(xp.angle(z + 3))"]


def complex_expression(seed: int) -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """(expression in `xp`, `z` and `w`, the point z, w and a tangent t) of point `seed`."""
    rng = np.random.default_rng([seed, 7])
    expr = "z"
    for _ in range(int(rng.integers(0, 3))):
        expr = rng.choice(BLOCKS).replace("z", f"({expr})")
    expr = rng.choice(FINISHERS).replace("z", f"({expr})")
    z, w, t = (rng.uniform(-1.5, 1.5, (2, 3)) + 1j * rng.uniform(-1.5, 1.5, (2, 3))
               for _ in range(3))
    return expr, z, w, t


def _fn(expr, w):
    return lambda z: eval(expr, {"xp": np, "w": w, "z": z})   # noqa: S307  (the table's own)


def _central(f, z, h=1e-6) -> np.ndarray:
    g = np.zeros_like(z)
    for k in np.ndindex(z.shape):
        e = np.zeros_like(z)
        e[k] = h
        g[k] = (f(z + e) - f(z - e)) / (2 * h) - 1j * (f(z + 1j * e) - f(z - 1j * e)) / (2 * h)
    return g


def _np(v):
    return v.numpy() if hasattr(v, "numpy") else np.asarray(v)


def _close(got, want, rtol) -> bool:
    scale = max(1.0, float(np.max(np.abs(want))))
    return bool(np.all(np.isfinite(got))) and np.allclose(got, want, rtol=rtol, atol=rtol * scale)


def _smooth_here(f, z, g_fd, h=1e-4) -> bool:
    """Central differences at two step sizes agree: no kink or branch cut within reach."""
    return _close(_central(f, z, h), g_fd, 1e-3)


def check_complex_point(seed: int) -> tuple[int, list, dict]:
    """(compared calls, mismatches, the point's gradient for the JAX check) of one point."""
    import pforjac as pj
    expr, z, w, t = complex_expression(seed)
    f = _fn(expr, w)
    with np.errstate(all="ignore"):
        want = _central(f, z)
        if not np.all(np.isfinite(want)) or not _smooth_here(f, z, want):
            return 0, [], {}
        x = pj.constant(z)
        with pj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
        got = {"grad": _np(pj.grad(f)(z)), "tape.gradient": _np(tape.gradient(y, x)),
               "jacobian(pfor)": _np(tape.jacobian(y, x)),
               "jacobian(while_loop)": _np(tape.jacobian(y, x, experimental_use_pfor=False))}
        _, tangent = pj.jvp(f, x, pj.constant(t))
        h = 1e-6
        directional = (f(z + h * t) - f(z - h * t)) / (2 * h)
    problems = [f"{expr} (seed {seed}): {path} {np.ravel(g)[:2]} != central differences "
                f"{np.ravel(want)[:2]}" for path, g in got.items() if not _close(g, want, 1e-5)]
    if not _close(_np(tangent), directional, 1e-5):
        problems.append(f"{expr} (seed {seed}): jvp {float(_np(tangent))} != {directional}")
    return len(got) + 1, problems, {"expr": expr, "seed": seed, "grad": got["grad"]}


_JAX_SCRIPT = """
import json, sys
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
out = []
for line in sys.stdin:
    r = json.loads(line)
    z = jnp.asarray(r["z"][0]) + 1j * jnp.asarray(r["z"][1])
    w = jnp.asarray(r["w"][0]) + 1j * jnp.asarray(r["w"][1])
    g = jax.grad(lambda z: eval(r["expr"], {"xp": jnp, "w": w, "z": z}))(z)
    out.append([jnp.real(g).tolist(), jnp.imag(g).tolist()])
print(json.dumps(out))
"""


def jax_gradients(points: list, python: str) -> list:
    """jax.grad of each point's expression, in one run of a Python that has JAX."""
    lines = []
    for p in points:
        _, z, w, _ = complex_expression(p["seed"])
        lines.append(json.dumps({"expr": p["expr"], "z": [z.real.tolist(), z.imag.tolist()],
                                 "w": [w.real.tolist(), w.imag.tolist()]}))
    env = dict(os.environ, JAX_PLATFORMS="cpu", OMP_NUM_THREADS="1")
    run = subprocess.run([python, "-c", _JAX_SCRIPT], input="\n".join(lines), text=True,
                         capture_output=True, env=env, timeout=3600)
    if run.returncode:
        raise RuntimeError(f"the JAX run failed: {run.stderr[-500:]}")
    return [np.array(re) + 1j * np.array(im) for re, im in json.loads(run.stdout)]


def run_complex(points: int, start: int = 0, jax_python: str | None = None) -> dict:
    compared, problems, graded, skipped = 0, [], [], 0
    for seed in range(start, start + points):
        n, found, point = check_complex_point(seed)
        skipped += n == 0
        compared, problems = compared + n, problems + found
        if point:
            graded.append(point)
    jax_compared = 0
    if jax_python and graded:
        for point, want in zip(graded, jax_gradients(graded, jax_python)):
            jax_compared += 1
            if not _close(point["grad"], want, 1e-9):
                problems.append(f"{point['expr']} (seed {point['seed']}): grad "
                                f"{np.ravel(point['grad'])[:2]} != jax.grad {np.ravel(want)[:2]}")
    return {"points": points, "skipped (kink within reach)": skipped, "compared calls":
            compared + jax_compared, "against JAX": jax_compared, "mismatches": len(problems),
            "problems": problems}


def run_conformance() -> dict:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if here not in sys.path:
        sys.path.insert(0, here)
    import conformance
    problems, compared = [], 0
    for case in conformance.cases():
        compared += 1
        try:
            problem = conformance.check(case)
        except Exception as e:   # noqa: BLE001  (the harness's or pforjac's crash: a finding)
            problem = f"{case[2]}({case[3].label()}) on {case[4]}{list(case[5])}: crash {e!r}"
        if problem:
            problems.append(problem)
    problems += conformance.properties_problems()
    return {"compared calls": compared, "mismatches": len(problems), "problems": problems,
            "known differences": len(conformance.KNOWN)}
