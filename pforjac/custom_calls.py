"""The call primitives behind custom derivatives: `custom_jvp_call` and `custom_vjp_call`.

A user's function with its own derivative rule (`pforjac.custom_jvp`, `custom_vjp`,
`custom_gradient`, autograd's `primitive`) is applied as one equation of a call primitive.
Its inputs are the leaves of the differentiated arguments; its one parameter `rules` is
the key of a `CallRules` record (an int, so generated code and common-subexpression
elimination see a plain literal) holding the user's functions, flattened:

    fun(*xs) -> outs                       the primal (numpy or pforjac ops on Tensors)
    jvp(xs, ts) -> (outs, t_outs)          custom_jvp: the tangent rule
    fwd(*xs) -> (outs, residuals)          custom_vjp: the forward saving residuals
    bwd(residuals, cts) -> input cts       custom_vjp: the cotangent rule

The rules of the primitives are written on those functions, so they compose as any
other rule: a custom_jvp's vjp is the transpose of its (linear) tangent rule, taken by
reverse mode over the rule; a custom_vjp's jvp is the transpose of its (linear) cotangent
rule, taken the same way; Hessians differentiate the rules themselves. Under a tape,
`custom_vjp_call` runs `fwd` and returns the residuals as extra outputs (`residuals=True`)
for `bwd` to read; their own derivatives (second order) come from differentiating `fwd`.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
from typing import Callable

import numpy as np

from . import core, ops
from .forward import jvp_program
from .program import make_program
from .tensor import SymbolicTensor, Tensor, as_tensor, is_float

# (their generated checks' calls: custom_examples.py)
__all__ = ["CallRules", "custom_jvp_call_p", "custom_vjp_call_p", "register_rules",
           "rules_of", "clean_state"]

_records: dict[int, "CallRules"] = {}
_keys = itertools.count()
_lock = threading.Lock()


@contextlib.contextmanager
def clean_state():
    """No tape records and no trace takes the ops of the block: a user's function run for
    its values (an impl), or traced alone (a shape rule)."""
    state = core.current_state()
    saved = state.tapes, state.traces, state.lifting
    state.tapes, state.traces, state.lifting = [], [], None
    try:
        yield
    finally:
        state.tapes, state.traces, state.lifting = saved


def _avals_key(xs) -> tuple:
    return tuple((tuple(x.shape), np.dtype(x.dtype).str) for x in xs)


class CallRules:
    """A custom function's flattened functions; `layout(avals)` says how many of a call's
    outputs are primal outputs (the rest are residuals) and how they nest."""

    kind = "vjp"

    def __init__(self, name: str, fun: Callable, jvp: Callable | None = None,
                 fwd: Callable | None = None, bwd: Callable | None = None):
        self.name, self.fun, self.jvp, self.fwd, self.bwd = name, fun, jvp, fwd, bwd
        self.kind = "jvp" if jvp is not None else "vjp"
        self.layouts: dict[tuple, tuple] = {}    # avals -> (out_tree, n_out, res_tree)
        self.key = -1
        self.programs: dict[tuple, object] = {}   # (avals, residuals) -> Program or its error
        self.seen: dict[tuple, list] = {}         # (avals, residuals) -> output avals, eager
        self.batched: dict[int, "CallRules"] = {}    # n -> mapped (custom_batching.py)

    def __repr__(self) -> str:
        return f"<custom_{self.kind} {self.name} #{self.key}>"

    # -- running the user's functions, flat ----------------------------------------------
    def run(self, xs, residuals: bool) -> list:
        """The call's outputs: fun's, or with `residuals` fwd's outputs and residuals."""
        if residuals:
            outs, res = self.fwd(*xs)
            return list(outs) + list(res)
        return list(self.fun(*xs))

    def out_avals(self, avals, residuals: bool) -> list[tuple]:
        """The outputs' (shape, dtype): from the primal traced once per input avals (no
        tape, no trace), or, for a primal that can't be traced (a solver on numpy values),
        as an earlier eager call with inputs of these shapes gave them."""
        try:
            program = self.traced(avals, residuals)
        except TypeError:
            key = _avals_key(avals)
            seen = self.seen.get((key, residuals))
            if seen is None and not residuals and (key, True) in self.seen:
                seen = self.seen[(key, True)][:self.layouts[key][1]]   # fwd's, less residuals
            if seen is None:
                raise
            return seen
        return [(tuple(v.shape), v.dtype) for v in program.outputs]

    def traced(self, avals, residuals: bool):
        key = (_avals_key(avals), residuals)
        if key not in self.programs:
            fn = (lambda *xs: self.run(xs, True)) if residuals else (lambda *xs: self.run(xs, False))
            with clean_state():
                try:
                    self.programs[key] = make_program(fn, [(a.shape, a.dtype) for a in avals])
                except Exception as e:  # noqa: BLE001  (kept: the error is raised each time)
                    self.programs[key] = TypeError(
                        f"custom_{self.kind} function '{self.name}' could not be traced with "
                        f"symbolic inputs of shapes {[tuple(a.shape) for a in avals]} ({e}); "
                        f"inside pforjac.function, pfor or forward mode its primal must be "
                        f"written with pforjac ops or numpy on Tensors, or have been called "
                        f"once eagerly (under a tape, or at top level through pforjac's "
                        f"transforms) with inputs of these shapes")
        program = self.programs[key]
        if isinstance(program, Exception):
            raise program
        return program

    def layout(self, xs) -> tuple:
        try:
            return self.layouts[_avals_key(xs)]
        except KeyError:
            raise RuntimeError(f"custom_{self.kind} '{self.name}': no call with inputs "
                               f"{_avals_key(xs)} was seen") from None


