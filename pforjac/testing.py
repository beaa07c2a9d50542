"""Checking tools for ops and converters: the bar every op, built-in or added, is held to.

- `check_grads(f, inputs)`: reverse mode (GradientTape) and forward mode (jvp)
  against central finite differences in float64, to second order by default.
- `check_converter(op, *example_inputs)`: the op's pfor converter over every mix
  of stacked and unstacked inputs, against stacking the per-iteration results.
- `check_primitive(op)`: both, and the shape rule, on the examples the op declares
  (or, for an elementwise op, on inputs drawn from its declared domain).
- `check_degenerate(f, degenerate_matrices(n))`: first and second derivatives at repeated
  eigenvalues and singular values, rank-deficient and ill-conditioned matrices against
  central differences; NaN passes only where the caller says the derivative is undefined.
- `isolated_registries()`: undo every op and rule registered inside a block
  (for tests that declare ops).

Example:
    >>> import numpy as np
    >>> import pforjac as pj
    >>> from pforjac.testing import check_converter, check_grads
    >>> check_grads(lambda x, y: pj.sin(x) * y, (np.array([0.3, 1.2]), np.array([2.0, -1.0])))
    >>> check_converter("multiply", np.array([1., 2.]), np.array([3., 4.]))
"""
from __future__ import annotations

import contextlib
import itertools
from typing import Callable, Sequence

import numpy as np

from . import core
from .tensor import Tensor, as_tensor, constant, is_float
from .tree import tree_flatten
from ._derivatives import float_outputs as _float_outputs, jvp as _jvp, vjp as _vjp

__all__ = ["check_grads", "check_converter", "check_primitive", "examples_of", "sample",
           "numerical_jvp", "isolated_registries", "check_degenerate", "degenerate_matrices"]


# -- check_grads -------------------------------------------------------------------------

def check_grads(f: Callable, inputs, order: int = 2, modes: Sequence[str] = ("rev", "fwd"),
                eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-5, seed: int = 0) -> None:
    """Checks `f`'s derivatives up to `order` against central finite differences.

    Inputs are converted to float64. For each input separately, along a random
    direction `v`: forward mode checks `jvp(f, x, v)` against
    `(f(x + eps v) - f(x - eps v)) / (2 eps)`; reverse mode checks `<vjp(u), v>`
    against `<u, that difference>` for a random output cotangent `u`. Order 2
    repeats both checks on the functions `x -> vjp(u)` and `x -> jvp(v)` (so
    rev-over-rev, fwd-over-rev, rev-over-fwd and fwd-over-fwd).

    Args:
        f: a function of tensors returning a tensor or a nested structure of them.
        inputs: one array-like, or a tuple/list of them (one per argument of `f`).
        order: how many times to differentiate (1 or 2, or more).
        modes: "rev" (GradientTape) and/or "fwd" (forward-mode jvp).
        eps, rtol, atol: the finite-difference step and the tolerances.
        seed: seeds the random directions.

    Raises:
        AssertionError: naming the mode, the order, the input and the error.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> from pforjac.testing import check_grads
        >>> check_grads(pj.tanh, np.array([0.5, -1.0]))
    """
    modes = tuple(modes)
    for m in modes:
        if m not in ("rev", "fwd"):
            raise ValueError(f"check_grads: modes must hold 'rev' and/or 'fwd', got {m!r}")
    multiple = isinstance(inputs, (list, tuple))
    xs = [constant(np.asarray(x, dtype=np.float64)) for x in (inputs if multiple else [inputs])]
    rng = np.random.default_rng(seed)
    _check(f, xs, order, modes, _Tol(eps, rtol, atol), rng, "f")


class _Tol:
    def __init__(self, eps, rtol, atol):
        self.eps, self.rtol, self.atol = eps, rtol, atol


