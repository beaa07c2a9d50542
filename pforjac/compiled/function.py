"""pforjac.function: trace once per input signature, then run generated numpy code.

The first call with a new signature (tensor shapes and dtypes; other
arguments by value) traces the whole function symbolically — forward ops,
GradientTapes, gradients, jacobians, pfor — into one Program, simplifies it
(compiled/passes/) and compiles it to a Python function of numpy calls
(codegen.py). Later calls with that signature run only the generated code: no
per-op dispatch, no tape, no re-tracing. Variables are read when the code
runs, so updating weights needs no re-trace. A call of plain numpy arrays and floats
(or plain dicts, lists and tuples of them: a model's parameters) that has run once runs next time through its lean entry (lean_call.py): the arrays
straight into the code, its outputs straight out, in about a microsecond.

Structure-aware pfor (structure.py) keeps one-hot seeds compact only where
zeros stay zeros; the compiled program checks those assumptions (finite
values) at run time, and if one fails it runs a dense version of the same
trace (dense_twin.py), so results are the same as the eager path's.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from .. import core
from ..boundary import numpy_result, returns_numpy
from ..config import config
from ..pickling import picklable_function
from .codegen import program_to_source
from .compiled_trace import _Compiled, trace_compiled
from .lean_call import MISS, lean_entry, lean_key
from .numba_backend import started, use_backend
from .passes import pass_list
from ..program import Program
from ..pfor import deferred_warnings
from .signature import (arrays_as_tensors, as_input, is_input, quick_arrays, quick_key,
                        signature, stand_in, structure_key)
from ..state import _state
from ..tensor import Tensor, Variable
from ..tree import tree_flatten, tree_unflatten

__all__ = ["function", "Function"]


class Function:
    """A function compiled per input signature. Create with `pforjac.function(f)`.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> @pj.function
        ... def jac(x):
        ...     with pj.GradientTape() as g:
        ...         g.watch(x)
        ...         y = x * x
        ...     return g.batch_jacobian(y, x)
        >>> jac(np.array([[1., 2.], [3., 4.]], np.float32)).tolist()
        [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]]
        >>> jac.trace_count
        1
    """

    def __init__(self, fn: Callable, simplify_program: bool = True, batch_major: bool = True,
                 backend: str | None = None):
        if not callable(fn):
            raise TypeError(f"pforjac.function expects a callable, got {type(fn).__name__}")
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._static = isinstance(fn, staticmethod)
        try:        # (a ufunc's signature lists keywords it refuses when given as None)
            self._signature = None if isinstance(fn, np.ufunc) else inspect.signature(fn)
        except (TypeError, ValueError):     # some builtins have none: arguments as given
            self._signature = None
        self._simplify, self._batch_major = simplify_program, batch_major
        self._backend = started(backend, "pforjac.function")   # (checked; numba started)
        self._cache: OrderedDict[Any, _Compiled] = OrderedDict()   # by signature, LRU first
        self._quick: dict[Any, _Compiled] = {}    # by (backend, quick_key): the same traces
        self._lean: dict[tuple, Callable] = {}    # by lean_key: calls of numpy arrays alone
        self._lean_backend = None                 # the backend of the _lean entries
        self._last: Callable = _no_entry          # the entry of the last lean call
        self._generation = core.rules_generation   # code traced under these rules
        self._lock = threading.RLock()     # (reentrant: f.source() inside f's own trace)
        self._bindings: dict[int, tuple] = {}  # id(object) -> (weak ref, its compiled method)
        self.trace_count = 0
        self._value_variants: dict = {}     # signature without Python values -> traces
        self._warned_values = self._warned_dropping = False

    def __reduce__(self):
        """Pickled as its function and options (no traces: the receiving process traces on
        first use); `@pforjac.function` at module level by its name. See pforjac.pickling."""
        if _named_as(self):
            return self.__qualname__
        fn = picklable_function(self._fn, f"pforjac.function '{self._name()}'")
        return Function, (fn, self._simplify, self._batch_major, self._backend)

    def experimental_get_tracing_count(self) -> int:
        return self.trace_count

    def __call__(self, *args, **kwargs):
        state = _state.__dict__       # (one read of the thread-local, not two)
        if state["tapes"] or state["traces"]:
            # A recording GradientTape must see every op (to differentiate through this call),
            # and an enclosing trace (another compiled function, a pfor body) records them
            # into its own Program: run the Python body itself, as a nested tf.function is,
            # on its array arguments as the Tensors its trace would have had
            args, kwargs = arrays_as_tensors((args, kwargs))
            return self._fn(*args, **kwargs)
        if kwargs or self._generation != core.rules_generation or \
                (self._backend or config.backend) != self._lean_backend:
            return self._general_call(args, kwargs)
        try:
            out = self._last(args)     # the last lean call's entry (lean_call.py): MISS for others
            if out is not MISS:
                return out
            entry = self._lean.get(lean_key(args))     # numpy arrays in, numpy out
            out = MISS if entry is None else entry(args)
        except IndexError:       # an index out of bounds: the general path's error names
            out = MISS           # the op and the index
        if out is MISS:     # (or a key equal to the entry's, an argument not: an array whose
            return self._general_call(args, kwargs)   # dtype equals, but is not, its own)
        self._last = entry
        return out

    def _general_call(self, args: tuple, kwargs: dict):
        traced, arrays, variables, lean = self._compiled(args, kwargs)
        compiled = traced
        outs = compiled.run(arrays, variables)
        if outs is None:                  # a structure guard failed: NaN/Inf/zero present
            compiled = self._dense_twin(compiled)
            outs = compiled.run(arrays, variables)
        compiled.warn()
        if lean:
            self._keep_lean(args, traced)
        if returns_numpy(args, kwargs):
            return tree_unflatten(compiled.program.out_tree,
                                  [numpy_result(np.asarray(o)) for o in outs])
        return tree_unflatten(compiled.program.out_tree,
                              [Tensor._from_array(np.asarray(o)) for o in outs])

    def _keep_lean(self, args: tuple, compiled: _Compiled) -> None:
        """Leaves the lean entry of a call of positional numpy arrays and floats (or plain
        dicts, lists and tuples of them) that took the general path (lean_call.py), for
        the backend it ran on."""
        key = lean_key(args)
        if key is None or (key in self._lean and compiled.key[-1] == self._lean_backend):
            return                                # (no entry, or this one made already)
        entry = lean_entry(compiled, args, self._dense_twin)
        if entry is None:
            return
        backend = compiled.key[-1]
        if backend != self._lean_backend or len(self._lean) >= _MAX_LEAN:
            self._drop_lean()
            self._lean_backend = backend
        entry.compiled = compiled
        self._lean[key] = entry
        self._last = entry

    def _drop_lean(self, compiled: _Compiled | None = None) -> None:
        """Drops the lean entries (those running `compiled` alone, if given)."""
        self._lean = {} if compiled is None else \
            {q: e for q, e in self._lean.items() if e.compiled is not compiled}
        self._last = _no_entry

    def __get__(self, instance, owner=None):
        """`@pforjac.function` on a method: each object (by identity, whatever the class's
        `==`) has a compiled function of its own, kept with the object and freed with it;
        it traces once per input signature. `obj.f` holds `obj`, as a bound method does."""
        if instance is None or self._static:
            return self
        return _method(_bound_function(self, instance), instance)

    def specialize(self, *args, writable: bool = False) -> Callable:
        """A callable for calls like `f(*args)`, with the least work around the compiled code.

        For a caller that keeps one signature (a solver calling a derivative hundreds of
        times): each call checks its arguments against the examples' signature (the same
        shapes, dtypes and memory layouts, dict keys, float values) and runs the compiled
        code directly; any other call goes through `f` itself, as does a call inside a
        GradientTape or a trace. A 0-d float64 array among the examples may also be given
        as a Python float or numpy float64 (an ODE's time), traced as an input, not a
        value. Arguments
        `f`'s lean path takes: positional numpy arrays and floats, in plain dicts, lists
        and tuples; for any other, the callable is `f`'s own call.

        Args:
            *args: example arguments (they are traced, not run).
            writable: hand out the outputs the code makes afresh (sharing no memory with
                an input, a constant or another output) as they are, writable, instead of
                as read-only views (a fraction of a microsecond each).

        Returns:
            The callable; its `backend` attribute names the backend its code runs on.

        Example:
            >>> import numpy as np, pforjac as pj
            >>> grad = pj.function(pj.grad(lambda x: pj.numpy.sum(x ** 3)))
            >>> fast = grad.specialize(np.zeros(3))
            >>> fast(np.array([1.0, 2.0, 3.0])).tolist()
            [3.0, 12.0, 27.0]
            >>> fast(np.array([1.0, 2.0])).tolist()     # another shape: grad's own call
            [3.0, 12.0]
        """
        from .specialized import specialize
        return specialize(self, args, writable)

    def program(self, *args, **kwargs) -> Program:
        """The simplified Program that runs for these arguments' signature."""
        return self._compiled(args, kwargs)[0].program

    def source(self, *args, **kwargs) -> str:
        """The generated Python source that runs for these arguments' signature."""
        compiled = self._compiled(args, kwargs)[0]
        return program_to_source(compiled.program, compiled.name, compiled.exact)

    # -- signatures and tracing ---------------------------------------------------------
    def _compiled(self, args, kwargs):
        """(the trace for these arguments, their input arrays, their Variables, whether a
        lean entry may be made for the call: no default was filled in)."""
        if self._generation != core.rules_generation:     # a rule or converter changed since:
            with self._lock:                              # trace again under the new ones
                self._cache.clear()
                self._quick.clear()
                self._drop_lean()
                self._generation = core.rules_generation
        backend = self._backend or config.backend         # (part of every key: a changed
        quick = None if kwargs else quick_key(args)       # config traces again)
        if quick is not None:
            compiled = self._quick.get((backend, quick))
            if compiled is not None:
                self._used(compiled)
                return compiled, quick_arrays(args), (), True
        bound, defaulted = self._bound(args, kwargs)
        leaves, structure = tree_flatten(bound)
        key, arrays, variables = signature(leaves)
        key = (structure_key(structure), key, backend)
        compiled = self._cache.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._cache.get(key)
                if compiled is None:
                    compiled = self._trace(leaves, structure, backend)
                    self.trace_count += 1
                    self._keep(key, compiled)
                    self._note_value_retrace(key, leaves)
        else:
            self._used(compiled)
        if quick is not None and not defaulted:   # defaults are read every call (a changed
            self._quick[backend, quick] = compiled    # default is a new signature, as f(x=x)'s)
        return compiled, arrays, variables, not defaulted

    def _used(self, compiled: _Compiled) -> None:
        try:
            self._cache.move_to_end(compiled.key)    # the most recently used
        except KeyError:                             # dropped meanwhile by another thread
            pass

    def _keep(self, key, compiled: _Compiled) -> None:
        """Caches `compiled` under `key`; past _MAX_TRACES, the least recently used trace
        is dropped (as the loop cache bounds its entries), and the first time that happens
        a warning says why calls may trace again."""
        compiled.key = key
        self._cache[key] = compiled
        if len(self._cache) <= _MAX_TRACES:
            return
        _, old = self._cache.popitem(last=False)
        self._quick = {q: c for q, c in self._quick.items() if c is not old}
        self._drop_lean(old)
        if not self._warned_dropping:
            self._warned_dropping = True
            from ..pfor import warn_at_user_line
            warn_at_user_line(
                f"pforjac.function '{self._name()}' keeps the {_MAX_TRACES} most recently used "
                f"traces and has traced more signatures than that: the least recently used is "
                f"dropped, and a call with its signature traces and compiles again. Tensors' "
                f"shapes and dtypes and Python arguments' values make the signature; pass "
                f"values that change as numpy arrays or Tensors to trace once")

    def _note_value_retrace(self, key, leaves) -> None:
        """Warns once when Python values in the arguments keep making new traces (as
        tf.function warns about retracing): each is compiled anew, slower than eager."""
        structure, traced, backend = key
        plain = (structure, tuple(k[:2] if k[0] == "value" else k for k in traced), backend)
        n = self._value_variants[plain] = self._value_variants.get(plain, 0) + 1
        if n == _RETRACE_WARNING and not self._warned_values:
            self._warned_values = True
            from ..pfor import warn_at_user_line
            values = [leaf for leaf in leaves if not isinstance(leaf, (np.ndarray, Tensor))]
            warn_at_user_line(
                f"pforjac.function '{self._name()}' has traced {n} times for tensors of the same "
                f"shapes: Python arguments are part of the signature by value (this call: "
                f"{', '.join(repr(v) for v in values)[:120]}), and every new value traces and "
                f"compiles again (and only the {_MAX_TRACES} most recently used traces are kept). "
                f"Pass values that change as numpy arrays or Tensors "
                f"(np.asarray(s, np.float32), not s or np.float32(s)) to trace once")

    def _bound(self, args, kwargs):
        """((args, kwargs) as the signature binds them, defaults filled in, whether any
        was): `f(x)`, `f(x, 2.0)`, `f(x, s=2.0)` and `f(x=x)` are one trace (as
        tf.function binds them)."""
        if self._signature is None:
            return (args, kwargs), False
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"pforjac.function '{self._name()}': {e}") from None
        given = len(bound.arguments)
        bound.apply_defaults()
        return (bound.args, bound.kwargs), len(bound.arguments) > given

    def _name(self) -> str:
        return getattr(self, "__name__", None) or type(self._fn).__name__

    def _dense_twin(self, compiled: _Compiled) -> _Compiled:
        """The dense version of `compiled`, made from its trace the first time a guard
        refuses values (making it with every signature would lengthen each first call, and
        hold dense one-hot seeds); not a trace: the Python body does not run again."""
        if compiled.dense is None:
            with self._lock:
                if compiled.dense is None:
                    with deferred_warnings(quiet_fallbacks=False) as messages:
                        dense = compiled.dense_twin()
                    dense.warnings = messages
                    compiled.dense, compiled.traced = dense, None
        return compiled.dense

    def _trace(self, leaves, structure, backend: str) -> _Compiled:
        slots = [k for k, leaf in enumerate(leaves) if is_input(leaf)]
        avals = [(arr.shape, arr.dtype) for arr in (as_input(leaves[k]) for k in slots)]
        for (_, dtype), k in zip(avals, slots):
            if dtype.kind in "OSUV":
                raise TypeError(f"pforjac.function: input {k} (in flattened argument order) is "
                                f"an array of dtype {dtype}, which is not a number; pass "
                                f"numeric arrays or Tensors")

        # A Variable argument is traced as a stand-in of its own (reads of the same
        # Variable through a closure stay the closure's), whose slot each call fills with
        # the Variable it passes: one trace for every Variable of that shape and dtype.
        arguments = [leaf for leaf in leaves if isinstance(leaf, Variable)]
        stand_ins: dict[int, Variable] = {}
        for v in arguments:
            stand_ins.setdefault(id(v), stand_in(v))

        def call(*symbols):
            filled = [stand_ins[id(leaf)] if isinstance(leaf, Variable) else leaf
                      for leaf in leaves]
            for k, s in zip(slots, symbols):
                filled[k] = s
            args, kwargs = tree_unflatten(structure, filled)
            return self._fn(*args, **kwargs)

        name = self._name()
        with deferred_warnings(quiet_fallbacks=False) as messages:
            compiled = trace_compiled(call, avals, True, name if name.isidentifier() else
                                      "compiled", self._simplify, pass_list(self._batch_major),
                                      stand_ins=[stand_ins[id(v)] for v in arguments])
        compiled.warnings = messages     # a wrong result (rows mixed): shown by every call
        use_backend(compiled, backend, name, owner=self)
        return compiled


