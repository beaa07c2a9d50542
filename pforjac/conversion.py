"""When converting a Tensor to numpy would drop it from a derivative, and the one error that
says so (float(t), np.asarray(t), np.from_dlpack(t), t.tolist(), a numpy function pforjac
lacks, under a recording tape or in a trace)."""
from __future__ import annotations

import linecache
import re
import sys

from .state import _state


class ConcretizationError(TypeError):
    """A traced value was asked for data it does not have yet (a Python `if` on it, float(),
    numpy()): the function can run eagerly, on a tape, but not traced. Entry points that
    prefer a traced pass (a Hessian's forward-over-reverse) fall back on it."""


def needed_by(t) -> str | None:
    """Why converting `t` to numpy now would drop it from a derivative, or None if it would
    not: a recording GradientTape tracks it (or would watch it on this read), or it is a
    symbolic value of a trace (a pfor or jacobian body, pforjac.function, the loop cache)."""
    if t._trace is not None:
        return "it is a symbolic value of a trace, with no data until the traced program runs"
    for tape in _state.tapes:
        if id(t) in tape._tracked or tape._watches_on_read(t):
            return "a recording GradientTape tracks it"
    return None


def conversion_error(t, what: str) -> TypeError:
    """The TypeError for `what` (a conversion of `t` to numpy, or a numpy function that would
    make one) refused because `t` is needed (see needed_by); one message for every case."""
    value = "keep value reads outside the traced function" if t._trace is not None else \
        "pforjac.stop_gradient(t).numpy() for its value on purpose"
    return TypeError(f"{_assignment_hint()}{what}: converting the Tensor {_described(t)} to numpy would drop it "
                     f"from the derivative ({needed_by(t)}); use pforjac ops (pj.*, or the numpy "
                     f"functions pforjac dispatches: docs/numpy.md), or "
                     f"{value}{_index_hint(t)}")


def _index_hint(t) -> str:
    """A symbolic integer scalar is most often a loop index used on a numpy array, `X[i]`:
    numpy's indexing can't be dispatched (it asks the index for a number), so name the fix."""
    if t._trace is None or t.dtype.kind not in "iu" or tuple(t.shape) != ():
        return ""
    return (". If a numpy array is indexed with this loop index (X[i] in a pfor body), index "
            "a Tensor instead: pj.constant(X)[i], or pforjac.numpy.take(X, i, axis=0); or "
            "map over X with pj.vmap / pj.vectorized_map")


def _described(t) -> str:
    """A symbolic value's own description (its op and shape), else dtype and shape."""
    describe = getattr(t, "describe", None)
    return describe() if describe is not None else f"{t.dtype.name}{list(t.shape)}"


# `u[1:5] = x`, `u[0] += y`, `self.u[k] = x`: an assignment into a subscript
_SUBSCRIPT_ASSIGNMENT = re.compile(r"^([A-Za-z_][\w.]*)\s*\[.*\]\s*(?:\*\*|//|>>|<<|[-+*/%@&|^])?=(?!=)")


def _assignment_hint() -> str:
    """Where numpy asked for the conversion to write a Tensor into a numpy array (numpy's
    setitem calls `__array__`/`__float__` with no context; the caller's line says it):
    the fix, else "". Read only on this error path."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("pforjac"):
        frame = frame.f_back
    if frame is None:
        return ""
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    match = _SUBSCRIPT_ASSIGNMENT.match(line)
    target = _named(frame, match.group(1)) if match else None
    if type(target).__name__ != "ndarray":
        if not _storing_subscript(frame):
            return ""
        return (f"an assignment into an array (line {frame.f_lineno} of "
                f"{frame.f_code.co_filename}) writes a Tensor into it, and a numpy array "
                f"can't hold one: make the array a Tensor (np.zeros_like(x, shape=...), or "
                f"pforjac.numpy.zeros in place of np.zeros) and assign into that. ")
    shape = target.shape[0] if len(target.shape) == 1 else target.shape
    return (f"`{line}` writes a Tensor into the numpy array `{match.group(1)}`, which can't "
            f"hold one: make `{match.group(1)}` a Tensor (np.zeros_like(x, shape={shape}), or "
            f"pforjac.numpy.zeros({shape}) in place of np.zeros) and assign into that. ")


def _named(frame, dotted: str):
    """The object `dotted` (`u`, `self.u`) names in `frame`, or None."""
    head, *rest = dotted.split(".")
    value = frame.f_locals.get(head, frame.f_globals.get(head))
    for attr in rest:
        value = getattr(value, attr, None)
    return value


def _storing_subscript(frame) -> bool:
    """Whether `frame` is running `a[k] = v` (where the source line can't be read)."""
    import dis
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction.opname in ("STORE_SUBSCR", "STORE_SLICE")
    return False


def dlpack(t, *, stream=None, max_version=None, dl_device=None, copy=None):
    """`Tensor.__dlpack__`: the value through DLPack (`np.from_dlpack(t)`), read-only;
    refused as `__array__` is where a derivative needs the tensor. A consumer that can't
    take read-only memory (DLPack before 1.0) gets a copy unless it asked for copy=False.
    A string made of a tensor (`format`) leaves no derivative behind and is not refused."""
    if (_state.tapes or t._trace is not None) and needed_by(t):
        raise conversion_error(t, "np.from_dlpack (DLPack)")
    value = t.numpy()
    kwargs = {"stream": stream, "dl_device": dl_device, "copy": copy}
    if max_version is not None:
        kwargs["max_version"] = max_version
    try:
        return value.__dlpack__(**kwargs)
    except BufferError:
        if copy is False:
            raise
        return value.copy().__dlpack__(**kwargs)