def _check(f, xs, order, modes, tol, rng, label) -> None:
    if order < 1:
        return
    if "fwd" in modes:
        _check_fwd(f, xs, tol, rng, label, order)
    if "rev" in modes:
        _check_rev(f, xs, tol, rng, label, order)
    if order == 1:
        return
    if "rev" in modes:
        us = [_random_like(y, rng) for y in _float_outputs(f, xs)]
        _check(lambda *a: _vjp(f, list(a), us), xs, order - 1, modes, tol, rng, f"rev({label})")
    if "fwd" in modes:
        vs = [_random_like(x, rng) for x in xs]
        _check(lambda *a: _jvp(f, list(a), vs), xs, order - 1, modes, tol, rng, f"fwd({label})")


def _random_like(x: Tensor, rng) -> Tensor:
    return constant(rng.standard_normal(x.shape).astype(np.float64))


def numerical_jvp(f: Callable, xs: Sequence[Tensor], vs: Sequence, eps: float = 1e-6) -> list:
    """Central differences of `f` at `xs` along `vs` (None = zero): one array per float output."""
    def at(sign):
        shifted = [x if v is None else constant(np.asarray(x.numpy()) + sign * eps * np.asarray(v))
                   for x, v in zip(xs, vs)]
        return [np.asarray(y.numpy(), np.float64) for y in _float_outputs(f, shifted)]
    return [(p - m) / (2 * eps) for p, m in zip(at(1.0), at(-1.0))]


def _only(k: int, v, n: int) -> list:
    return [v if j == k else None for j in range(n)]


def _check_fwd(f, xs, tol, rng, label, order) -> None:
    for k, x in enumerate(xs):
        v = _random_like(x, rng)
        vs = [v if j == k else constant(np.zeros(xj.shape)) for j, xj in enumerate(xs)]
        got = [t.numpy() for t in _jvp(f, xs, vs)]
        want = numerical_jvp(f, xs, _only(k, v, len(xs)), tol.eps)
        for j, (g, w) in enumerate(zip(got, want)):
            _assert_close(g, w, tol, f"check_grads: forward mode on {_what(label)}: the "
                          f"jvp w.r.t. input {k} (shape {tuple(x.shape)}) disagrees with central "
                          f"finite differences in output {j} (shape {tuple(w.shape)})")


def _check_rev(f, xs, tol, rng, label, order) -> None:
    us = [_random_like(y, rng) for y in _float_outputs(f, xs)]
    cts = _vjp(f, xs, us)
    for k, x in enumerate(xs):
        v = _random_like(x, rng)
        num = numerical_jvp(f, xs, _only(k, v, len(xs)), tol.eps)
        want = sum(float(np.sum(u.numpy() * d)) for u, d in zip(us, num))
        scale = sum(float(np.sum(np.abs(u.numpy() * d))) for u, d in zip(us, num))
        got = float(np.sum(cts[k].numpy() * v.numpy()))
        if not abs(got - want) <= tol.atol + tol.rtol * scale:
            raise AssertionError(
                f"check_grads: reverse mode on {_what(label)}: the vjp w.r.t. input "
                f"{k} (shape {tuple(x.shape)}) disagrees with central finite differences along a "
                f"random direction v: <vjp(u), v> = {got!r}, <u, J v> by finite differences = "
                f"{want!r} (rtol={tol.rtol}, atol={tol.atol})")


def _what(label: str) -> str:
    order = label.count("(") + 1
    return f"{label} (derivative order {order}; rev(f)/fwd(f) are f's vjp/jvp as functions of x)" \
        if order > 1 else f"{label} (derivative order 1)"


