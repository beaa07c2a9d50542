"""Primitives, their rule tables, and the single dispatch function `bind`.

Every op in pforjac is a `Primitive`. Its rules live in plain dicts keyed by
the primitive (the converter registry, keyed by name, lives in `pfor.py`):

    impl_rules[p]   numpy forward:        impl(*arrays, **params) -> array(s)
    shape_rules[p]  shape/dtype rule:     shape(*avals, **params) -> (shape, dtype) or a list
    vjp_rules[p]    reverse rules:        one function per input, g -> input cotangent
    jvp_rules[p]    forward rule:         jvp(tangents, ans, *args, **params) -> output tangent

`bind(p, *args, **params)` is the one way an op is applied. It computes the op
eagerly with numpy, or appends it to the innermost active trace when one of
its inputs is a symbolic value of that trace; then every active
`GradientTape` at the same level that watches an input records it.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from .state import _state, current_state, trace_level  # noqa: F401  (re-exported)
from .tensor import Tensor, Variable, as_tensor

__all__ = ["Primitive", "Example", "defexamples", "DOMAINS", "bind", "impl_rules", "shape_rules", "vjp_rules", "jvp_rules",
           "defimpl", "defshape", "defvjp", "defvjp_all", "defjvp", "defjvp_all", "current_state"]


class Aval:
    """An abstract value: what shape rules see (a shape and a dtype, no data)."""

    def __init__(self, shape: tuple, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)


DOMAINS = ("real", "positive", "unit", "above_one", "nonzero", "bool", "int", "index")


class Primitive:
    """A named op. Its rules are in the rule tables; the facts about it, which analyses, the
    code generator and the generated checks read, are its attributes, set where it is
    declared (`new_primitive(..., elementwise=True)`, `_unary`, `extend.defop`):

    - `elementwise`: output entry k depends on input entries k only (numpy broadcasting).
    - `zero_preserving`: one input, and f(0) == 0 (a one-hot value stays one-hot).
    - `layout`: "free" (its values, and its C-ordered result, do not depend on its inputs'
      memory layout), "following" (values do not; the result is laid out like the
      input), or None (unknown: a product rounds by its operands' layout).
    - `may_alias`: the numpy forward may return an input or a view of one.
    - `domain`: for each input, where generated checks draw its values (see DOMAINS).
    - `examples`: `examples(rng) -> list[Example]`, the calls its generated checks make
      (elementwise ops with a `domain` need none: the checks broadcast shapes).
    - `pure_rules`: its rules read nothing but their arguments and parameters, so code
      compiled from them once stays right (the loop cache compiles a repeated eager
      Jacobian's backward pass and reuses it); pforjac's own ops' are.
    - `plain_forward`: None, or `plain_forward(x, c_ordered, **params)`, which for an input
      of x's shape and dtype, a numpy value (C-ordered if `c_ordered`), gives the numpy
      expression in `x` that the forward computes, `"np.add.reduce(x, 1)"`; None where it
      does more (generated code runs the expression, without the forward's checks).
    """

    def __init__(self, name: str, multiple_results: bool = False, differentiable: bool = True,
                 *, elementwise: bool = False, zero_preserving: bool = False,
                 layout: str | None = None, may_alias: bool = False,
                 domain: tuple | None = None, examples: Callable | None = None,
                 pure_rules: bool = True):
        if layout not in (None, "free", "following"):
            raise ValueError(f"primitive '{name}': layout must be None, 'free' or 'following', "
                             f"got {layout!r}")
        unknown = [d for d in domain or () if d not in DOMAINS]
        if unknown:
            raise ValueError(f"primitive '{name}': unknown input domain(s) {unknown}; "
                             f"choose from {DOMAINS}")
        self.name = name
        self.multiple_results = multiple_results
        self.differentiable = differentiable
        self.elementwise, self.zero_preserving = elementwise, zero_preserving
        self.layout, self.may_alias = layout, may_alias
        self.domain = None if domain is None else tuple(domain)
        self.examples = examples
        self.origin = "built-in"          # "extend" for ops declared by pforjac.extend.defop
        self.pure_rules = pure_rules
        self.plain_forward: Callable | None = None     # set where the op is declared

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args, **params):
        """Applies this primitive to `args` in the current context: `core.bind`."""
        if not _state.traces and _state.lifting is None:
            for a in args:        # eager, on plain Tensors (the common case): _bind_eager
                if type(a) is not Tensor or a._trace is not None:
                    break
            else:
                return _bind_eager(self, args, params)
        return _bind_in_context(self, args, params)


class Example:
    """One call of a primitive for its generated checks: inputs (arrays) and params.
    `stackable`: per input, whether pfor may see it stacked (default: all).
    `iterations`: per input, the 3 per-iteration values its converter check stacks, for
    inputs whose domain rolled copies leave (positive definite matrices); default: those."""

    def __init__(self, *args, stackable: tuple | None = None, iterations: list | None = None,
                 **params):
        self.args, self.params, self.iterations = args, params, iterations
        self.stackable = tuple(stackable) if stackable is not None else (True,) * len(args)

    def __repr__(self) -> str:
        shapes = ",".join("x".join(map(str, np.shape(a))) or "()" for a in self.args)
        shown = ";".join(f"{k}={v}" for k, v in self.params.items() if k != "dtype")
        return f"[{shapes}]" + (f"-{shown}" if shown else "")


def defexamples(prim: Primitive):
    """Decorator: `fn(rng) -> list[Example]` becomes `prim.examples` (once)."""
    def register(fn):
        if prim.examples is not None:
            raise ValueError(f"primitive '{prim.name}' already has examples")
        prim.examples = fn
        return fn
    return register


impl_rules: dict[Primitive, Callable] = {}
shape_rules: dict[Primitive, Callable] = {}
vjp_rules: dict[Primitive, tuple] = {}
jvp_rules: dict[Primitive, Callable] = {}
primitives: dict[str, Primitive] = {}
_registry_lock = threading.Lock()


_rule_listeners: list[Callable] = []
rules_generation = 0        # bumped on every registration: caches of generated code compare it


def on_rules_changed(fn: Callable) -> Callable:
    """Registers `fn(op_name, replaced)`, called after any rule, converter or primitive of
    `op_name` is (re)registered (`replaced`: the primitive itself was declared again), so
    caches built from the old rules (pforjac.compiled.loopcache) can drop them."""
    _rule_listeners.append(fn)
    return fn


def rules_changed(name: str, replaced: bool = False) -> None:
    global rules_generation
    with _registry_lock:
        rules_generation += 1
    for fn in list(_rule_listeners):
        fn(name, replaced)


def _register(table: dict, prim: Primitive, rule, kind: str, override: bool = False) -> None:
    if not isinstance(prim, Primitive):
        raise TypeError(f"a {kind} rule is registered for a Primitive, got "
                        f"{type(prim).__name__}; pforjac.extend.def{kind}/def{kind}_all also "
                        f"take the op defop returned, or its name")
    with _registry_lock:
        if prim in table and not override:
            raise ValueError(f"the {kind} rule of primitive '{prim.name}' is already registered; "
                             f"pass override=True to replace it")
        table[prim] = rule
    rules_changed(prim.name)


def register_once(table: dict, prims, value, what: str) -> None:
    """Puts `value` in `table` for each of `prims`, refusing them all if one is already
    there: the registries keyed by primitive that take no override (row-check rules,
    structured converters, sparsity rules, curvatures)."""
    with _registry_lock:
        taken = [prim.name for prim in prims if prim in table]
        if taken:
            raise ValueError(f"the {what} of primitive '{taken[0]}' is already registered")
        for prim in prims:
            table[prim] = value


def new_primitive(name: str, impl: Callable, shape: Callable, multiple_results: bool = False,
                  differentiable: bool = True, override: bool = False, **facts) -> Primitive:
    """Declares a primitive with its numpy forward, its shape rule and its facts (the
    keyword arguments of `Primitive`)."""
    with _registry_lock:
        if name in primitives and not override:
            raise ValueError(f"a primitive named '{name}' already exists; pick another name "
                             f"or pass override=True")
        replaced = name in primitives
        prim = Primitive(name, multiple_results, differentiable, **facts)
        primitives[name] = prim
        impl_rules[prim] = impl
        shape_rules[prim] = shape
    rules_changed(name, replaced)
    return prim


def primitive_named(name: str) -> Primitive:
    """The declared primitive called `name`, or a KeyError that says how to declare it."""
    try:
        return primitives[name]
    except KeyError:
        raise KeyError(f"no primitive named '{name}' is declared; declare it first "
                       f"(pforjac.extend.defop) and register its rules on the op it "
                       f"returns") from None


def primitive_of(op) -> Primitive:
    """The Primitive behind an op (`extend.defop`'s callable, which has `.prim`), a
    Primitive, or a declared op's name."""
    if isinstance(op, Primitive):
        return op
    if isinstance(op, str):
        return primitive_named(op)
    if isinstance(getattr(op, "prim", None), Primitive):
        return op.prim
    raise TypeError(f"expected an op returned by defop, a Primitive or an op name, "
                    f"got {type(op).__name__}")


def defimpl(prim: Primitive):
    def register(fn):
        _register(impl_rules, prim, fn, "impl")
        return fn
    return register


def defshape(prim: Primitive):
    def register(fn):
        _register(shape_rules, prim, fn, "shape")
        return fn
    return register


def defvjp(prim: Primitive, *per_input: Callable | None, override: bool = False) -> None:
    """One rule per input: `rule(g, ans, *args, **params) -> cotangent of that input`.

    `None` marks an input that has no gradient (an index, a condition).
    """
    _register(vjp_rules, prim, tuple(per_input), "vjp", override)


def defvjp_all(prim: Primitive, rule: Callable, override: bool = False) -> None:
    """One rule for all inputs (variadic ops): `rule(g, ans, *args, **params) -> list`."""
    _register(vjp_rules, prim, rule, "vjp", override)


def defjvp_all(prim: Primitive, rule: Callable, override: bool = False) -> None:
    """`rule(tangents, ans, *args, **params)`; a tangent is None where it is zero."""
    _register(jvp_rules, prim, rule, "jvp", override)


def _add_tangents(a, b):
    """The sum of two inputs' contributions: per output for a multiple-results op (lists
    whose entries may be None, a zero tangent)."""
    if isinstance(a, (list, tuple)):
        return [y if x is None else x if y is None else x + y for x, y in zip(a, b)]
    return a + b


def defjvp(prim: Primitive, *per_input: Callable | None, override: bool = False) -> None:
    """One linear rule per input: `rule(t, ans, *args, **params)`; contributions add up."""
    def rule(tangents, ans, *args, **params):
        out = None
        for fn, t in zip(per_input, tangents):
            if t is None or fn is None:
                continue
            term = fn(t, ans, *args, **params)
            out = term if out is None else _add_tangents(out, term)
        return out
    defjvp_all(prim, rule, override)


# --------------------------------------------------------------------------
# bind

def _innermost_trace(args):
    best = None
    for a in args:
        t = a._trace
        if t is not None:
            if not t.active:      # (any argument's: one from a finished trace of the same
                raise RuntimeError(   # level as the current one must not pass as a constant)
                    f"a symbolic value of a finished trace was used outside it ({t.describe()}); "
                    f"return values from the traced function instead of storing them")
            if best is None or t.level > best.level:
                best = t
    return best


def bind(prim: Primitive, *args, **params):
    """Applies `prim` to `args` in the current context and returns its output(s)."""
    return prim.bind(*args, **params)


def _bind_in_context(prim: Primitive, args: tuple, params: dict):
    """`bind` where a trace may take the op (or an input is not a plain Tensor yet)."""
    args = tuple(map(as_tensor, args))
    trace = _innermost_trace(args)
    lifting = _state.lifting
    if lifting is not None and (trace is None or trace.level < lifting.level) \
            and any(isinstance(a, Variable) for a in args):
        trace = lifting      # compiled functions read Variables when they run, not when traced
    if _state.tapes:
        trace = _trace_for_tapes(args, trace)
    if trace is None:
        outs = _eager(prim, args, params)
        level = 0
    else:
        outs = trace.add_equation(prim, args, params)
        level = trace.level
    if _state.tapes and prim.differentiable:
        for tape in _state.tapes:
            if tape._level == level:
                tape._record(prim, args, params, outs)
    return outs if prim.multiple_results else outs[0]


def _bind_eager(prim: Primitive, args: tuple, params: dict):
    """`bind` with no trace open and every input a plain Tensor: computed by the impl, and
    recorded by the tapes (level 0 all: a tape entered in a trace has ended with it); a tape
    that does not record it notes its outputs as made in its block (tensor._seen_made)."""
    try:
        if len(args) == 2:          # (no list comprehension, a frame of its own: most ops)
            result = impl_rules[prim](args[0]._value, args[1]._value, **params)
        elif len(args) == 1:
            result = impl_rules[prim](args[0]._value, **params)
        else:
            result = impl_rules[prim](*[a._value for a in args], **params)
    except KeyError:
        if prim not in impl_rules:
            raise NotImplementedError(f"primitive '{prim.name}' has no impl rule") from None
        raise
    except (ValueError, TypeError, IndexError) as e:
        raise _naming_op(e, prim, args, params) from None
    if prim.multiple_results:
        outs = [_fresh(r) for r in result]
    else:                         # (_fresh written out: one op in two is this)
        t = object.__new__(Tensor)
        arr = result if type(result) is np.ndarray else np.asarray(result)
        arr.setflags(write=False)
        t._value, t._handed, t._trace = arr, None, None
        outs = [t]
    tapes = _state.tapes
    if tapes:
        for tape in tapes:
            if prim.differentiable and not tape._level:
                tape._record(prim, args, params, outs)     # (notes unrecorded ones as made)
            else:
                for o in outs:
                    tape.note_made(o)
    return outs if prim.multiple_results else outs[0]


def _fresh(result) -> Tensor:
    """A Tensor of an impl's result, not yet noted as made by any tape."""
    t = object.__new__(Tensor)
    arr = result if type(result) is np.ndarray else np.asarray(result)
    arr.setflags(write=False)
    t._value, t._handed, t._trace = arr, None, None
    return t


def _trace_for_tapes(args, trace):
    """A tape opened inside a trace records that trace's ops only. An op on values it tracks
    that would run eagerly or in an outer trace (a closure constant the tape watches inside
    a compiled function or a pfor body) is traced at the tape's level instead, so the tape
    sees it (as its eager twin would)."""
    level = 0 if trace is None else trace.level
    for tape in _state.tapes:
        if level < tape._level <= len(_state.traces) and any(_tracks(tape, a) for a in args):
            level, trace = tape._level, _state.traces[tape._level - 1]
    return trace


def _tracks(tape, a) -> bool:
    """The tape tracks `a`, or would start to on this read (a trainable float Variable
    under watch_accessed_variables)."""
    return id(a) in tape._tracked or tape._watches_on_read(a)


def _eager(prim: Primitive, args, params):
    try:
        result = impl_rules[prim](*(a._value for a in args), **params)
    except KeyError:
        if prim not in impl_rules:
            raise NotImplementedError(f"primitive '{prim.name}' has no impl rule") from None
        raise
    except (ValueError, TypeError, IndexError) as e:
        raise _naming_op(e, prim, args, params) from None
    if prim.multiple_results:
        return [Tensor._from_array(np.asarray(r)) for r in result]
    return [Tensor._from_array(np.asarray(result))]


def _naming_op(e: Exception, prim: Primitive, args, params) -> Exception:
    """`e` again, its message prefixed with the op, shapes and parameters. An exception
    class whose constructor wants more than a message (numpy's casting errors) becomes the
    builtin it derives from."""
    shapes = ", ".join(str(a.shape) for a in args)
    message = (f"pforjac.{prim.name}: cannot apply to inputs of shapes ({shapes})"
               f"{_format_params(params)}: {e}")
    try:
        return type(e)(message)
    except TypeError:
        return next(c for c in (IndexError, ValueError, TypeError) if isinstance(e, c))(message)


def _format_params(params: dict[str, Any]) -> str:
    if not params:
        return ""
    return " with " + ", ".join(f"{k}={v!r}" for k, v in params.items())


def abstract_eval(prim: Primitive, args, params) -> list[tuple[tuple, np.dtype]]:
    """Runs the shape rule; errors name the op and the input shapes."""
    try:
        rule = shape_rules[prim]
    except KeyError:
        raise NotImplementedError(f"primitive '{prim.name}' has no shape rule") from None
    try:
        result = rule(*args, **params)
    except (ValueError, TypeError, IndexError) as e:
        raise _naming_op(e, prim, args, params) from None
    results = result if prim.multiple_results else [result]
    return [(tuple(int(d) for d in s), np.dtype(dt)) for s, dt in results]
