"""GradientTape: records ops and runs their vjp rules backwards (TensorFlow semantics)."""
from __future__ import annotations

import contextlib
import enum
import weakref
from typing import Any

import numpy as np

from . import core
from . import ops
from .state import _state
from .tensor import Tensor, Variable, as_tensor, check_not_complex_for_real, is_float
from .tree import _LEAF, flatten_like, tree_flatten, tree_unflatten

__all__ = ["GradientTape", "UnconnectedGradients"]


class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source the target does not depend on."""
    NONE = "none"
    ZERO = "zero"


def _unconnected(value) -> UnconnectedGradients:
    if isinstance(value, UnconnectedGradients):
        return value
    if type(value) is str and value in _BY_VALUE:      # (no enum lookup)
        return _BY_VALUE[value]
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients) else value)
    except ValueError:
        raise ValueError(f"unconnected_gradients must be 'none' or 'zero' "
                         f"(or UnconnectedGradients.NONE/ZERO), got {value!r}") from None


_BY_VALUE = {"none": UnconnectedGradients.NONE, "zero": UnconnectedGradients.ZERO}


class _Entry:
    __slots__ = ("prim", "params", "inputs", "outputs")

    def __init__(self, prim, params, inputs, outputs):
        self.prim, self.params, self.inputs, self.outputs = prim, params, inputs, outputs


# A recorded op sees a Variable through the value read when it ran (as TensorFlow's
# ReadVariableOp), so a later `assign` does not change its gradient. The tape records
# the read itself as this identity, which carries the cotangent back to the Variable.
read_variable_p = core.Primitive("read_variable")
core.defvjp(read_variable_p, lambda g, ans, v: g)
core.defjvp(read_variable_p, lambda t, ans, v: t)


live_tapes: "weakref.WeakSet[GradientTape]" = weakref.WeakSet()   # (see pforjac.mutation)


class GradientTape:
    """Records operations for automatic differentiation, as `tf.GradientTape`.

    Example:
        >>> import pforjac as pj
        >>> x = pj.constant(3.0)
        >>> with pj.GradientTape() as g:
        ...     g.watch(x)
        ...     y = x * x
        >>> float(g.gradient(y, x))
        6.0
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_variables = watch_accessed_variables
        self._level = 0
        self._recording = False
        self._entered = False              # inside its `with` block (recording or paused)
        self._ever_entered = False
        self._gaps = False                 # paused inside its block (stop_recording, ...)
        self._used = False
        self._entries: list[_Entry] = []
        self._tracked: dict[int, Tensor] = {}   # id -> tensor that depends on a watched one
        self._watched: dict[int, Tensor] = {}
        self._variables: dict[int, Variable] = {}
        self._unwatched_variables: dict[int, Variable] = {}  # read by recorded ops, not watched
        # the tensors made in the block (tensor.py), by id; weakly, as an id is reused once
        # its tensor is gone (a target made after the block must not pass for one of them)
        self._made: dict[int, weakref.ref] = {}
        self._tapes: list | None = None    # the entering thread's stack of recording tapes
        live_tapes.add(self)

    # -- context --------------------------------------------------------------
    def __enter__(self) -> "GradientTape":
        if self._recording:
            raise RuntimeError("this GradientTape is already recording; tapes can't be nested in themselves")
        state = core.current_state()            # thread-local: read the lists in this thread
        self._tapes, self._level = state.tapes, len(state.traces)   # kept across pauses
        self._push()
        self._entered = self._ever_entered = True
        return self

    def __exit__(self, *exc) -> None:
        self._entered = False
        self._pop()

    def _push(self) -> None:
        self._tapes.append(self)
        self._recording = True

    def _pop(self) -> None:
        self._gaps = self._gaps or self._entered    # a pause: ops the tape does not see
        if self._recording:
            self._tapes.remove(self)
            self._recording = False

    @contextlib.contextmanager
    def stop_recording(self):
        """Temporarily stops recording operations on this tape (inside its `with` block;
        where pforjac has paused it already, as the functional API does, nothing to do)."""
        if not self._entered:
            raise ValueError("stop_recording() can only be used while the tape is recording "
                             "(inside its `with` block)")
        if not self._recording:
            yield
            return
        self._pop()
        try:
            yield
        finally:
            self._push()

    def reset(self) -> None:
        """Clears everything recorded and watched; recording goes on if it was on."""
        self._entries.clear()
        self._tracked.clear()
        self._watched.clear()
        self._variables.clear()
        self._unwatched_variables.clear()
        self._made.clear()
        self._used = False

    # -- watching and recording -------------------------------------------------
    def watch(self, tensor) -> None:
        """Ensures `tensor` (or each tensor in a nested structure) is traced by this tape."""
        leaves, _ = tree_flatten(tensor)
        for t in leaves:                      # all checked before any is watched
            if not isinstance(t, Tensor):
                raise TypeError(f"GradientTape.watch expects Tensors or Variables (or nested "
                                f"lists/tuples/dicts of them), got {type(t).__name__}; "
                                f"wrap arrays with pforjac.constant(...)")
        for t in leaves:
            self._watched[id(t)] = t
            self._tracked[id(t)] = t
            if isinstance(t, Variable):
                self._variables[id(t)] = t

    def watched_variables(self) -> tuple:
        return tuple(self._variables.values())

    def _record(self, prim, args, params, outs) -> None:
        tracked = self._tracked
        hit = variables = False
        for a in args:
            if id(a) in tracked:
                hit = True
            elif isinstance(a, Variable):
                variables = True
                hit = self._saw_variable(a) or hit
        if not hit:                       # (symbolic results, made in a trace, too)
            self._made.update((id(o), weakref.ref(o)) for o in outs)
            return
        # Inside a trace (a compiled function) a Variable is itself read when the program
        # runs, so the tape keeps it; eagerly it keeps the value read now.
        inputs = args if self._level or not variables else \
            tuple(self._read(a) if isinstance(a, Variable) else a for a in args)
        self._entries.append(_Entry(prim, params, inputs, outs))
        for o in outs:
            if is_float(o.dtype):
                tracked[id(o)] = o

    def _saw_variable(self, a: Variable) -> bool:
        """Notes a read of the Variable `a` (not tracked yet); True if it is now watched."""
        if self._watches_on_read(a):
            self._variables[id(a)] = a
            self._watched[id(a)] = a
            self._tracked[id(a)] = a
            return True
        self._unwatched_variables[id(a)] = a
        if self._watch_variables and a.trainable:   # an int one: listed, as in TF,
            self._variables[id(a)] = a              # its gradient None
        return False

    def note_made(self, t) -> None:
        self._made[id(t)] = weakref.ref(t)

    def made_here(self, t) -> bool:
        """Whether `t` was made inside this tape's block (see tensor._seen_made)."""
        ref = self._made.get(id(t))
        return ref is not None and ref() is t

    def _watches_on_read(self, a) -> bool:
        """A read of `a` makes this tape watch it: a trainable float Variable, under
        watch_accessed_variables."""
        return self._watch_variables and isinstance(a, Variable) and a.trainable \
            and is_float(a.dtype)

    def _read(self, v: Variable) -> Tensor:
        value = v._read()
        if id(v) in self._tracked and id(value) not in self._tracked:
            self._entries.append(_Entry(read_variable_p, {}, (v,), [value]))
            self._tracked[id(value)] = value
        return value

    # -- gradient -----------------------------------------------------------------
    def _check_usable(self, mark_used: bool = True) -> None:
        if self._used and not self._persistent:
            raise RuntimeError(
                "a non-persistent GradientTape can only be used to compute one set of gradients "
                "(or jacobians); create it with GradientTape(persistent=True) to call it again")
        self._used = self._used or mark_used

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """Gradient of `target` (summed if not scalar) w.r.t. each tensor in `sources`.

        Returns the gradients in the structure of `sources`; unconnected or
        integer sources give `None` (or zeros with `unconnected_gradients="zero"`).
        """
        unconnected = _unconnected(unconnected_gradients)
        self._check_usable(mark_used=False)  # a call with wrong arguments leaves the tape usable
        flat_sources, source_tree = tree_flatten(sources)
        flat_targets, target_tree = tree_flatten(target)
        self._check_recorded(flat_targets)     # (a Python number is a constant: not checked)
        flat_targets = [as_tensor(t, "GradientTape.gradient: target") for t in flat_targets]
        self._check_sources(flat_sources)
        seeds = self._seeds(flat_targets, target_tree, output_gradients)
        self._used = True
        with self._computing():
            grads = backward(self._entries, flat_targets, seeds, flat_sources)
        out = [_finish(g, s, unconnected) for g, s in zip(grads, flat_sources)]
        return tree_unflatten(source_tree, out)

    def _check_sources(self, flat_sources, what: str = "GradientTape.gradient") -> None:
        for s in flat_sources:
            if not isinstance(s, Tensor):
                raise TypeError(f"{what}: sources must be Tensors or Variables, "
                                f"got {type(s).__name__}")
            if id(s) in self._unwatched_variables and id(s) not in self._tracked:
                if not is_float(s.dtype):
                    continue  # an integer source: its gradient is None
                why = "trainable=False" if not s.trainable else "watch_accessed_variables=False"
                raise ValueError(
                    f"{what}: the Variable '{s.name}' of shape {s.shape} was read "
                    f"under the tape but not watched ({why}); call tape.watch(v) before using it")
            if id(s) not in self._tracked:
                raise ValueError(
                    f"{what}: a source of shape {s.shape} and dtype {s.dtype.name} "
                    f"was never watched by this tape nor computed under it; call tape.watch(x) "
                    f"inside the `with` block before using x (Variables are watched automatically)")

    def _mark_recorded(self, targets) -> None:
        """Marks `targets`, known to have been computed inside this tape's block (the
        functional API's outputs), as seen: a constant one is then unconnected (None or
        zeros), not refused by _check_recorded."""
        for t in targets:
            if isinstance(t, Tensor):
                self._tracked.setdefault(id(t), t)

    def _check_recorded(self, flat_targets, what: str = "GradientTape.gradient") -> None:
        """Refuses a float target this tape never recorded, asked for after its block: the
        tape never entered, or the target computed after the `with` block, where nothing
        recorded its ops (TensorFlow returns None there, silently). A target made inside
        the block by an op on no tracked tensor (or any target, asked for inside the block)
        is a constant, and unconnected, as in TensorFlow."""
        if self._entered or self._gaps:   # (ops made while paused: unconnected, as in TF)
            return
        for t in flat_targets:
            if not isinstance(t, Tensor) or not is_float(t.dtype) or id(t) in self._tracked \
                    or self.made_here(t):
                continue
            shape = f"{t.dtype.name}{list(t.shape)}"
            if not self._ever_entered:
                raise ValueError(f"{what}: this GradientTape was never entered, so it recorded "
                                 f"nothing; compute the target inside `with tape:` (the target "
                                 f"{shape} has no record)")
            raise ValueError(
                f"{what}: the target {shape} was not recorded by this tape: it was computed "
                f"outside the tape's `with` block (after it ended, before it began, or in "
                f"another thread), so the tape never saw the ops that made it; compute it "
                f"inside the block (a constant made there is unconnected: None, or zeros with "
                f"unconnected_gradients='zero')")

    def _seeds(self, flat_targets, target_tree, output_gradients) -> list:
        if output_gradients is None:           # ones for every target (the common call)
            return [ops.ones_like(t) for t in flat_targets]
        if target_tree == _LEAF and isinstance(output_gradients, (list, tuple)) \
                and len(output_gradients) == 1 and _shape_of(output_gradients[0]) == \
                tuple(flat_targets[0].shape) != _shape_of(output_gradients):
            output_gradients = output_gradients[0]   # TensorFlow's [dy] for one target
        try:       # the target's structure; None stands for ones (as for no output_gradients)
            flat_og = flatten_like(target_tree, output_gradients)
        except ValueError as e:
            raise ValueError(f"output_gradients must have the structure of target "
                             f"({len(flat_targets)} tensors): {e}") from None
        seeds = []
        for k, (t, g) in enumerate(zip(flat_targets, flat_og)):
            if g is not None:
                g = as_tensor(g, "GradientTape.gradient: output_gradients")
                check_not_complex_for_real(g, t.dtype, "output_gradients" if len(flat_og) == 1
                                           else f"output_gradients (tensor {k})", "target")
            g = ops.ones_like(t) if g is None else ops.cast(g, t.dtype)
            if tuple(g.shape) != tuple(t.shape):
                raise ValueError(f"output_gradients of shape {g.shape} does not match the target's "
                                 f"shape {t.shape}")
            seeds.append(g)
        return seeds

    def _computing(self):
        """Around a gradient or Jacobian computed inside the tape's block: a persistent tape
        records it, as TensorFlow's does (its gradient gives the next derivative); a
        non-persistent tape can't be used again, so it pauses."""
        return contextlib.nullcontext() if self._persistent else _Paused(self)

    # jacobian and batch_jacobian live in jacobians.py and are attached below.