def _assert_close(got, want, tol, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {got.shape}, expected {want.shape}")
    err = np.abs(got - want)
    bad = err > tol.atol + tol.rtol * np.abs(want)
    if np.any(bad):
        at = np.unravel_index(np.argmax(np.where(bad, err, -1)), err.shape) if err.ndim else ()
        raise AssertionError(f"{what}: at index {tuple(int(i) for i in at)} got {got[at]:.10g}, "
                             f"finite differences give {want[at]:.10g} (rtol={tol.rtol}, "
                             f"atol={tol.atol}; {int(bad.sum())} of {bad.size} entries off)")


# -- check_converter ---------------------------------------------------------------------

def check_converter(op, *example_inputs, n: int = 3, rtol: float = 1e-5, atol: float = 1e-6,
                    iterations: Sequence[Sequence] | None = None,
                    stackable: Sequence[bool] | None = None, **attrs) -> None:
    """Checks `op`'s pfor converter against stacking its per-iteration results.

    From each example input (one iteration's value) it makes `n` different
    per-iteration values (rolled and, for floats, scaled towards zero, which keeps
    them in the op's domain), then for every mix of stacked and unstacked inputs
    (at least one stacked) calls the converter as the pfor driver would, both on
    concrete tensors and traced into a Program, and compares with binding the op
    once per iteration and stacking the results.

    Args:
        op: an op from `pforjac.extend.defop`, a Primitive, or an op name.
        example_inputs: one iteration's inputs (arrays or tensors).
        n: the number of iterations.
        rtol, atol: tolerances for float outputs (others must match exactly).
        iterations: optionally, the per-iteration values to stack, one list of `n`
            arrays per input, instead of the ones made from the examples (which
            then serve only as the unstacked values).
        stackable: optionally, per input, whether it may be stacked (default: all).
        attrs: the op's static parameters.

    Raises:
        AssertionError: naming the op, the stacked mix, the shapes and what differed.

    Example:
        >>> import numpy as np
        >>> from pforjac.testing import check_converter
        >>> check_converter("sum", np.ones((2, 3)), axes=(1,), keepdims=False)
    """
    from .extend import primitive_of
    from .pfor import converter_for
    prim = primitive_of(op)
    conv = converter_for(prim)
    if conv is None:
        raise AssertionError(f"check_converter: op '{prim.name}' has no pfor converter; register "
                             f"one with @pforjac.extend.register_converter('{prim.name}')")
    xs = [as_tensor(x) for x in example_inputs]
    if iterations is None:
        per_iter = [_iterations(x, n) for x in xs]
    else:
        per_iter = [[as_tensor(v) for v in vals] for vals in iterations]
        if len(per_iter) != len(xs) or any(len(p) != n for p in per_iter):
            raise ValueError(f"check_converter: iterations needs one list of n={n} values per "
                             f"input ({len(xs)} inputs)")
    allowed = [True] * len(xs) if stackable is None else list(stackable)
    for mix in itertools.product((False, True), repeat=len(xs)):
        if any(mix) and all(a or not m for a, m in zip(allowed, mix)):
            _check_mix(prim, conv, xs, per_iter, mix, n, (rtol, atol), attrs)


def _iterations(x: Tensor, n: int) -> list[Tensor]:
    """`n` distinct values shaped like `x`, staying in its domain."""
    a = np.asarray(x.numpy())
    out = []
    for k in range(n):
        v = np.roll(a.ravel(), k).reshape(a.shape)
        if is_float(a.dtype):
            v = (v / (1.0 + 0.1 * k)).astype(a.dtype)
        out.append(constant(v))
    return out


def _check_mix(prim, conv, xs, per_iter, mix, n, tols, attrs) -> None:
    from . import ops
    from .program import make_program, run_program
    args = [ops.stack(p) if s else x for x, p, s in zip(xs, per_iter, mix)]
    what = _mix_str(prim, xs, mix, n, attrs)
    expected = _stacked_per_iteration(prim, xs, per_iter, mix, n, attrs)
    try:
        got = _outputs(prim, n, *conv(n, list(args), list(mix), **attrs))
    except Exception as e:
        raise AssertionError(f"{what}: the converter raised {type(e).__name__}: {e}") from e
    _compare(got, expected, tols, what)
    try:
        program = make_program(lambda *a: _outputs(prim, n, *conv(n, list(a), list(mix), **attrs)),
                               [(tuple(a.shape), a.dtype) for a in args])
        traced = run_program(program, args)
    except Exception as e:
        raise AssertionError(f"{what}: traced with symbolic inputs, the converter raised "
                             f"{type(e).__name__}: {e}; write converters with pforjac ops, "
                             f"not numpy") from e
    _compare(traced, expected, tols, what + " (traced)")


def _outputs(prim, n: int, out, out_stacked: bool) -> list[Tensor]:
    """The converter's outputs, broadcast to stacked if it said they were not."""
    from .pfor import _stack_output
    outs = list(out) if prim.multiple_results else [out]
    return [_stack_output(as_tensor(o), bool(out_stacked), n) for o in outs]


def _stacked_per_iteration(prim, xs, per_iter, mix, n, attrs) -> list[np.ndarray]:
    results = []
    for k in range(n):
        outs = core.bind(prim, *[p[k] if s else x for x, p, s in zip(xs, per_iter, mix)], **attrs)
        results.append(list(outs) if prim.multiple_results else [outs])
    return [np.stack([np.asarray(r[j].numpy()) for r in results]) for j in range(len(results[0]))]


def _mix_str(prim, xs, mix, n, attrs) -> str:
    flags = ", ".join(f"input {k} {'stacked' if s else 'unstacked'}" for k, s in enumerate(mix))
    shapes = ", ".join(f"{x.dtype.name}{tuple(x.shape)}" for x in xs)
    params = "".join(f", {k}={v!r}" for k, v in attrs.items())
    return (f"check_converter: the pfor converter of op '{prim.name}' is wrong for the stacked mix "
            f"({flags}) [stacked={tuple(mix)}], n={n}, per-iteration inputs ({shapes}){params}")


def _compare(got, expected, tols, what: str) -> None:
    if len(got) != len(expected):
        raise AssertionError(f"{what}: {len(got)} outputs, expected {len(expected)}")
    for j, (g, e) in enumerate(zip(got, expected)):
        g = np.asarray(g.numpy())
        if g.shape != e.shape or g.dtype != e.dtype:
            raise AssertionError(f"{what}: output {j} is {g.dtype.name}{g.shape}, stacking the "
                                 f"per-iteration results gives {e.dtype.name}{e.shape}")
        if is_float(e.dtype):
            ok = np.allclose(g, e, rtol=tols[0], atol=tols[1], equal_nan=True)
        else:
            ok = np.array_equal(g, e)
        if not ok:
            err = np.abs(g.astype(np.float64) - e.astype(np.float64))
            at = np.unravel_index(np.nanargmax(err), err.shape) if err.size else ()
            raise AssertionError(f"{what}: output {j} differs from stacking the per-iteration "
                                 f"results; at index {tuple(int(i) for i in at)} the converter "
                                 f"gives {g[at].item()!r}, per iteration {e[at].item()!r}")


# -- check_primitive: every rule of one primitive, from the facts it declares -------------------

_BROADCAST_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)),
                    ((), (2, 3)), ((2, 3), ())]
