"""Loop bodies that index numpy arrays with the loop index: `X[i]`, `X[i, j]`, `X[:, i]`,
`X[i, 1:]`, `X[idx[i]]` in a `pfor`, `vectorized_map` or `vmap` body.

numpy's indexing asks an index for a number (`__index__`) or an array (`__array__`), and a
traced loop index has neither: numpy cannot hand the subscript to pforjac. So when tracing a
body fails that way, its source is read and converted, as TensorFlow's autograph converts a
function's Python: every subscript that reads a value, `a[k]`, becomes `getitem(a, k)`
(slices in `k` become `slice(...)` calls), and the converted body is traced once more.
`getitem` indexes `pforjac.constant(a)` where `a` is a numpy array (or a list of numbers) and
`k` holds a Tensor, with pforjac's gather semantics, which follow numpy's for every form
above; anything else is indexed as before, `a[k]`. The converted body is the same function:
its globals, closure cells and defaults are the original's (its Python runs once more, as a
retrace's does). Only the body's own subscripts are converted, not those of the functions it
calls; a bound method or a `functools.partial` of a function is converted as that function.

A body whose source pforjac cannot read (typed at an interactive prompt, a builtin, a
callable object) keeps the error, with a note saying why; the error
names the fixes (`pj.constant(X)[i]`, `pforjac.numpy.take`, mapping over X).
"""
from __future__ import annotations

import ast
import builtins
import functools
import linecache
import threading
import types
from typing import Any, Callable

import numpy as np

from .tensor import Tensor, constant

__all__ = ["trace_converting", "converted", "Getitem"]

# What the conversion errors of a traced loop index say (conversion.py, SymbolicTensor):
_INDEX_FAILURES = ("indexed with this loop index", "use as a Python index")
_GETITEM, _SLICE = "__pforjac_getitem__", "__pforjac_slice__"


def trace_converting(fn: Callable, trace: Callable[[Callable], Any]):
    """`trace(fn)`; where that fails because `fn` indexes a numpy array with a traced index,
    `trace(converted(fn))` (see the module's doc), else the first error."""
    try:
        return trace(fn)
    except TypeError as e:
        if not any(s in str(e) for s in _INDEX_FAILURES):
            raise
        body = converted(fn)
        if body is None:
            e.add_note(f"pforjac converts numpy subscripts with the loop index itself where it "
                       f"can read the body's source; it cannot read (or tell apart) that of "
                       f"{_described(fn)}")
            raise
    try:
        return trace(body)
    except TypeError as again:
        again.add_note(f"raised by {_described(fn)} with its subscripts converted to index "
                       f"numpy arrays with the loop index (pforjac.index_conversion)")
        raise


def _described(fn) -> str:
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    code = getattr(fn, "__code__", None)
    where = f" ({code.co_filename}, line {code.co_firstlineno})" if code is not None else ""
    return f"'{name}'{where}"


# -- getitem ---------------------------------------------------------------------------------
class Getitem:
    """`getitem(obj, key)`: `obj[key]`, but a numpy array (or a list of numbers) indexed by a
    key that holds a Tensor is indexed as `pforjac.constant(obj)[key]`. One per converted
    body: an array indexed in several places is copied into a constant once."""

    def __init__(self):
        self._constants: dict[int, tuple] = {}       # id(obj) -> (obj, its constant)

    def __call__(self, obj, key):
        if _holds_tensor(key) and (isinstance(obj, np.ndarray) or _numbers(obj)):
            kept = self._constants.get(id(obj))
            if kept is None:
                kept = self._constants[id(obj)] = (obj, constant(np.asarray(obj)))
            return kept[1][key]
        return obj[key]


def _numbers(obj) -> bool:
    """A list or tuple of numbers (nested), no Tensor among them."""
    if not isinstance(obj, (list, tuple)) or _holds_tensor(obj):
        return False
    try:
        return np.asarray(obj).dtype.kind in "biuf"
    except (ValueError, TypeError):          # ragged, or not numbers
        return False


def _holds_tensor(key) -> bool:
    if isinstance(key, slice):
        return any(isinstance(b, Tensor) for b in (key.start, key.stop, key.step))
    return isinstance(key, Tensor) or isinstance(key, (tuple, list)) and any(
        _holds_tensor(k) for k in key)


# -- the conversion --------------------------------------------------------------------------
_cache: dict = {}            # code object -> the converted function's code, or None
_cache_lock = threading.Lock()
_CACHE_SIZE = 256