def _bound_function(function: Function, instance) -> Function:
    """`function` with `instance` bound first, made once per object (by identity, whatever
    the class's `==`; a class itself under `@classmethod`) and held by `function`, keyed by
    the object's id and reaching it through a weak reference: it is dropped when the object
    dies, and the object's own state never holds it, so `copy.copy`, `deepcopy` and `pickle`
    of the object are untouched (a copy binds its own on first use). An object that can't be
    weakly referenced keeps its compiled method in its `__dict__` (a copy's, found bound to
    the original, is replaced), or, without one, is held with it for the life of `function`."""
    store = function._bindings
    held = store.get(id(instance))
    if held is not None and held[0]() is instance:
        return held[1]
    ref = _weak(instance, lambda _, key=id(instance): store.pop(key, None))
    if ref is None and isinstance(getattr(instance, "__dict__", None), dict):
        slot = f"_pforjac_function_{id(function)}"
        bound = instance.__dict__.get(slot)
        if bound is None or bound._fn.args[0] is not instance:
            bound = instance.__dict__[slot] = _new_bound(function, instance, None)
        return bound
    bound = _new_bound(function, instance, ref)
    store[id(instance)] = (ref or (lambda: instance), bound)
    return bound


class _Method:
    # `obj.f`: holds `obj` (`M().f(x)` must find its object alive) and calls `obj`'s
    # compiled function, whose attributes (trace_count, program, source) it shows
    __slots__ = ("__self__", "__func__", "__weakref__")

    def __init__(self, instance, bound: Function):
        self.__self__, self.__func__ = instance, bound

    def __call__(self, *args, **kwargs):
        return self.__func__(*args, **kwargs)

    def __getattr__(self, name: str):
        if name in _Method.__slots__:        # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.__func__, name)

    def __repr__(self) -> str:
        return f"<compiled method {self.__func__._name()} of {self.__self__!r}>"