_WHERE_SHAPES = [((2, 3), (2, 3), (3,)), ((3,), (2, 1), ()), ((), (2, 3), (2, 3))]


def sample(domain: str, shape, rng) -> np.ndarray:
    """Values of `shape` from one of `core.DOMAINS`, away from kinks and poles."""
    shape = tuple(shape)
    if domain == "real":
        return rng.uniform(-1.5, 1.5, shape)
    if domain == "positive":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "unit":
        return rng.uniform(-0.8, 0.8, shape)
    if domain == "above_one":
        return rng.uniform(1.2, 3.0, shape)
    if domain == "nonzero":
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.5, 2.0, shape)
    if domain == "bool":
        return rng.random(shape) < 0.5
    if domain in ("int", "index"):
        return rng.integers(0, 3, shape)
    raise ValueError(f"unknown domain {domain!r}; choose from {core.DOMAINS}")


def examples_of(prim: core.Primitive, seed: int = 0) -> list:
    """The calls `check_primitive` makes: `prim.examples(rng)`, or for an elementwise
    primitive with a `domain`, its inputs at broadcasting shapes."""
    rng = np.random.default_rng(seed)
    if prim.examples is not None:
        return list(prim.examples(rng))
    if not (prim.elementwise and prim.domain):
        raise AssertionError(f"primitive '{prim.name}' has no examples for its generated checks: "
                             f"declare them next to its rules (@core.defexamples, or "
                             f"examples= in extend.defop), or a domain if it is elementwise")
    arity = len(prim.domain)
    shapes = {1: [((2, 3),), ((),)], 2: _BROADCAST_PAIRS, 3: _WHERE_SHAPES}[arity]
    return [core.Example(*(sample(d, s, rng) for d, s in zip(prim.domain, ss))) for ss in shapes]


