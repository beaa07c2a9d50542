"""autograd's `Box` and `VSpace`: differentiating with respect to values that are not
arrays (a function in a reproducing-kernel Hilbert space, say), whose type declares its
vector-space operations.

Arrays are followed by pforjac's tapes. A value of a type registered with
`SomeVSpace.register(T)` is put in a box (`Box.type_mappings[T]`, a subclass of `Box`
and `T` when one was registered with `SomeBox.register(T)`); an `@primitive` called
with a box runs on the value inside and records the call. Its result is a box again
when it is of a registered type, and otherwise a Tensor the tape follows. Backwards,
the tape gives each recorded call's output cotangent, and the primitive's `defvjp`
makers turn it into cotangents of the boxed arguments, summed with their `VSpace.add`.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import core
from ..tensor import Tensor

__all__ = ["Box", "VSpace", "vspace", "getval", "is_custom", "custom_vjp_at", "active_trace"]


class Box:
    """A value of a registered vector-space type, followed by a derivative."""

    type_mappings: dict = {}
    types: set = set()

    def __init__(self, value, trace, node):
        self._value, self._trace, self._node = value, trace, node

    @classmethod
    def register(cls, value_type) -> None:
        Box.types.add(cls)
        Box.type_mappings[value_type] = cls
        Box.type_mappings[cls] = cls

    def __repr__(self) -> str:
        return f"Autograd{type(self).__name__} with value {self._value!r}"


class VSpace:
    """The vector-space operations of a type: subclass it with `zeros`, `_add`,
    `_scalar_mul` and `_inner_prod`, and `register` the type."""

    mappings: dict = {}
    iscomplex = False

    def __init__(self, value):
        pass

    def zeros(self):
        raise NotImplementedError(f"{type(self).__name__} has no zeros()")

    def add(self, x, y):
        return self._add(x, y)

    def mut_add(self, x_prev, x_new):
        return self._add(self.zeros() if x_prev is None else x_prev, x_new)

    def scalar_mul(self, x, a):
        return self._scalar_mul(x, a)

    def inner_prod(self, x, y):
        return self._inner_prod(x, y)

    def covector(self, x):
        return x

    def _add(self, x, y):
        return x + y

    def _scalar_mul(self, x, a):
        return x * a

    def _inner_prod(self, x, y):
        raise NotImplementedError(f"{type(self).__name__} has no _inner_prod")

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}_{self.__dict__}"

    @classmethod
    def register(cls, value_type, vspace_maker=None) -> None:
        VSpace.mappings[value_type] = vspace_maker or cls


def vspace(value) -> VSpace:
    """The vector space `value` belongs to (registered types only)."""
    if isinstance(value, Box):
        value = value._value
    try:
        return VSpace.mappings[type(value)](value)
    except KeyError:
        raise TypeError(f"vspace: no vector space registered for type {type(value).__name__}; "
                        f"pforjac.autograd differentiates arrays directly and other types "
                        f"registered with SomeVSpace.register(type)") from None


def getval(value):
    """The numpy value of a traced value (a number as a numpy scalar), the value inside
    a box; anything else as it is."""
    if isinstance(value, Box):
        value = value._value
    if not isinstance(value, Tensor):
        return value
    array = value.numpy()
    return array[()] if array.ndim == 0 else array


def is_custom(value) -> bool:
    """A value of a type registered with a VSpace (not an array or a number)."""
    return type(value) in VSpace.mappings


class _Active(threading.local):
    def __init__(self):
        self.traces: list = []


_active = _Active()


def active_trace(args):
    """The trace of the first box among `args`, if it is still running."""
    if not _active.traces:
        return None
    for a in args:
        if isinstance(a, Box) and any(a._trace is t for t in _active.traces):
            return a._trace
    return None


class _Record:
    __slots__ = ("prim", "args", "kwargs", "ans", "out", "boxed")

    def __init__(self, prim, args, kwargs, ans, out, boxed):
        self.prim, self.args, self.kwargs = prim, args, kwargs
        self.ans, self.out, self.boxed = ans, out, boxed


class _Trace:
    """The boxes and primitive calls of one derivative's forward pass."""

    def __init__(self, tape):
        self.tape = tape
        self.records: list[_Record] = []

    def box(self, value) -> Box:
        box_type = Box.type_mappings.get(type(value), Box)
        box = box_type.__new__(box_type)
        Box.__init__(box, value, self, None)
        return box

    def apply(self, prim, args, kwargs):
        """`prim(*args)` on the values inside the boxes, recorded."""
        boxed = [(k, a) for k, a in enumerate(args) if isinstance(a, Box) and a._trace is self]
        plain = tuple(a._value if isinstance(a, Box) and a._trace is self else a for a in args)
        if any(isinstance(a, Tensor) for a in plain):
            ans = prim(*plain, **kwargs)
        else:
            ans = prim.fun(*plain, **kwargs)
        out = self.box(ans) if is_custom(ans) else self._followed(ans)
        self.records.append(_Record(prim, plain, kwargs, ans, out, boxed))
        return out

    def _followed(self, ans) -> Tensor:
        if isinstance(ans, Tensor) and core._tracks(self.tape, ans):
            return ans
        source = Tensor._from_array(np.array(ans.numpy() if isinstance(ans, Tensor) else ans,
                                             dtype=float))
        self.tape.watch(source)
        return source

    def backward(self, tensor_cts: dict) -> dict:
        """Cotangents of the boxes (by id) from the tape's cotangents of the recorded
        calls' Tensor outputs (by id)."""
        cts: dict = {}
        for rec in reversed(self.records):
            g = cts.get(id(rec.out)) if isinstance(rec.out, Box) else tensor_cts[id(rec.out)]
            if g is None:
                continue
            for k, box in rec.boxed:
                maker = rec.prim.vjpmakers.get(k)
                if maker is None:
                    raise NotImplementedError(f"VJP of {rec.prim.__name__} wrt argnum {k} "
                                              f"not defined")
                ct = maker(rec.ans, *rec.args, **rec.kwargs)(g)
                prev = cts.get(id(box))
                cts[id(box)] = ct if prev is None else vspace(ct).add(prev, ct)
        return cts