def register_rules(rules: CallRules) -> CallRules:
    with _lock:
        rules.key = next(_keys)
        _records[rules.key] = rules
    return rules


def rules_of(key: int) -> CallRules:
    return _records[key]


# -- the primitives ---------------------------------------------------------------------------
def _impl(*arrays, rules: int, residuals: bool = False):
    rec = _records[rules]
    xs = [Tensor._from_array(np.asarray(a)) for a in arrays]
    with clean_state():
        outs = rec.run(xs, residuals)
    outs = [np.asarray(o.numpy() if isinstance(o, Tensor) else o) for o in outs]
    rec.seen[(_avals_key(xs), residuals)] = [(o.shape, o.dtype) for o in outs]
    return outs


def _shape(*avals, rules: int, residuals: bool = False):
    return _records[rules].out_avals(avals, residuals)


custom_jvp_call_p = core.new_primitive(
    "custom_jvp_call", _impl, _shape, multiple_results=True, may_alias=True)
custom_vjp_call_p = core.new_primitive(
    "custom_vjp_call", _impl, _shape, multiple_results=True, may_alias=True)


def _zeros(xs) -> list:
    return [ops.zeros_like(x) for x in xs]


def _known_zero(t) -> bool:
    """A cotangent the tape filled in for an output nothing reads (zeros_like)."""
    if t is None:
        return True
    if isinstance(t, SymbolicTensor):
        return t.made_by == "zeros_like"
    return not np.any(t._value)


def _transpose(linear: Callable, at: list, cotangents: list) -> list:
    """The transpose of the linear map `linear(at-shaped values) -> list`, applied to
    `cotangents` (None: zero), by reverse mode over `linear` at zero."""
    from .tape import GradientTape
    seeds = _zeros(at)
    floats = [s for s in seeds if is_float(s.dtype)]
    with GradientTape() as tape:          # (gradient inside the block: an image that is a
        tape.watch(floats)                # constant is unconnected, not refused)
        images = linear(seeds)
        pairs = [(y, c) for y, c in zip(images, cotangents)
                 if y is not None and c is not None and is_float(as_tensor(y).dtype)]
        grads = iter(tape.gradient([y for y, _ in pairs], floats,
                                   output_gradients=[c for _, c in pairs]) if pairs
                     else [None] * len(floats))
    return [next(grads) if is_float(s.dtype) else None for s in seeds]


