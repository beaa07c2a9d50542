"""Conformance of pforjac's numpy front end with numpy itself, generated from the dispatch
tables: every numpy function in `numpy_dispatch.FUNCTIONS`, every ufunc in `UFUNCS` and every
ndarray method a Tensor has runs on ndarrays and on Tensors holding the same values, over a
grid of dtypes, shapes and keyword variants. The Tensor call must give numpy's value and
dtype, or refuse with a TypeError/ValueError that names the call. A silent difference is a
defect.

The calls come from numpy's own signatures where they can: a function whose one required
argument is the array gets `f(a)` and a variant for each keyword it takes (`axis`,
`keepdims`, `ord`, `dtype`, `out=None`, `ddof`, `order`); a ufunc gets its `nin` operands, and
for binary ones Python-number and list operands too. Functions that need more (a second
array, indices, a shape) have a recipe in `RECIPES`; a function added to a table with
neither is reported by `missing_recipes` (the test suite asserts it is empty).

Used by tests/test_conformance.py (a deterministic sample of the grid, fast) and by the
fuzzer (`python -m tests.fuzz --classes conformance`, the whole grid).
"""
from __future__ import annotations

import inspect
import re
import itertools
import warnings
import zlib
from dataclasses import dataclass, field

import numpy as np

import pforjac as pj
import pforjac.numpy  # noqa: F401  (registers the numpy functions)
from pforjac import numpy_dispatch


