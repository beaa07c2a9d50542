"""Tensor (a numpy array that ops and tapes understand), its symbolic twin, Variable."""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .conversion import (ConcretizationError, array_conversion_error, conversion_error,
                         dlpack, needed_by)
from .state import _state, current_state

__all__ = ["Tensor", "SymbolicTensor", "Variable", "constant", "as_tensor", "as_operands",
           "is_float"]


def is_float(dtype) -> bool:
    if isinstance(dtype, np.dtype):
        return dtype.kind in "fc"          # the common case, without issubdtype's overhead
    return np.issubdtype(dtype, np.inexact)


def check_not_complex_for_real(value: "Tensor", partner_dtype, what: str,
                               partner: str = "value") -> None:
    """A complex cotangent or tangent for a real value would lose its imaginary part when
    cast to the value's dtype: refused (as JAX refuses a tangent of another dtype)."""
    if value.dtype.kind == "c" and np.dtype(partner_dtype).kind != "c":
        raise TypeError(f"{what} is {value.dtype.name}, but the {partner} it pairs with is "
                        f"{np.dtype(partner_dtype).name}: casting would drop the imaginary part. "
                        f"Pass a real {what.rsplit(': ', 1)[-1]}, or make the {partner} complex")


def _all_python_numbers(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_all_python_numbers(v) for v in value)
    return isinstance(value, numbers.Number) and not isinstance(value, np.generic)


_WEAK = (False, 0, 0.0, 0j)                      # a Python number of each kind, by rank
_RANK = {bool: 0, int: 1, float: 2, complex: 3}     # (np.float64, a float too, is not one)


def _weak_rank(value):
    """The rank in `_WEAK` of the widest kind of Python number `value` holds (a number, or
    nested lists and tuples of them; an empty list is float, as numpy makes it), or None if
    it holds anything else (a Tensor, an array, a numpy scalar)."""
    rank = _RANK.get(type(value))
    if rank is not None or not isinstance(value, (list, tuple)):
        return rank
    ranks = [_weak_rank(v) for v in value]
    return None if None in ranks else max(ranks, default=2)


def as_operands(values) -> list:
    """The operands of an op that combines them into one result (`+`, `@`, `concat`,
    `where`'s branches) as Tensors. Python numbers, and lists and tuples of them, are
    weakly typed, as a Python scalar is in numpy and JAX: next to other operands they take
    the dtype those promote to with a Python number of their kind (a list of floats next
    to a float64 tensor is float64, next to a float16 one float16, next to an int32 one
    float64). Only operands all of Python numbers follow TensorFlow's defaults (float32,
    int32), as `constant` does."""
    for v in values:                    # the common case, all Tensors, checked first
        if not isinstance(v, Tensor):
            break
    else:
        return list(values)
    ranks = [_weak_rank(v) for v in values]
    if all(r is None for r in ranks):
        return [as_tensor(v) for v in values]
    if None not in ranks:
        return _all_weak(values, ranks)
    strong = {k: as_tensor(v) for k, (v, r) in enumerate(zip(values, ranks)) if r is None}
    dtype = np.result_type(*(t.dtype for t in strong.values()),
                           *(_WEAK[r] for r in ranks if r is not None))
    return [strong[k] if k in strong else Tensor._from_array(_to_array(v, dtype))
            for k, v in enumerate(values)]


def _all_weak(values, ranks) -> list:
    """Operands all of Python numbers: the widest kind's TensorFlow default (float32 for
    floats next to ints, not float64 holding values rounded to float32), one dtype for all."""
    tensors = [as_tensor(v) for v in values]
    top = max(ranks)
    dtype = np.result_type(*(t.dtype for t, r in zip(tensors, ranks) if r == top))
    return [t if t.dtype == dtype else Tensor._from_array(_to_array(v, dtype))
            for t, v in zip(tensors, values)]


_INT32 = np.iinfo(np.int32)