class _Paused:
    """No recording while the tape computes gradients. A tape records only the ops of the
    thread that entered it: called from another thread, nothing needs pausing. (A class,
    not a generator: it is entered on every gradient.)"""
    __slots__ = ("tape", "was")

    def __init__(self, tape: GradientTape):
        self.tape = tape

    def __enter__(self) -> None:
        tape = self.tape
        self.was = tape._recording and tape._tapes is core.current_state().tapes
        if self.was:
            tape._pop()

    def __exit__(self, *exc) -> None:
        if self.was:
            self.tape._push()


def _finish(g, source, unconnected: UnconnectedGradients):
    if g is None or not is_float(source.dtype):
        if unconnected is UnconnectedGradients.NONE:
            return None
        dtype = source.dtype if is_float(source.dtype) else np.float32
        return ops.zeros(source.shape, dtype)
    if g.dtype != source.dtype:
        g = ops.cast(g, source.dtype)
    return g


def backward(entries: list[_Entry], targets, seeds, sources) -> list:
    """Runs vjp rules backwards from `targets` (with cotangents `seeds`) to `sources`.

    Only entries on a path from a source to a target are visited, and only the
    cotangents of inputs that lead to a source are computed.
    """
    relevant = _depends_on_sources(entries, sources)
    keep = {id(s) for s in sources}
    cts: dict[int, Any] = {}
    for t, g in zip(targets, seeds):
        if id(t) in relevant:
            _accumulate(cts, t, g)
    for entry in reversed(entries):
        outputs = entry.outputs
        if len(outputs) == 1:              # (most ops: no list to build)
            o = id(outputs[0])
            g = cts.get(o) if o in keep else cts.pop(o, None)
            if g is not None:
                _propagate(entry, (g,), relevant, cts)
            continue
        outs_ct = [cts.get(id(o)) if id(o) in keep else cts.pop(id(o), None) for o in outputs]
        if any(g is not None for g in outs_ct):
            _propagate(entry, outs_ct, relevant, cts)
    return [cts.get(id(s)) for s in sources]