class _Slot:
    """Where the array under test (A) or a second one like it (B) goes in a call."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return self.name


A, B, M = _Slot("A"), _Slot("B"), _Slot("M")     # M: a bool mask of A's shape (an ndarray)

DTYPES = ("float64", "float32", "float16", "complex128", "complex64", "int64", "int32", "bool")
SHAPES = ((), (3,), (2, 3), (3, 3), (2, 2, 3))


@dataclass(frozen=True)
class Call:
    """One call: `fn(*args, **kwargs)` with A and B filled in; `shapes` limits the shapes
    it runs on (None: all); `post` maps the result to what is compared (for results defined
    up to a sign, as eigenvectors); `writes`: the function writes into A (np.copyto, np.put:
    A afterwards is compared, as pforjac's value semantics rebind it)."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    shapes: tuple | None = None
    post: object = None
    writes: bool = False

    def label(self) -> str:
        parts = [repr(a) if not isinstance(a, _Slot) else a.name for a in self.args]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return ", ".join(parts)


def _c(*args, shapes=None, post=None, writes=False, **kwargs) -> Call:
    return Call(tuple(args), kwargs, shapes, post, writes)


THIRD = 1 / 3                # a float64 float32 rounds
_MATRIX = ((2, 3), (3, 3), (2, 2, 3))
_SQUARE = ((3, 3),)
_VECTOR = ((3,),)
_SQUARE_STACK = ((3, 3), (2, 3, 3))


def _abs(r):
    return np.abs(r)


RECIPES: dict = {
    np.reshape: [_c(A, (-1,)), _c(A, (-1, 1)), _c(A, -1, order="F")],
    np.take: [_c(A, [-1, 1]), _c(A, [0, -1], axis=-1), _c(A, 1, axis=0), _c(A, [[0, 1]])],
    np.dot: [_c(A, B), _c(A, 2.5), _c(A, B, out=None)],
    np.einsum: [_c("...,...->...", A, B), _c("ij,kj->ik", A, B, shapes=((2, 3), (3, 3)))],
    np.pad: [_c(A, 1), _c(A, 1, constant_values=2.5), _c(A, 1, constant_values=(1.0, 2.0)),
             _c(A, ((1, 0),), shapes=_VECTOR)],
    np.split: [_c(A, 1), _c(A, [1], axis=-1)],
    np.array_split: [_c(A, 2), _c(A, [1], axis=-1)],
    np.vsplit: [_c(A, 1)], np.hsplit: [_c(A, 1)], np.dsplit: [_c(A, 1)],
    np.tile: [_c(A, 2), _c(A, (2, 1))],
    np.expand_dims: [_c(A, 0), _c(A, -1)],
    np.swapaxes: [_c(A, 0, -1)],
    np.moveaxis: [_c(A, 0, -1)],
    np.rollaxis: [_c(A, -1)],
    np.roll: [_c(A, 1), _c(A, -1, axis=0)],
    np.broadcast_to: [_c(A, (2, 2, 3), shapes=((), (3,), (2, 3)))],
    np.linalg.matmul: [_c(A, B, post=None, shapes=_SQUARE_STACK)],
    np.linspace: [_c(A, B), _c(A, B, num=4, endpoint=False), _c(0.5, A)],
    np.logspace: [_c(A, B, num=3)],
    np.full_like: [_c(A, 2.5), _c(A, 7)],
    np.result_type: [_c(A, B), _c(A, 2.5)],
    np.can_cast: [_c(A, np.float32)],
    np.astype: [_c(A, np.float64), _c(A, np.int32), _c(A, np.complex128)],
    np.partition: [_c(A, 1, shapes=((3,), (2, 3)))],
    np.argpartition: [_c(A, 1, shapes=((3,), (2, 3)), post=lambda r: np.sort(r, axis=-1))],
    np.take_along_axis: [_c(A, np.zeros((1, 1), int), axis=0, shapes=((2, 3),))],
    np.compress: [_c([True, False], A, axis=0, shapes=((2, 3), (3, 3))),
                  _c([False, True, True], A, shapes=((3,), (2, 3)))],
    np.extract: [_c([True, False, True], A, shapes=_VECTOR)],
    np.ix_: [_c(A, [1, 0], shapes=_VECTOR)],
    np.searchsorted: [_c(A, 0.5, shapes=_VECTOR), _c(A, [0.1, 1.5], side="right", shapes=_VECTOR)],
    np.quantile: [_c(A, 0.3), _c(A, [0.2, 0.9], axis=-1)],
    np.percentile: [_c(A, 30.0), _c(A, [20, 90], axis=0, keepdims=True)],
    np.convolve: [_c(A, B, shapes=_VECTOR), _c(A, [0.1, 0.3], shapes=_VECTOR),
                  _c(A, [0.1, 0.3], mode="same", shapes=_VECTOR)],
    np.correlate: [_c(A, B, shapes=_VECTOR), _c(A, [0.1, 0.3], shapes=_VECTOR)],
    np.interp: [_c(A, [-1.0, 0.1, 1.3], [0.7, 0.3, -0.2]), _c(A, [-1.0, 0.3], [0.1, 0.9], left=-0.5)],
    np.polyval: [_c([0.1, 0.2, 0.3], A), _c(A, 0.3, shapes=_VECTOR), _c(A, B, shapes=_VECTOR)],
    np.linalg.solve: [_c(A, B, shapes=_SQUARE_STACK), _c([[2.0, 0.1, 0.0], [0.3, 1.7, 0.2],
                                                          [0.0, 0.1, 1.1]], A, shapes=((3,), (3, 3)))],
    np.linalg.lstsq: [_c(A, B, shapes=_SQUARE, post=lambda r: r[0]),
                      _c([[2.0, 0.1, 0.0], [0.3, 1.7, 0.2], [0.0, 0.1, 1.1]], A,
                         shapes=_VECTOR, post=lambda r: r[0])],
    np.linalg.matrix_power: [_c(A, 2, shapes=_SQUARE_STACK), _c(A, 0, shapes=_SQUARE)],
    np.linalg.multi_dot: [_c([A, B, A], shapes=_SQUARE), _c([[0.1, 0.2, 0.3], A, A], shapes=_SQUARE)],
    np.inner: [_c(A, B), _c(A, 2.5)],
    np.tensordot: [_c(A, B, 1), _c(A, B, axes=0, shapes=((3,), (2, 3)))],
    np.linalg.tensordot: [_c(A, B, axes=1)],
    np.kron: [_c(A, B, shapes=((3,), (2, 3)))],
    np.vdot: [_c(A, B), _c(A, A)],
    np.cross: [_c(A, B, shapes=((3,), (2, 3)))],
    np.linalg.cross: [_c(A, B, shapes=((3,), (2, 3)))],
    np.atleast_1d: [_c(A)], np.atleast_2d: [_c(A)], np.atleast_3d: [_c(A)],
    np.repeat: [_c(A, 2), _c(A, 2, axis=-1)],
    np.append: [_c(A, B), _c(A, 1.5), _c(A, [0.25])],
    np.select: [_c([A], [B], 0.5)],
    np.allclose: [_c(A, A), _c(A, B), _c(A, 0.5)],
    np.array_equal: [_c(A, A), _c(A, B)],
    np.delete: [_c(A, 0), _c(A, [0, -1], axis=-1)],
    np.resize: [_c(A, (2, 4))],
    np.outer: [_c(A, B), _c(A, [0.5, 1.5])],
    np.linalg.outer: [_c(A, B, shapes=_VECTOR)],
    np.linalg.vecdot: [_c(A, B)],
    np.vecdot: [_c(A, B)],
    np.meshgrid: [_c(A, B, shapes=_VECTOR), _c(A, B, indexing="ij", shapes=_VECTOR)],
    np.broadcast_arrays: [_c(A, B)],
    np.empty_like: [_c(A, post=lambda r: (np.shape(r), np.dtype(r.dtype).name)),
                    _c(A, dtype=np.float32, post=lambda r: (np.shape(r), np.dtype(r.dtype).name))],
    np.copyto: [_c(A, B, writes=True), _c(A, 2.5, writes=True), _c(A, B, where=M, writes=True)],
    np.put: [_c(A, [0, -1], [1.5, 2.5], writes=True), _c(A, 1, THIRD, writes=True)],
    np.place: [_c(A, M, [1.5, 2.5], writes=True)],
    np.fill_diagonal: [_c(A, 2.5, writes=True), _c(A, [1.5, 2.5], wrap=True, writes=True)],
    np.where: [_c(A), _c(np.array([True, False, True]), A, B, shapes=((3,), (2, 3))),
               _c(np.array([True, False, True]), A, 0.5, shapes=((3,), (2, 3)))],
}


# ----------------------------------------------------------------------------------------
# generated calls

_KEYWORD_VARIANTS = {
    "axis": [{"axis": 0}, {"axis": -1}],
    "keepdims": [{"axis": -1, "keepdims": True}],
    "ddof": [{"ddof": 1}],
    "dtype": [{"dtype": np.float64}],
    "out": [{"out": None}],
}
_ORDS = (None, 1, 2, np.inf, -np.inf, 0, 3, -1, "fro", "nuc")


def _generated(fn) -> list[Call] | None:
    """Calls derived from numpy's signature of `fn`, or None if it needs a recipe."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    required = [p for p in params.values() if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) != 1:
        return None
    calls = [_c(A)]
    for name, variants in _KEYWORD_VARIANTS.items():
        if name in params:
            calls += [_c(A, **v) for v in variants]
    if "ord" in params:
        calls += [_c(A, ord=o) for o in _ORDS if o is not None]
        if "axis" in params:
            calls += [_c(A, ord=o, axis=ax) for o in (1, 2, np.inf, -np.inf, 0, 3)
                      for ax in (-1, (0, 1), (-2, -1))]
    if fn.__name__ in ("ravel", "flatten"):
        calls += [_c(A, order="F"), _c(A, order="A")]
    return calls


def ufunc_calls(ufunc) -> list[Call]:
    if ufunc.nin == 1:
        return [_c(A)]
    return [_c(A, B), _c(A, A), _c(A, 2.5), _c(3, A), _c(A, [0.5]), _c(A, 0.5j), _c(A, True)]


def function_calls(fn) -> list[Call] | None:
    return RECIPES.get(fn) or _generated(fn)


def missing_recipes() -> list[str]:
    """The numpy functions of the dispatch table, and the ndarray methods of Tensor, with
    neither a recipe nor a generated call."""
    functions = [_label(fn) for fn in list(numpy_dispatch.FUNCTIONS) if function_calls(fn) is None]
    return sorted(functions) + [f"Tensor.{n}" for n in tensor_methods() if method_calls(n) is None]


# -- Tensor methods: numpy's ndarray methods a Tensor has --------------------------------------
PROPERTIES = ("T", "mT", "real", "imag", "shape", "ndim", "size", "dtype", "itemsize", "nbytes")
NOT_COMPARED = {   # ndarray methods whose result is not a value to compare
    "base": "the owner of an array's memory", "ctypes": "a C view", "data": "a buffer",
    "flags": "memory flags", "strides": "memory layout", "device": "pforjac's is 'cpu'",
    "to_device": "the array API's, checked in test_array_api", "dump": "writes a file",
    "dumps": "a pickle", "tofile": "writes a file", "tobytes": "raw bytes",
    "view": "a reinterpretation of memory", "byteswap": "memory", "getfield": "memory",
    "flat": "an iterator", "item": "checked with tolist",
}
MUTATING = ("fill", "put", "resize", "itemset", "setflags", "setfield", "sort", "partition")
METHOD_RECIPES = {
    "astype": [_c(A, np.float64), _c(A, "int32")],
    "clip": [_c(A, -1, 1), _c(A, -0.5, None), _c(A, min=0.5)],
    "dot": [_c(A, B), _c(A, B, out=None), _c(A, 2.5)],
    "take": [_c(A, [-1, 1]), _c(A, [0, -1], axis=-1), _c(A, 1, axis=0)],
    "repeat": [_c(A, 2), _c(A, 2, axis=-1)],
    "reshape": [_c(A, -1), _c(A, (-1, 1)), _c(A, -1, 1), _c(A, -1, order="F")],
    "transpose": [_c(A), _c(A, *(1, 0), shapes=((2, 3), (3, 3)))],
    "swapaxes": [_c(A, 0, -1)],
    "searchsorted": [_c(A, 0.5, shapes=_VECTOR)],
    "argpartition": [_c(A, 1, shapes=((3,), (2, 3)), post=lambda r: np.sort(r, axis=-1))],
    "choose": [_c(A, [B, B])], "compress": [_c(A, [True, False], axis=0)],
    "trace": [_c(A), _c(A, 1)], "diagonal": [_c(A), _c(A, 1)],
    "tolist": [_c(A)], "copy": [_c(A), _c(A, order="F")],
    "flatten": [_c(A), _c(A, order="F"), _c(A, "C")], "ravel": [_c(A), _c(A, order="F")],
    "round": [_c(A), _c(A, 1)], "squeeze": [_c(A)], "nonzero": [_c(A)],
    "conj": [_c(A)], "conjugate": [_c(A)],
}


def method_calls(name: str) -> list[Call] | None:
    if name in METHOD_RECIPES:
        return METHOD_RECIPES[name]
    fn = getattr(np, name, None)
    return function_calls(fn) if fn is not None else None


def tensor_methods() -> list[str]:
    """ndarray's public methods a Tensor has (properties and unused ones apart)."""
    t = pj.constant(np.zeros(2))
    return [n for n in dir(np.ndarray) if not n.startswith("_") and n not in PROPERTIES
            and n not in NOT_COMPARED and n not in MUTATING and hasattr(t, n)]


# ----------------------------------------------------------------------------------------
# running a call both ways

def array(dtype: str, shape: tuple, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype).kind
    if kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if kind in "iu":
        return np.asarray(rng.integers(-3, 4, shape)).astype(dtype)
    x = rng.uniform(-2, 2, shape)
    if kind == "c":
        x = x + 1j * rng.uniform(-2, 2, shape)
    return np.asarray(x).astype(dtype)


@dataclass
class Outcome:
    problem: str | None          # None: conforms
    refused: bool = False


def _fill(args, a, b):
    def one(v):
        if v is A:
            return a
        if v is B:
            return b
        if v is M:
            return np.arange(np.size(a)).reshape(np.shape(a)) % 2 == 0
        if isinstance(v, list) and any(isinstance(x, _Slot) for x in v):
            return [one(x) for x in v]
        return v
    return tuple(one(v) for v in args)


def _invoke(target, call: Call, a, b, method: bool):
    args = _fill(call.args, a, b)
    kwargs = {k: _fill((v,), a, b)[0] for k, v in call.kwargs.items()}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method:
            return getattr(args[0], target)(*args[1:], **kwargs)
        result = target(*args, **kwargs)
        return args[0] if call.writes else result


def run(target, name: str, call: Call, dtype: str, shape: tuple, method: bool = False) -> Outcome:
    """`target` (a numpy callable, or a method name) on ndarrays and on Tensors."""
    if call.shapes is not None and shape not in call.shapes:
        return Outcome(None)
    a, b = array(dtype, shape, 0), array(dtype, shape, 1)
    ta, tb = pj.constant(a), pj.constant(b)        # (before numpy's call: np.copyto writes a)
    try:
        want = _invoke(target, call, a, b, method)
        want = call.post(want) if call.post else want
    except Exception:   # noqa: BLE001  (numpy refuses: pforjac must refuse too)
        want = _REFUSED
    try:
        got = _invoke(target, call, ta, tb, method)
        got = call.post(got) if call.post else got
    except (TypeError, ValueError, IndexError, np.linalg.LinAlgError, NotImplementedError) as e:
        if want is _REFUSED:
            return Outcome(None, refused=True)
        short = name.rsplit(".", 1)[-1]
        if short.lower() in str(e).lower():
            return Outcome(None, refused=True)
        return Outcome(f"refused without naming {short}: {type(e).__name__}: {str(e)[:160]}")
    if want is _REFUSED:
        return Outcome(f"numpy refuses, pforjac returned {_brief(got)}")
    return Outcome(difference(want, got, _RTOL.get(dtype, 0.0)))


_REFUSED = object()


def _brief(v) -> str:
    v = _plain(v)
    return f"{type(v).__name__} {getattr(v, 'dtype', '')}{list(np.shape(v))}" \
        if not isinstance(v, list) else f"{len(v)} results"


def _plain(v):
    if isinstance(v, pj.Tensor):
        return v.numpy()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


_RTOL = {"float16": 4e-3, "float32": 2e-5, "complex64": 2e-5}


def difference(want, got, data_rtol: float = 0.0) -> str | None:
    """How `got` (pforjac's) differs from `want` (numpy's), or None. Values agree to the
    precision of the result's dtype, or of the data's (`data_rtol`: float32 data computed
    into a float64 result carry float32 roundings, which the two may make differently)."""
    want, got = _plain(want), _plain(got)
    if isinstance(want, (list, tuple)):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{len(want)} results wanted, got {_brief(got)}"
        return next(filter(None, (difference(w, g, data_rtol) for w, g in zip(want, got))), None)
    if isinstance(want, str):
        return None if want == got else f"{want!r} wanted, got {got!r}"
    if isinstance(want, (bool, int, float, complex)) and not isinstance(got, np.ndarray):
        if type(want) is not type(got) and not (isinstance(got, np.generic)):
            return f"{type(want).__name__} {want!r} wanted, got {type(got).__name__} {got!r}"
    if isinstance(want, (np.dtype, type)) or isinstance(got, (np.dtype, type)):
        return None if np.dtype(want) == np.dtype(got) else f"{want} wanted, got {got}"
    w, g = np.asarray(want), np.asarray(got)
    if w.shape != g.shape or w.dtype != g.dtype:
        return f"{w.dtype}{list(w.shape)} wanted, got {g.dtype}{list(g.shape)}"
    if w.dtype.kind in "biu":
        return None if np.array_equal(w, g) else f"values {w.ravel()[:4]} wanted, got {g.ravel()[:4]}"
    rtol = max(_RTOL.get(w.dtype.name, 1e-9), data_rtol)
    scale = np.max(np.abs(w[np.isfinite(w)]), initial=1.0)
    if not np.allclose(g, w, rtol=rtol, atol=rtol * scale, equal_nan=True):
        return f"values {w.ravel()[:3]} wanted, got {g.ravel()[:3]}"
    return None


def _label(fn) -> str:
    module = getattr(fn, "__module__", None) or "numpy"
    module = "numpy" if module in ("numpy", "numpy._core.numeric") or not module.startswith(
        "numpy.linalg") else "numpy.linalg"
    return f"{module}.{fn.__name__}"


def cases(sample: int | None = None):
    """(kind, target, name, call, dtype, shape) for the whole grid, or a deterministic
    sample of about one in `sample` of them (chosen by a hash of the case)."""
    tables = [("ufunc", u, f"numpy.{u.__name__}", ufunc_calls(u))
              for u in list(numpy_dispatch.UFUNCS)]
    tables += [("function", f, _label(f), function_calls(f) or [])
               for f in list(numpy_dispatch.FUNCTIONS)]
    tables += [("method", n, f"Tensor.{n}", method_calls(n) or []) for n in tensor_methods()]
    for (kind, target, name, calls), dtype, shape in itertools.product(tables, DTYPES, SHAPES):
        for call in calls:
            key = f"{name}|{call.label()}|{dtype}|{shape}"
            if sample is None or zlib.crc32(key.encode()) % sample == 0:
                yield kind, target, name, call, dtype, shape


def check(case, keep_known: bool = False) -> str | None:
    """The problem with one case, described, or None (conforms, or a KNOWN difference,
    unless `keep_known`)."""
    kind, target, name, call, dtype, shape = case
    outcome = run(target, name, call, dtype, shape, method=kind == "method")
    if outcome.problem is None or (not keep_known and known(case, outcome.problem)):
        return None
    return f"{name}({call.label()}) on {dtype}{list(shape)}: {outcome.problem}"


def properties_problems() -> list[str]:
    """The ndarray properties of Tensors against ndarray's, every dtype and shape."""
    problems = []
    for dtype, shape in itertools.product(DTYPES, SHAPES):
        a = array(dtype, shape, 0)
        t = pj.constant(a)
        for name in PROPERTIES:
            try:
                want = getattr(a, name)
            except Exception:   # noqa: BLE001  (numpy's mT of a vector: pforjac must refuse)
                want = _REFUSED
            try:
                got = getattr(t, name)
            except Exception as e:   # noqa: BLE001
                if want is not _REFUSED:
                    problems.append(f"Tensor.{name} on {dtype}{list(shape)}: {type(e).__name__}: {e}")
                continue
            if want is _REFUSED:
                problems.append(f"Tensor.{name} on {dtype}{list(shape)}: numpy refuses, pforjac "
                                f"gives {_brief(got)}")
                continue
            problem = difference(want, got)
            if problem:
                problems.append(f"Tensor.{name} on {dtype}{list(shape)}: {problem}")
    return problems


# ----------------------------------------------------------------------------------------
# differences kept on purpose: (reason, test on the problem's case and text)

def _dtype_only(problem: str) -> bool:
    """A problem that is the result's dtype alone (the same shape)."""
    match = re.match(r"(\w+)(\[[\d, ]*\]) wanted, got (\w+)(\[[\d, ]*\])$", problem)
    return bool(match) and match.group(2) == match.group(4)


KNOWN = [
    ("numpy's ufunc reductions (sum, max, all, cumsum, take, ...) accept axis 0 or -1 on a 0-d "
     "array, a legacy allowance its mean, var, sort and flip refuse; pforjac refuses it as any "
     "out-of-range axis, with an AxisError naming the reducing op",
     lambda name, call, dtype, shape, problem: shape == () and "AxisError" in problem),
    ("numpy's linear algebra refuses float16; pforjac's computes it (in float32 inside LAPACK, "
     "as for every float type it does not have)",
     lambda name, call, dtype, shape, problem: name.startswith("numpy.linalg.")
     and dtype == "float16" and "numpy refuses" in problem),
    ("a Python float next to a tensor is weak in pforjac (it takes the tensor's precision, "
     "as in numpy's ufuncs and np.where/clip); numpy's dot, inner, outer, append, polyval, ... "
     "read it as a float64 array and promote float32 data to float64. Values agree: only the "
     "dtype differs, and float64 data are never rounded",
     lambda name, call, dtype, shape, problem: _dtype_only(problem)
     and any(isinstance(a, (float, complex)) for a in call.args)),
    ("numpy's conjugate of bools is int8; pforjac's gives the bools back",
     lambda name, call, dtype, shape, problem: name == "numpy.conjugate" and dtype == "bool"),
    ("numpy's clip has no bool loop; pforjac's clip with no bounds returns its input",
     lambda name, call, dtype, shape, problem: name == "numpy.clip" and dtype == "bool"),
    ("pforjac's linear algebra refuses complex matrices; inv, eigvalsh, the spectral norms and "
     "matrix_rank are built on solve, eigh and svd, whose names the refusal gives",
     lambda name, call, dtype, shape, problem: name.startswith("numpy.linalg.")
     and "takes real matrices" in problem),
]


def known(case, problem: str) -> str | None:
    """The reason a problem is a difference kept on purpose, or None (a defect)."""
    kind, target, name, call, dtype, shape = case
    for reason, applies in KNOWN:
        if applies(name, call, dtype, shape, problem):
            return reason
    return None