def _fits_int32(value, arr: np.ndarray) -> bool:
    if isinstance(value, int):                      # one Python int: no numpy reduction
        return _INT32.min <= value <= _INT32.max
    return arr.size == 0 or (_INT32.min <= arr.min() and arr.max() <= _INT32.max)


def unchanged(x) -> bool:
    """Whether an op that changes nothing may return `x` itself: not a Variable, whose
    value later assigns change (the op's result must keep the value it had; TensorFlow's
    reshape of a Variable is a new tensor too, and tapes see the op)."""
    return not isinstance(x, Variable)


def _to_array(value, dtype=None) -> np.ndarray:
    """TensorFlow's conversion: Python floats -> float32, Python ints -> int32 (int64 when
    one does not fit in int32)."""
    arr = np.asarray(value, dtype=dtype)
    if arr.dtype.kind in "OUSV":  # objects, strings, records: not numbers
        what = f"a numpy array of dtype {arr.dtype}" if isinstance(value, (np.ndarray, np.generic)) \
            else f"{type(value).__name__} {value!r:.80}"
        raise TypeError(f"cannot convert {what} to a pforjac tensor; pass numbers, nested lists "
                        f"of numbers, numeric numpy arrays or Tensors")
    if dtype is not None or isinstance(value, (np.ndarray, np.generic)):
        return arr
    if _all_python_numbers(value):
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        elif arr.dtype == np.int64 and _fits_int32(value, arr):   # larger: int64, as in TF
            arr = arr.astype(np.int32)
        elif arr.dtype == np.complex128:
            arr = arr.astype(np.complex64)
    return arr


def _read_only(arr):
    """`arr`, no longer writable: a tensor's array (`numpy()`, `np.asarray(t)`) is a
    read-only view, as JAX's and `np.asarray` of TensorFlow's are, so writing into it can't
    change a tensor, a recorded tape or a Variable behind `assign`'s checks (copy it to
    write: `np.array(t)`)."""
    if isinstance(arr, np.ndarray):
        arr.setflags(write=False)        # (about half the cost of setting .flags.writeable)
    return arr


def _handed_out(arr):
    """The array a tensor hands out (`numpy()`, `np.asarray(t)`): a view of its own read-only
    array made through a read-only memoryview. numpy lets `setflags(write=True)` make a view
    writable again wherever the memory's owner is an array, or an object (pforjac's reused
    result pages, a sparse mapping) with a writable buffer; this view's owner is the
    memoryview, which has none, so it is refused. No copy; made once per tensor (1 us)."""
    if not isinstance(arr, np.ndarray):
        return arr
    return np.asarray(memoryview(arr))