def _method(bound: Function, instance) -> _Method:
    """The `_Method` of `bound`, the same one while one is held (`obj.f is obj.f`)."""
    held = getattr(bound, "_held_method", None)
    method = held() if held is not None else None
    if method is None:
        method = _Method(instance, bound)
        bound._held_method = weakref.ref(method)
    return method


def _weak(instance, callback=None):
    try:
        return weakref.ref(instance, callback)
    except TypeError:                         # not weakly referenceable
        return None


def _new_bound(function: Function, instance, ref) -> Function:
    method = functools.partial(function._fn, instance) if ref is None else \
        functools.partial(_call_method, ref, function._fn)
    if function._signature is not None:       # the method's own, less `self`
        params = list(function._signature.parameters.values())[1:]
        method.__signature__ = function._signature.replace(parameters=params)
    bound = Function(method, function._simplify, function._batch_major, function._backend)
    functools.update_wrapper(bound, function._fn)
    return bound


def _call_method(ref, fn, *args, **kwargs):
    instance = ref()
    if instance is None:
        raise ReferenceError(f"the object whose compiled method "
                             f"'{getattr(fn, '__name__', fn)}' this is has been freed")
    return fn(instance, *args, **kwargs)


def _no_entry(args: tuple):
    return MISS


_RETRACE_WARNING = 5    # traces differing only in Python argument values, before a warning
_MAX_TRACES = 128       # traces a compiled function keeps (the least recently used go first)
_MAX_LEAN = 256         # lean entries a compiled function keeps (all dropped past that)