def check_primitive(op, order: int = 2, seed: int = 0) -> None:
    """Checks every rule of `op` on each of its examples (`examples_of`): the shape rule
    against the forward, the vjp and jvp rules against central differences in float64 to
    `order` (for differentiable ops), and the pfor converter over every mix of stacked
    inputs. pforjac's own suite runs it for every registered primitive; run it for yours.

    Example:
        >>> from pforjac.testing import check_primitive
        >>> check_primitive("tanh")
    """
    prim = core.primitive_of(op)
    for k, ex in enumerate(examples_of(prim, seed)):
        where = f"check_primitive('{prim.name}'), example {k} {ex!r}"
        _check_shape_rule(prim, ex, where)
        floats = [j for j, a in enumerate(ex.args) if np.asarray(a).dtype.kind == "f"
                  and _has_gradient(prim, j)]
        if prim.differentiable and floats:
            _check_example_grads(prim, ex, floats, order, seed + k, where)
        check_converter(prim, *ex.args, stackable=ex.stackable, iterations=ex.iterations,
                        **ex.params)


def _has_gradient(prim, j: int) -> bool:
    """Input j is not declared gradient-free (`None` among the per-input vjp rules)."""
    rules = core.vjp_rules.get(prim)
    return not (isinstance(rules, tuple) and j < len(rules) and rules[j] is None)


def _check_shape_rule(prim, ex, where: str) -> None:
    arrays = [np.asarray(a) for a in ex.args]
    want = core.abstract_eval(prim, arrays, ex.params)
    outs = core.impl_rules[prim](*arrays, **ex.params)
    outs = list(outs) if prim.multiple_results else [outs]
    got = [(tuple(np.shape(o)), np.asarray(o).dtype) for o in outs]
    if got != want:
        raise AssertionError(f"{where}: the forward gives {got}, the shape rule says {want}")


def _check_example_grads(prim, ex, floats: list, order: int, seed: int, where: str) -> None:
    def f(*xs):
        args = list(ex.args)
        for j, x in zip(floats, xs):
            args[j] = x
        return core.bind(prim, *args, **ex.params)
    modes = ("rev", "fwd") if prim in core.jvp_rules else ("rev",)
    try:
        check_grads(f, tuple(np.asarray(ex.args[j], np.float64) for j in floats), order=order,
                    modes=modes, seed=seed)
    except AssertionError as e:
        raise AssertionError(f"{where}: {e}") from None


# -- isolating registrations ---------------------------------------------------------------

@contextlib.contextmanager
def isolated_registries():
    """Every primitive, rule, converter and once-per-process warning registered inside
    the block is forgotten at its end (tests that declare ops use this)."""
    from .coverage import declared_missing
    from .extend import declared_ops
    from .pfor import _warned, converters
    from .structure import structured_converters
    tables = [core.primitives, core.impl_rules, core.shape_rules, core.vjp_rules,
              core.jvp_rules, converters, structured_converters, declared_ops, declared_missing]
    saved = [dict(t) for t in tables]
    warned = set(_warned)
    try:
        yield
    finally:
        for table, copy in zip(tables, saved):
            table.clear()
            table.update(copy)
        _warned.clear()
        _warned.update(warned)
        core.rules_changed("")             # code compiled under the block's rules goes


from .degenerate_check import check_degenerate, degenerate_matrices  # noqa: E402