class Tensor:
    """An immutable n-dimensional array backed by numpy.

    Example:
        >>> import pforjac as pj
        >>> x = pj.constant([[1., 2.], [3., 4.]])
        >>> (x * x).sum(axis=1).numpy()
        array([ 5., 25.], dtype=float32)
    """

    __slots__ = ("_value", "_handed", "_trace", "_shape", "_dtype", "name", "made_by", "_links",
                 "__weakref__")   # SymbolicTensor's too (pforjac.rebinding swaps them)
    __array_ufunc__ = None  # replaced by numpy_dispatch.install: np.sin(t) runs pforjac.sin

    @classmethod
    def _from_array(cls, arr: np.ndarray) -> "Tensor":
        t = object.__new__(Tensor)
        t._value, t._handed, t._trace = _read_only(arr), None, None
        if _state.tapes:
            _seen_made(t)
        return t

    def __init__(self, value, dtype=None):
        self._value = _read_only(_own_array(value, dtype))   # a numpy array is copied, as by constant()
        self._handed = self._trace = None

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def numpy(self) -> np.ndarray:
        """The value, as a read-only numpy array that can't be made writable (no copy)."""
        handed = self._handed
        if handed is None:
            handed = self._handed = _handed_out(self._value)
        return handed

    def __array__(self, dtype=None, copy=None):
        if _state.tapes or self._trace is not None:
            if needed_by(self):
                raise array_conversion_error(self)
        value = self.numpy()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            if copy is False:
                raise ValueError(f"converting a {value.dtype.name} tensor to {np.dtype(dtype).name} "
                                 f"needs a copy, but copy=False was asked for")
            return value.astype(dtype)
        return value.copy() if copy else value  # np.array(t) copies: tensors stay immutable

    def __format__(self, spec: str) -> str:   # numpy's: f"{t:.3f}" works for a 0-d tensor
        return format(self.numpy(), spec) if spec else str(self)

    __dlpack__ = dlpack                         # np.from_dlpack(t), refused as __array__ is

    def __dlpack_device__(self) -> tuple:
        return self.numpy().__dlpack_device__()

    def __bool__(self) -> bool:
        return bool(self.numpy())

    def _value_read(self, what: str) -> np.ndarray:
        """The value, for `what` (float(), item(), ...): refused where a derivative needs it."""
        if _state.tapes and needed_by(self):
            raise conversion_error(self, what)
        return self.numpy()

    def __float__(self) -> float:
        return float(self._value_read("float()"))

    def __int__(self) -> int:
        return int(self._value_read("int()"))

    def __complex__(self) -> complex:
        return complex(self._value_read("complex()"))

    def __index__(self) -> int:
        return int(self.numpy().__index__())

    def item(self, *args):
        """One element as a Python number (numpy's `item`); refused as float() is."""
        return self._value_read("Tensor.item()").item(*args)

    def tolist(self):
        """The value as nested Python lists (numpy's `tolist`); refused as float() is."""
        return self._value_read("Tensor.tolist()").tolist()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a scalar tensor")
        return self.shape[0]

    def __copy__(self):
        """Immutable, so its copy is itself: a tape tracking it still does (a new object
        dropped out of the derivative: deepcopy of state gave a zero Jacobian)."""
        return self

    __deepcopy__ = lambda self, memo: self      # noqa: E731  (as __copy__)

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a scalar tensor")
        return (self[k] for k in range(self.shape[0]))

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        text = np.array2string(self.numpy(), separator=" ") if self.ndim else repr(self.numpy().item())
        sep = "\n" if "\n" in text else ""
        return f"pforjac.Tensor({sep}{text}, shape={self.shape}, dtype={self.dtype.name})"

    __str__ = __repr__


class SymbolicTensor(Tensor):
    """A value inside a trace: it has a shape and a dtype, but no data."""

    __slots__ = ()              # (Tensor holds its slots)

    def __init__(self, shape: tuple, dtype, trace, name: str, made_by: str | None = None):
        self._shape = tuple(shape)
        self._dtype = np.dtype(dtype)
        self._trace = trace
        self.name = name
        self.made_by = made_by          # the op whose result it is (for error messages)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)

    @property
    def _value(self):
        raise self._concrete_error("read its value")

    def _concrete_error(self, what: str) -> TypeError:
        if self._trace is not None and not self._trace.active:
            return ConcretizationError(
                f"cannot {what} of the symbolic value {self.describe()}: it belongs to a "
                f"finished trace (it was stored outside the traced function, where it has no "
                f"data); return values from the traced function instead of storing them")
        return ConcretizationError(
            f"cannot {what} of the symbolic value {self.describe()} while tracing: it has no "
            f"data until the traced program runs. Replace a Python `if`/`while` on it with "
            f"pforjac.where(cond, a, b), and keep numpy()/float() calls outside the traced function")

    def describe(self) -> str:
        made = f" (the result of pforjac.{self.made_by})" if self.made_by else ""
        return f"{self.name}:{self.dtype.name}{list(self.shape)}{made}"

    def numpy(self):
        raise self._concrete_error("take numpy()")

    def __array__(self, dtype=None, copy=None):
        raise array_conversion_error(self)

    def __bool__(self):
        raise self._concrete_error("use the truth value (Python `if`, `and`, `or`)")

    def __float__(self):
        raise self._concrete_error("take float()")

    def __complex__(self):
        raise self._concrete_error("take complex()")

    def __int__(self):
        raise self._concrete_error("take int()")

    def __index__(self):
        raise self._concrete_error("use as a Python index")

    def __repr__(self) -> str:
        return f"pforjac.SymbolicTensor({self.describe()})"

    __str__ = __repr__