def converted(fn: Callable) -> Callable | None:
    """`fn` with its value subscripts going through `getitem`, or None where its source can't
    be read (or converted). It shares `fn`'s globals and closure cells; a bound method or a
    `functools.partial` of a function is converted as that function."""
    if isinstance(fn, (types.MethodType, functools.partial)):
        inner = converted(fn.__func__ if isinstance(fn, types.MethodType) else fn.func)
        if inner is None:
            return None
        if isinstance(fn, types.MethodType):
            return types.MethodType(inner, fn.__self__)
        return functools.partial(inner, *fn.args, **fn.keywords)
    if not isinstance(fn, types.FunctionType):
        return None
    with _cache_lock:
        found, code = fn.__code__ in _cache, _cache.get(fn.__code__)
    if not found:
        code = _converted_code(fn)
        with _cache_lock:
            if len(_cache) >= _CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            _cache[fn.__code__] = code
    if code is None:
        return None
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[_GETITEM], cells[_SLICE] = types.CellType(Getitem()), types.CellType(builtins.slice)
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(cells[name] for name in code.co_freevars))
    new.__kwdefaults__ = fn.__kwdefaults__
    return functools.update_wrapper(new, fn, updated=())


def _converted_code(fn: types.FunctionType):
    """The code of `fn` converted, compiled inside `def factory(getitem, slice, *closure)`
    so that its free variables stay free (the closure cells are `fn`'s own)."""
    node = _function_node(fn)
    if node is None:
        return None
    node = _Subscripts().visit(node)
    if isinstance(node, ast.Lambda):
        inner: list[ast.stmt] = [ast.Return(value=node)]
    else:
        node.decorator_list = []
        inner = [node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))]
    params = [_GETITEM, _SLICE, *fn.__code__.co_freevars]
    factory = ast.FunctionDef(
        name="__pforjac_factory__", body=inner, decorator_list=[], returns=None, type_params=[],
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params], kwonlyargs=[],
                           kw_defaults=[], defaults=[]))
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    try:
        code = compile(module, fn.__code__.co_filename, "exec")
    except (SyntaxError, ValueError, TypeError):
        return None
    factory = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    original = fn.__code__
    return next((c for c in factory.co_consts if isinstance(c, types.CodeType)
                 and (c.co_name, c.co_firstlineno) == (original.co_name, original.co_firstlineno)
                 # the source read is the code that runs (not a file edited since)
                 and c.co_varnames == original.co_varnames
                 and set(c.co_names) == set(original.co_names)), None)


def _function_node(fn: types.FunctionType):
    """The AST of `fn`'s definition (a def or a lambda), from its file's source, or None."""
    code = fn.__code__
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    if not lines:
        return None
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError):
        return None
    is_lambda = code.co_name == "<lambda>"
    found = [n for n in ast.walk(tree) if _defines(n, code, is_lambda)]
    if is_lambda and len(found) > 1:         # several on its line: the innermost around its body
        col = _first_column(code)
        found = sorted((n for n in found if n.body.end_lineno == n.lineno
                        and n.body.col_offset <= col < n.body.end_col_offset),
                       key=lambda n: n.body.end_col_offset - n.body.col_offset)[:1]
    return found[0] if len(found) == 1 else None


def _defines(node, code, is_lambda: bool) -> bool:
    if is_lambda:
        return isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != code.co_name:
        return False
    first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    return code.co_firstlineno in (first, node.lineno)


def _first_column(code) -> int:
    """The column where a lambda's body starts (its first positioned instruction)."""
    for line, _, col, _ in code.co_positions():
        if line == code.co_firstlineno and col:
            return col
    return -1


class _Subscripts(ast.NodeTransformer):
    """`a[k]` read as a value -> `getitem(a, k)`, slices in k as `slice(...)` calls."""

    def visit_Subscript(self, node: ast.Subscript):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        call = ast.Call(func=ast.Name(id=_GETITEM, ctx=ast.Load()),
                        args=[node.value, _key(node.slice)], keywords=[])
        return ast.copy_location(call, node)


def _key(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Slice):
        bounds = [b if b is not None else ast.Constant(value=None)
                  for b in (node.lower, node.upper, node.step)]
        return ast.copy_location(
            ast.Call(func=ast.Name(id=_SLICE, ctx=ast.Load()), args=bounds, keywords=[]), node)
    if isinstance(node, ast.Tuple):
        return ast.copy_location(ast.Tuple(elts=[_key(e) for e in node.elts], ctx=ast.Load()), node)
    return node