def _named_as(f: Function) -> bool:
    """Whether `f` is what its module holds under its qualified name (`@pforjac.function`
    on a module-level function): then pickle stores that name."""
    obj = sys.modules.get(getattr(f, "__module__", None) or "")
    for part in (getattr(f, "__qualname__", None) or "<none>").split("."):
        obj = getattr(obj, part, None)
    return obj is f


def function(fn: Callable | None = None, *, simplify: bool = True, batch_major: bool = True,
             backend: str | None = None):
    """Compiles `fn` per input signature (usable as `@pforjac.function`).

    Tensors and numpy arrays are inputs (their shapes and dtypes form the
    signature; given numpy arrays and Python values only, at top level, it returns numpy
    arrays, as every entry point does: `pforjac.boundary`); Variables are read at call time (passed as arguments, by shape and
    dtype too); other arguments are baked in by value. `f.trace_count` counts traces; `f.program(*args)` and
    `f.source(*args)` show what runs.

    Args:
        fn: the function to compile.
        simplify: run the simplification passes (`pforjac.compiled.passes`) on each trace.
        batch_major: compute a per-example Jacobian's products batch-first (the log-softmax
            head of benchmarks/zoo.py in half the time) and outer products by np.einsum: BLAS
            may round a product's rows otherwise in their last bits, and an exact zero product
            be +0 for -0; with False, results have eager code's bits, as the loop cache's do.
        backend: "numpy" or "numba" (docs/numba.md); default `pforjac.config.backend`.
    """
    if fn is None:
        return lambda f: Function(f, simplify, batch_major, backend)
    return Function(fn, simplify, batch_major, backend)