class Variable(Tensor):
    """A mutable tensor; trainable variables are watched by tapes automatically.

    Example:
        >>> import pforjac as pj
        >>> v = pj.Variable(2.0)
        >>> with pj.GradientTape() as tape:
        ...     y = v * v
        >>> float(tape.gradient(y, v))
        4.0
    """

    __slots__ = ("trainable", "_snapshot")
    __copy__ = __deepcopy__ = None      # mutable: copy's default, a new Variable of its value

    def __init__(self, value, dtype=None, trainable: bool = True, name: str | None = None):
        value = value.numpy() if isinstance(value, Tensor) else value
        self._value = _read_only(np.array(_to_array(value, dtype), order="C"))  # own copy, C-ordered as
        # constant() copies are (a product rounds by its operands' layout)
        self._handed = self._trace = None
        self.trainable = trainable
        self.name = name or "Variable"
        self._snapshot = None

    def _read(self) -> Tensor:
        """The current value as a Tensor, the same one until the next assign (tapes record
        ops on it, so an assign never changes a recorded op's inputs)."""
        if self._snapshot is None or self._snapshot._value is not self._value:
            self._snapshot = Tensor._from_array(self._value)
        return self._snapshot

    def assign(self, value) -> "Variable":
        self._check_not_tracing()
        return self._assign(_array_of(value, "Variable.assign"), "assign")

    def _assign(self, new: np.ndarray, method: str) -> "Variable":
        """Sets the value to `new`, checked first: nothing changes if it is refused."""
        where = f"Variable.{method}: '{self.name}' holds {self.dtype.name}"
        if new.dtype.kind in "OSUV" or not np.can_cast(new.dtype, self.dtype, "same_kind"):
            raise TypeError(f"{where}, and a value of dtype {new.dtype.name} would change kind "
                            f"(e.g. lose a fraction or an imaginary part, or become NaN); cast "
                            f"it first: pforjac.cast(value, '{self.dtype.name}')")
        if new.shape != self.shape:
            raise ValueError(f"Variable.{method}: the new value has shape {new.shape}, but "
                             f"'{self.name}' has shape {self.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            cast = new.astype(self.dtype, order="C", copy=True)   # a new array: reads taken
        if not np.can_cast(new.dtype, self.dtype, "safe"):        # stay valid
            lost = cast.astype(new.dtype) != new if self.dtype.kind in "iub" \
                else np.isfinite(new) & ~np.isfinite(cast)
            if np.any(lost):
                bad = new[lost].flat[0]
                raise ValueError(f"{where}, and the new value {bad} (dtype {new.dtype.name}) "
                                 f"does not fit in it ({np.sum(lost)} element(s) would wrap "
                                 f"around or overflow); nothing was assigned")
        self._value, self._handed = _read_only(cast), None
        return self

    def numpy(self) -> np.ndarray:
        """The current value. Not inside a compiled function's trace: the value read there
        would be baked into the code, while the function must read the Variable at every
        call (so float(v), np.asarray(v), `if v` raise there too)."""
        if current_state().lifting is not None:
            raise TypeError(
                f"cannot read the value of Variable '{self.name}' (numpy(), float(), np.asarray, "
                f"`if`) while pforjac.function traces: the value would be fixed at trace time, "
                f"but a compiled function reads Variables when it runs. Use the Variable in "
                f"pforjac ops (x * v, pforjac.where(v > 0, a, b)), or pass the value in as an "
                f"argument")
        handed = getattr(self, "_handed", None)    # (unset in a stand-in made by object.__new__)
        if handed is None:
            handed = self._handed = _handed_out(self._value)
        return handed

    def _check_not_tracing(self) -> None:
        if current_state().traces:
            raise RuntimeError(
                f"Variable.assign on '{self.name}' inside a traced function (pforjac.function, a "
                f"pfor or jacobian loop body) would run once, while tracing, not on every call; "
                f"return the new value from the function and assign it outside")

    def assign_add(self, delta) -> "Variable":
        self._check_not_tracing()
        return self._assign(self._combined(delta, np.add, "assign_add"), "assign_add")

    def assign_sub(self, delta) -> "Variable":
        self._check_not_tracing()
        return self._assign(self._combined(delta, np.subtract, "assign_sub"), "assign_sub")

    def _combined(self, delta, op, method: str) -> np.ndarray:
        delta = _array_of(delta, f"Variable.{method}")
        try:
            np.broadcast_shapes(delta.shape, self.shape)
        except ValueError:
            raise ValueError(f"Variable.{method}: a delta of shape {delta.shape} does not "
                             f"broadcast to the shape {self.shape} of '{self.name}'") from None
        return op(self._value, delta)

    def __repr__(self) -> str:
        return f"<pforjac.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, " \
               f"numpy={np.array2string(self._value)}>"

    __str__ = __repr__


def _array_of(value, where: str) -> np.ndarray:
    """The numpy value of an argument of `where` (a Tensor's, or numbers as numpy reads them)."""
    if isinstance(value, Tensor):
        return value.numpy()
    try:
        return np.asarray(value)
    except ValueError as e:
        raise ValueError(f"{where}: cannot read {type(value).__name__} {value!r:.60} as an "
                         f"array ({e}); pass a numpy array, nested lists of one shape or a "
                         f"Tensor") from None


class _Ops:
    """The ops `constant` needs (cast, stop_gradient), installed by pforjac.ops when it
    loads: tensor.py sits below the ops and does not import them."""
    cast = stop_gradient = stack_list = None     # stack_list: lists of Tensors, as_tensor's


_ops = _Ops()


def constant(value: Any, dtype=None) -> Tensor:
    """Creates a Tensor. Python floats become float32 (as in TensorFlow), ints int32;
    numpy arrays keep their dtype and are copied, so changing the array later does not
    change the tensor.

    Example:
        >>> import pforjac as pj
        >>> pj.constant([1., 2.]).dtype
        dtype('float32')
    """
    if isinstance(value, Variable):      # its value now (read when run, in a compiled function)
        if current_state().lifting is not None:
            value = _ops.stop_gradient(value)
        else:
            value = Tensor._from_array(value.numpy().copy())
    if isinstance(value, Tensor):
        if dtype is None or np.dtype(dtype) == value.dtype:
            return value
        return _ops.cast(value, dtype)
    return Tensor._from_array(_own_array(value, dtype))


def _seen_made(t: Tensor) -> None:
    """Tells the recording tapes that `t` was made inside their blocks (so a gradient of it
    asked for after the block, if they did not record it, is unconnected: a constant, not
    a target computed outside the block; see GradientTape._check_recorded)."""
    for tape in _state.tapes:
        tape.note_made(t)


def as_tensor(value, argument: str | None = None) -> Tensor:
    """`value` as a Tensor: a Tensor as it is, anything else as `constant` makes it (a numpy
    array copied, so an op's result or a tape's record never changes with the array).
    `argument` names what `value` was passed as, for the error if it can't be converted."""
    value = _ops.stack_list(value) if isinstance(value, list | tuple) and _ops.stack_list else value
    if isinstance(value, Tensor):
        return value
    try:
        return Tensor._from_array(_own_array(value))
    except TypeError as e:
        if argument is None:
            raise
        raise TypeError(f"{argument}: {e}") from None


def _own_array(value, dtype=None) -> np.ndarray:
    """`value` as an array of pforjac's own: made from Python numbers and lists, or else a
    copy (a numpy array, a view of one, or an object whose `__array__` hands out its own
    array: the caller's memory must neither be shared nor made read-only)."""
    array = _to_array(value, dtype)
    made_here = isinstance(value, (list, tuple, numbers.Number)) and array.base is None
    return array if made_here else array.copy()