# custom_jvp: the jvp rule is the user's; the vjp rule transposes it.
def _jvp_of_custom_jvp(tangents, ans, *xs, rules: int, residuals: bool = False):
    rec = _records[rules]
    ts = [ops.zeros_like(x) if t is None else t for x, t in zip(xs, tangents)]
    return list(rec.jvp(list(xs), ts)[1])


def _vjp_of_custom_jvp(g, ans, *xs, rules: int, residuals: bool = False):
    rec = _records[rules]
    return _transpose(lambda ts: list(rec.jvp(list(xs), ts)[1]), list(xs), list(g))


core.defjvp_all(custom_jvp_call_p, _jvp_of_custom_jvp)
core.defvjp_all(custom_jvp_call_p, _vjp_of_custom_jvp)


# custom_vjp: the vjp rule is the user's; the jvp rule transposes it.
def _split(rec: CallRules, xs, ans, residuals: bool):
    """(primal outputs, residuals) of a call: its own outputs, or fwd run again."""
    n = rec.layout(xs)[1]
    if residuals:
        return list(ans[:n]), list(ans[n:])
    outs, res = rec.fwd(*xs)
    return list(outs), list(res)


def _vjp_of_custom_vjp(g, ans, *xs, rules: int, residuals: bool = False):
    rec = _records[rules]
    n = rec.layout(xs)[1]
    _, res = _split(rec, xs, ans, residuals)
    cts = _checked_cts(rec, list(rec.bwd(res, list(g[:n]))), xs)
    g_res = list(g[n:]) if residuals else []
    if not all(_known_zero(c) for c in g_res):   # second order: residuals depend on xs too
        more = _residual_vjp(rec, xs, g_res)
        cts = [b if a is None else a if b is None else a + b for a, b in zip(cts, more)]
    return cts


def _checked_cts(rec: CallRules, cts: list, xs) -> list:
    for k, (ct, x) in enumerate(zip(cts, xs)):
        if ct is not None and tuple(np.shape(ct)) != tuple(x.shape):
            raise ValueError(f"the bwd rule of custom_vjp function '{rec.name}' returned a "
                             f"cotangent of shape {tuple(np.shape(ct))} for input {k} of shape "
                             f"{tuple(x.shape)}; sum it over the broadcast axes")
    return cts


def _residual_vjp(rec: CallRules, xs, g_res) -> list:
    from .tape import GradientTape
    from .ops.shape import reshape_p
    xs = [reshape_p.bind(x, shape=tuple(x.shape)) for x in xs]   # distinct, fresh sources
    floats = [x for x in xs if is_float(x.dtype)]
    with GradientTape() as tape:
        tape.watch(floats)
        _, res = rec.fwd(*xs)
        pairs = [(r, c) for r, c in zip(res, g_res) if is_float(as_tensor(r).dtype)]
        grads = iter(tape.gradient([r for r, _ in pairs], floats,
                                   output_gradients=[c for _, c in pairs]))
    return [next(grads) if is_float(x.dtype) else None for x in xs]


def _jvp_of_custom_vjp(tangents, ans, *xs, rules: int, residuals: bool = False):
    rec = _records[rules]
    outs, res = _split(rec, xs, ans, residuals)
    t_outs = _transpose(lambda gs: list(rec.bwd(res, gs)), outs, list(tangents))
    if not residuals:
        return t_outs
    program = rec.traced(xs, True)
    _, t_all = jvp_program(program, list(xs), list(tangents))
    return t_outs + list(t_all[len(outs):])


core.defjvp_all(custom_vjp_call_p, _jvp_of_custom_vjp)
core.defvjp_all(custom_vjp_call_p, _vjp_of_custom_vjp)
