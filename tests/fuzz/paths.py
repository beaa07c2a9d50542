"""Every way pforjac computes a derivative of one program, each call recorded as a `Call`.

Paths (names as reports give them):

    jacobian            tape.jacobian, eager pfor (the loop cache cleared first for half the
                        programs: uncached; else code compiled for an earlier one may run)
    while_loop          tape.jacobian(experimental_use_pfor=False)
    parallel_iterations tape.jacobian(parallel_iterations=k), k < the number of rows
    loopcache#2, #3     the same eager Jacobian again at nearby points: built, then reused
    function#1..#3      pforjac.function around the whole Jacobian, three points
    fn.jacobian         pj.jacobian (row loop); fn.jacobian_vec: vectorize=True (with
                        parallel_iterations=k on odd seeds)
    forward_mode        pj.jacobian(strategy="forward-mode", vectorize=True)
    vjp, jvp            pj.vjp / pj.jvp with a fixed random vector
    hessian, hvp        pj.hessian (reverse over reverse, vectorized or not, or forward
                        over reverse) and pj.hvp of s(x) = sum(w * f(x))
    batch_jacobian ...  for batch programs: eager pfor, while-loop, parallel_iterations,
                        strict=True, loop cache #2/#3 and pforjac.function

A call's `point` is the x variant it ran at (interp.x_value), or "special" / "finite".
Warnings are recorded (all of them, each call anew), exceptions become the call's error.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

import pforjac as pj
from pforjac.compiled import loopcache

from . import interp
from .ops import OPS
from .oracle import hessian_weights


@dataclass
class Call:
    path: str
    kind: str                   # jac, batch, vjp, jvp, hess, hvp
    point: object               # x variant (0, 1, 2), "special" or "finite"
    value: np.ndarray | None = None
    error: str | None = None
    warnings: list = field(default_factory=list)
    vector: np.ndarray | None = None    # v of vjp / jvp / hvp


def eager_only(program: dict) -> bool:
    """The program reads a value into Python (float(t)): it has no trace, so the paths that
    trace it (pforjac.function, forward mode, jvp) are not run (they raise, as tf.function's
    would)."""
    return any(OPS[line["op"]].eager_only for line in program["lines"])


def program_fn(program: dict):
    return lambda x: interp.run_pj(program, pj, x)[-1]


def call(path, kind, point, fn, *args, vector=None) -> Call:
    c = Call(path, kind, point, vector=vector)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", ".*encountered in", RuntimeWarning)
        try:
            with np.errstate(all="ignore"):
                out = fn(*args)
            c.value = None if out is None else np.asarray(out.numpy() if hasattr(out, "numpy") else out)
        except Exception as e:      # noqa: BLE001  (a path that raises is a finding)
            c.error = f"{type(e).__name__}: {e}"[:600]
    c.warnings = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    return c


def _tape_call(method: str, f, **kw):
    def jac(x):
        with pj.GradientTape(persistent=kw.get("experimental_use_pfor") is False) as tape:
            tape.watch(x)
            y = f(x)
        return getattr(tape, method)(y, x, unconnected_gradients="zero", **kw)
    return jac


def tape_jacobian(f, **kw):
    return _tape_call("jacobian", f, **kw)


def tape_batch_jacobian(f, **kw):
    return _tape_call("batch_jacobian", f, **kw)


def _x(program, variant):
    return pj.constant(interp.x_value(program, variant))


def _chunk(rng, n: int) -> int:
    return int(rng.integers(1, n)) if n > 1 else 1


def jacobian_paths(program: dict, rng, n_out: int, light: bool = False) -> list[Call]:
    """The Jacobian paths at the base point and nearby points (see the module docstring)."""
    f = program_fn(program)
    x0 = _x(program, 0)
    if rng.random() < 0.5:      # else structures compiled for earlier programs may serve it
        loopcache.clear_cache()
    calls = [call("jacobian", "jac", 0, tape_jacobian(f), x0),
             call("while_loop", "jac", 0, tape_jacobian(f, experimental_use_pfor=False), x0)]
    if light:
        return calls
    k = _chunk(rng, n_out)
    calls.append(call(f"parallel_iterations={k}", "jac", 0, tape_jacobian(f, parallel_iterations=k), x0))
    for variant in (1, 2):
        calls.append(call(f"loopcache#{variant + 1}", "jac", variant, tape_jacobian(f),
                          _x(program, variant)))
    if eager_only(program):
        return calls
    compiled = pj.function(tape_jacobian(f))
    for variant in (0, 1, 2):
        calls.append(call(f"function#{variant + 1}", "jac", variant, compiled, _x(program, variant)))
    return calls


def functional_paths(program: dict, rng, n_out: int) -> list[Call]:
    f = program_fn(program)
    x0 = _x(program, 0)
    k = _chunk(rng, int(np.prod(program["x_shape"], dtype=int)) or 1)
    chunk = {"parallel_iterations": k} if rng.random() < 0.5 else {}
    tag = f"(parallel_iterations={k})" if chunk else ""
    calls = [call("fn.jacobian", "jac", 0, lambda x: pj.jacobian(f, x), x0),
             call("fn.jacobian_vec" + tag, "jac", 0,
                  lambda x: pj.jacobian(f, x, vectorize=True, **chunk), x0)]
    y_shape = tuple(np.shape(interp.numpy_f(program, program["dtype"])(interp.x_value(program))))
    v = np.random.default_rng(7).uniform(-1, 1, y_shape).astype(program["dtype"])
    calls.append(call("vjp", "vjp", 0, lambda x: pj.vjp(f, x, pj.constant(v))[1], x0, vector=v))
    if eager_only(program):
        return calls
    calls.append(call("forward_mode" + tag, "jac", 0,
                      lambda x: pj.jacobian(f, x, strategy="forward-mode", vectorize=True, **chunk), x0))
    u = np.random.default_rng(8).uniform(-1, 1, program["x_shape"]).astype(program["dtype"])
    calls.append(call("jvp", "jvp", 0, lambda x: pj.jvp(f, x, pj.constant(u))[1], x0, vector=u))
    return calls


def hessian_paths(program: dict, rng) -> list[Call]:
    f = program_fn(program)
    x0 = _x(program, 0)
    y_shape = tuple(np.shape(interp.numpy_f(program, program["dtype"])(interp.x_value(program))))
    w = pj.constant(hessian_weights(y_shape).astype(program["dtype"]))
    s = lambda x: pj.sum(w * f(x))      # noqa: E731
    how = int(rng.integers(2 if eager_only(program) else 3))     # (forward over reverse traces)
    options = [{}, {"vectorize": True}, {"vectorize": True, "outer_jacobian_strategy": "forward-mode"}][how]
    name = ["hessian", "hessian(vectorize)", "hessian(forward-over-reverse)"][how]
    u = np.random.default_rng(9).uniform(-1, 1, program["x_shape"]).astype(program["dtype"])
    return [call(name, "hess", 0, lambda x: pj.hessian(s, x, **options), x0),
            call("hvp", "hvp", 0, lambda x: pj.hvp(s, x, pj.constant(u))[1], x0, vector=u)]


def batch_paths(program: dict, rng, row_size: int) -> list[Call]:
    f = program_fn(program)
    x0 = _x(program, 0)
    if rng.random() < 0.5:
        loopcache.clear_cache()
    k = _chunk(rng, row_size)
    calls = [call("batch_jacobian", "batch", 0, tape_batch_jacobian(f), x0),
             call("batch_jacobian.while_loop", "batch", 0,
                  tape_batch_jacobian(f, experimental_use_pfor=False), x0),
             call(f"batch_jacobian.parallel_iterations={k}", "batch", 0,
                  tape_batch_jacobian(f, parallel_iterations=k), x0),
             call("batch_jacobian.strict", "batch", 0, tape_batch_jacobian(f, strict=True), x0)]
    for variant in (1, 2):
        calls.append(call(f"batch_jacobian.loopcache#{variant + 1}", "batch", variant,
                          tape_batch_jacobian(f), _x(program, variant)))
    if eager_only(program):
        return calls
    compiled = pj.function(tape_batch_jacobian(f))
    for variant in (0, 1):
        calls.append(call(f"batch_jacobian.function#{variant + 1}", "batch", variant, compiled,
                          _x(program, variant)))
    return calls


def special_paths(program: dict, rng, n_out: int) -> list[Call]:
    """At a source with special values: the uncached eager Jacobian, and the paths whose
    compiled code was built on finite values first (structure guards must catch the NaN)."""
    f = program_fn(program)
    finite = dict(program, special=None)
    xs = _x(program, 0)
    loopcache.clear_cache()
    with loopcache.caching(False):
        calls = [call("jacobian", "jac", "special", tape_jacobian(f), xs)]
    calls.append(call("while_loop", "jac", "special", tape_jacobian(f, experimental_use_pfor=False), xs))
    k = _chunk(rng, n_out)
    calls.append(call(f"parallel_iterations={k}", "jac", "special",
                      tape_jacobian(f, parallel_iterations=k), xs))
    for variant in (0, 1):      # seen, built on finite values; then run on the special one
        call("loopcache(finite)", "jac", "finite", tape_jacobian(f), _x(finite, variant))
    calls.append(call("loopcache#3", "jac", "special", tape_jacobian(f), xs))
    if eager_only(program):
        return calls
    compiled = pj.function(tape_jacobian(f))
    call("function(finite)", "jac", "finite", compiled, _x(finite, 0))
    calls.append(call("function#2", "jac", "special", compiled, xs))
    return calls
