"""When converting a Tensor to numpy would drop it from a derivative, and the one error that
says so (float(t), np.asarray(t), np.from_dlpack(t), t.tolist(), a numpy function pforjac
lacks, under a recording tape or in a trace)."""
from __future__ import annotations

import dis
import importlib
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


# -- who asked: the numpy or scipy function (or the np.array of a list) converting a Tensor ---
ASARRAY = "np.asarray/np.array (or a numpy function pforjac does not dispatch)"
_LIBRARIES = ("numpy", "scipy")
_ARRAY_OF_LIST = re.compile(r"\b(?:array|asarray|asanyarray)\s*\(\s*[\[\(]")


def array_conversion_error(t) -> TypeError:
    """The error for `t.__array__` refused: it names the function that asked for the
    conversion (found from the calling frames, on this error path only) and its pforjac
    counterpart, or says that `np.array([...])` of Tensors is `np.stack` / `pnp.array`."""
    try:
        what = _asker(t, sys._getframe(2))       # whoever called Tensor.__array__
    except Exception:                  # (an odd frame must not hide the conversion error)
        what = ASARRAY
    return conversion_error(t, what)


def _asker(t, frame) -> str:
    """What asked for the conversion, and what to call instead."""
    entry, caller = _library_entry(frame)
    if entry is None:
        return _direct_call(caller)
    name = _public_name(entry)
    what = f"{name} converts its arguments with np.asarray"
    listed = _list_argument(entry, _tensor_class(t))
    if listed and name.startswith("numpy."):
        what += (f"; numpy does not dispatch on Tensors inside a list (or nested lists): "
                 f"call pforjac.numpy.{name[6:]}, which takes them, or np.stack the list (each "
                 f"inner list first) and pass the result")
    else:
        twin = counterpart(name)
        what += f"; call {twin} instead" if twin else \
            "; pforjac has no counterpart for it: write it with pforjac.numpy / pforjac.scipy"
    return what


def _library_entry(frame):
    """(the outermost numpy/scipy frame of the innermost run of them, the user's frame
    calling it); (None, the caller) when numpy's C code was called from the user's code."""
    entry = None
    while frame is not None and _module(frame).split(".")[0] in _LIBRARIES:
        entry, frame = frame, frame.f_back
    return entry, frame


def _module(frame) -> str:
    return frame.f_globals.get("__name__", "") or ""


def _direct_call(caller) -> str:
    """np.array/np.asarray called from the user's own line: a list of Tensors, if the line
    says so."""
    line = linecache.getline(caller.f_code.co_filename, caller.f_lineno) if caller else ""
    if caller and (_SUBSCRIPT_ASSIGNMENT.match(line.strip()) or _storing_subscript(caller)):
        return ASARRAY                       # (the assignment's own hint says the rest)
    if _ARRAY_OF_LIST.search(line) or not line and caller and _calls_array_of_list(caller):
        where = f": {line.strip()!r:.80}" if line else ""
        return (f"np.array([...]) of Tensors (line {caller.f_lineno}{where}): "
                f"numpy converts each entry with np.asarray, without dispatching to pforjac; "
                f"use np.stack([...]) (np.stack of np.stacks for nested lists) or "
                f"pforjac.numpy.array([...]), which stack differentiably")
    return ASARRAY + " (for np.array of a list holding Tensors, use np.stack or " \
                     "pforjac.numpy.array)"


def _calls_array_of_list(frame) -> bool:
    """Whether the call running in `frame` (source unavailable: exec'd code) is
    array/asarray/asanyarray of a list or tuple built in place, read from its bytecode."""
    built = False
    for ins in reversed([i for i in dis.get_instructions(frame.f_code) if i.offset < frame.f_lasti]):
        if ins.opname in ("BUILD_LIST", "BUILD_TUPLE", "LIST_EXTEND"):
            built = True
        elif ins.opname.startswith("LOAD_") and ins.argval in ("array", "asarray", "asanyarray"):
            return built
        elif ins.opname.startswith(("STORE_", "POP_TOP", "RETURN")):   # the statement before
            return False
    return False


def _public_name(frame) -> str:
    """`scipy.stats.norm.logpdf`, `scipy.special.logsumexp`, `numpy.mean`, `numpy.r_`: the
    library function a frame runs, as users write it."""
    parts = []
    for part in _module(frame).split("."):
        if part.startswith("_"):
            break
        parts.append(part)
    code, owner = frame.f_code, frame.f_locals.get("self")
    if "wrap" in code.co_name:                  # a decorator's frame: the function it wraps
        return ".".join(parts + [_wrapped_name(frame) or code.co_name])
    if owner is not None:
        for alias in ("r_", "c_"):
            if sys.modules.get("numpy") is not None and owner is getattr(sys.modules["numpy"], alias, None):
                return f"numpy.{alias}"
        dist = getattr(owner, "dist", owner)           # a frozen distribution's own
        label = getattr(dist, "name", None) if isinstance(getattr(dist, "name", None), str) \
            else type(dist).__name__.removesuffix("_gen")
        return ".".join(parts + [label, code.co_name.lstrip("_")])
    return ".".join(parts + [code.co_name])


def _wrapped_name(frame) -> str | None:
    """The public name of the function a decorator's frame wraps (a library function among
    its locals, or the `name` of the record it keeps, as scipy.special's wrappers do)."""
    for value in frame.f_locals.values():
        name = getattr(value, "__name__", None)
        module = getattr(value, "__module__", None) or ""
        if callable(value) and isinstance(name, str) and not name.startswith("_") \
                and "wrap" not in name and module.split(".")[0] in _LIBRARIES:
            return name
    owner = frame.f_locals.get("self")
    name = getattr(owner, "name", None)
    return name if isinstance(name, str) else None


def _tensor_class(t) -> type:
    """pforjac.Tensor, read from `t` (symbolic values subclass it): tensor.py imports this
    module, so it is not imported here."""
    return next(c for c in type(t).__mro__ if c.__name__ == "Tensor")


def _list_argument(frame, tensor: type) -> bool:
    """Whether the frame's first argument is a list or tuple holding a Tensor."""
    code = frame.f_code
    if not code.co_argcount:
        return False
    first = frame.f_locals.get(code.co_varnames[0])
    return isinstance(first, (list, tuple)) and any(_holds(v, tensor) for v in first)


def _holds(v, tensor: type) -> bool:
    return isinstance(v, tensor) or isinstance(v, (list, tuple)) and \
        any(_holds(e, tensor) for e in v)


def counterpart(name: str) -> str | None:
    """pforjac's function for the numpy or scipy function `name`, found in what
    pforjac.numpy and pforjac.scipy provide (`scipy.stats.norm.logpdf` ->
    `pforjac.scipy.stats.norm.logpdf`), or None."""
    parts = name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module = "pforjac." + ".".join(parts[:split])
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        for attr in parts[split:]:
            try:
                found = getattr(found, attr)
            except AttributeError:
                found = None
                break
        if found is not None:
            return f"{module}.{'.'.join(parts[split:])}"
    return None


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