def custom_vjp_at(fun, x, make_input):
    """(vjp, ans) as `differential_operators._vjp_at`, for an `x` with leaves of registered
    vector-space types (boxed) besides arrays (`make_input` makes those followed)."""
    from ..tape import GradientTape
    from ..tree import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(x)
    tape = GradientTape(persistent=True)
    trace = _Trace(tape)
    with tape:
        inputs = [trace.box(v) if is_custom(v) else make_input(v) for v in leaves]
        tape.watch([v for v in inputs if isinstance(v, Tensor)])
        _active.traces.append(trace)
        try:
            ans = fun(tree_unflatten(tree, inputs))
        finally:
            _active.traces.remove(trace)
    if isinstance(ans, Box):
        raise NotImplementedError("pforjac.autograd: the output of a function differentiated "
                                  "with respect to a custom vector-space value must be an array "
                                  f"or a number, got a {type(ans._value).__name__}")
    tape._mark_recorded([ans] if isinstance(ans, Tensor) else [])

    def vjp(g):
        arrays = [v for v in inputs if isinstance(v, Tensor)]
        outs = [r.out for r in trace.records if isinstance(r.out, Tensor)]
        grads = tape.gradient(ans, arrays + outs, output_gradients=g,
                              unconnected_gradients="zero")
        box_cts = trace.backward({id(o): _numpy(c) for o, c in zip(outs, grads[len(arrays):])})
        array_cts = iter(grads[:len(arrays)])
        return tree_unflatten(tree, [next(array_cts) if isinstance(v, Tensor)
                                     else _or_zeros(box_cts.get(id(v)), v) for v in inputs])
    return vjp, ans


def _numpy(value):
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    return array[()] if array.ndim == 0 else array


def _or_zeros(ct, box: Box):
    return vspace(box._value).zeros() if ct is None else ct