def _depends_on_sources(entries, sources) -> set[int]:
    relevant = {id(s) for s in sources}
    add = relevant.add
    for entry in entries:
        for a in entry.inputs:
            if id(a) in relevant:
                for o in entry.outputs:
                    if o.dtype.kind in "fc":        # (is_float, inlined: once per output)
                        add(id(o))
                break
    return relevant


def _propagate(entry: _Entry, outs_ct, relevant, cts) -> None:
    prim = entry.prim
    rules = _vjp_rules.get(prim)
    if rules is None:
        raise NotImplementedError(f"primitive '{prim.name}' has no vjp rule, so gradients can't "
                                  f"flow through it; register one with pforjac.extend.defvjp")
    if prim.multiple_results:
        g = tuple(ops.zeros_like(o) if c is None else c for o, c in zip(entry.outputs, outs_ct))
        ans = tuple(entry.outputs)
    else:
        g, ans = outs_ct[0], entry.outputs[0]
    state = _state
    saved, state.origin = state.origin, entry
    try:
        if callable(rules):
            for arg, ct in zip(entry.inputs, rules(g, ans, *entry.inputs, **entry.params)):
                if id(arg) in relevant:
                    _accumulate(cts, arg, ct)
            return
        inputs, params = entry.inputs, entry.params
        for arg, rule in zip(inputs, rules):
            if rule is not None and id(arg) in relevant:
                _accumulate(cts, arg, rule(g, ans, *inputs, **params))
    finally:
        state.origin = saved


_vjp_rules = core.vjp_rules       # (the registry itself: rules added later are seen)


def _accumulate(cts, tensor, g) -> None:
    if g is None:
        return
    if g.dtype.kind == "c" != tensor.dtype.kind:
        # a real value's cotangent is real: its real part (a rule of an op that mixes real
        # and complex operands hands the real one the complex cotangent)
        g = ops.cast(g, tensor.dtype)
    prev = cts.get(id(tensor))
    cts[id(tensor)] = g if prev is None else prev + g


def _shape_of(value) -> tuple | None:
    """The shape `value` has as a tensor, or None (a ragged nest, None)."""
    if value is None:
        return None
    if hasattr(value, "shape"):            # Tensors (symbolic ones too) and arrays
        return tuple(value.shape)
    try:
        return tuple(np.shape(value))
    except (ValueError, TypeError):
        return None
