"""PyTorch's functional API (`torch.autograd.functional`) on pforjac's tapes and pfor.

`jacobian`, `hessian`, `vjp`, `jvp` and `hvp` take a function and its inputs
(a Tensor or a tuple of Tensors; numpy arrays are converted) and nest their
results the way PyTorch does (given numpy arrays or Python numbers at top level, they return
numpy arrays: `pforjac.boundary`; given Tensors, Tensors). Reverse mode runs `func` once under a
`GradientTape` and takes one row of the Jacobian per output entry: all rows at
once through pfor (`vectorize=True`, the default), or one row per Python loop
iteration with `vectorize=False` (the same numbers, 35-300x slower). Forward mode traces
`func` once into a Program and vectorizes its jvp over the input basis: one
column per input entry, all columns in one pass.

Which mode: reverse costs one vjp per *output* entry, forward one jvp per
*input* entry. Use `strategy="forward-mode"` when the inputs have fewer
entries than the outputs (tall Jacobians, R^8 -> R^4096), reverse mode when
they have more (wide Jacobians, R^4096 -> R^8, gradients of losses);
`benchmarks/fwd_vs_rev.py` measures the difference.

Differences from PyTorch: `jacobian` and `hessian` vectorize by default
(PyTorch's `vectorize=False` default runs the row loop; pass `vectorize=False` for it,
e.g. to debug a function pfor can't convert), and `strict=True` works vectorized in
reverse mode (PyTorch refuses that pair); forward mode also works with `create_graph=True`;
`func` must be traceable for forward mode and `jvp` (no Python `if` on tensor
values: use `pforjac.where`); `strict=True` refuses an output independent of an
input, but not (as PyTorch also does with `create_graph=True`) a derivative that
is constant in the inputs, as a linear function's is; complex inputs follow
JAX's (holomorphic) convention, without PyTorch's conjugate in `vjp`.
"""
from __future__ import annotations

import contextlib
import numbers
from typing import Callable

import numpy as np

from . import core, ops
from .boundary import numbers_as_array, numpy_boundary
from .forward import inputs_reaching_outputs, jvp_program
from .memory import check_results_fit, entry_point, working_memory_advice
from .ops.shape import reshape_p
from .pfor import c_ordered, run_loop
from .progress import chunk_option, enabled as progress_option
from .program import make_program
from .pytree_inputs import pytree_inputs
from .tape import GradientTape
from .inputs import check_differentiable_input
from .tensor import (ConcretizationError, Tensor, as_tensor, check_not_complex_for_real,
                     is_float)
from .tree import tree_unflatten

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "UnsupportedOptionsError"]

_STRATEGIES = ("reverse-mode", "forward-mode")


class UnsupportedOptionsError(ValueError, NotImplementedError):
    """A combination of options that is refused (PyTorch raises NotImplementedError/RuntimeError)."""


# -- argument checking and result nesting -----------------------------------------------------
def _check_func(func, fn_name: str) -> None:
    if not callable(func):
        raise TypeError(f"{fn_name}: func must be callable (a function of Tensors), "
                        f"got {type(func).__name__}")


def _as_tuple(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(was it a tuple, the Tensors as a tuple); numpy arrays, Python numbers and lists of
    numbers (one array, as numpy reads them) are converted."""
    if value is None and arg_name == "inputs":
        raise TypeError(f"{fn_name}: {arg_name} is None; pass a numpy array or a Tensor (or a "
                        f"tuple of them)")
    value = numbers_as_array(value)
    is_tuple = isinstance(value, (tuple, list))
    values = tuple(value) if is_tuple else (value,)
    for k, v in enumerate(values):
        number = arg_name in ("inputs", "v") and isinstance(v, numbers.Number)
        if not (number or isinstance(v, (Tensor, np.ndarray, np.generic))):
            where = f"the value at index {k}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"{fn_name}: {arg_name} must be a Tensor (or numpy array) or a tuple "
                            f"of them, but {where} has type {type(v).__name__}")
    return is_tuple, tuple(as_tensor(np.asarray(v) if isinstance(v, numbers.Number) else v)
                           for v in values)      # (a Python float as numpy reads it: float64)


def _as_inputs(inputs, fn_name: str) -> tuple[bool, tuple]:
    is_tuple, xs = _as_tuple(inputs, "inputs", fn_name)
    for k, x in enumerate(xs):
        check_differentiable_input(x.dtype, f"{fn_name}: inputs[{k}]")
    return is_tuple, xs


def _as_outputs(outputs, fn_name: str) -> tuple[bool, tuple]:
    return _as_tuple(outputs, "outputs of the user-provided function", fn_name)


def _check_strategy(strategy, arg_name: str, fn_name: str) -> None:
    if strategy not in _STRATEGIES:
        raise ValueError(f"{fn_name}: {arg_name} must be 'reverse-mode' or 'forward-mode', "
                         f"got {strategy!r}")


def _unpack(result, to_unpack):
    """PyTorch's `_tuple_postprocess`: drop the tuple levels the caller didn't use."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            result = tuple(r[0] for r in result)
        return result if to_unpack[0] else result[0]
    return result if to_unpack else result[0]


def _validate_v(v, others: tuple, is_tuple: bool, what: str, fn_name: str) -> tuple:
    """Checks `v` against the tensors it pairs with (`what` names them) and casts it."""
    if v is None:
        if len(others) == 1 and others[0].size == 1:
            return (ops.ones(others[0].shape, _float_dtype(others[0])),)
        raise ValueError(f"{fn_name}: v can only be None when the {what} is a single Tensor with "
                         f"a single element; pass v shaped like the {what}")
    _, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(others):
        raise ValueError(f"{fn_name}: v holds {len(vs)} tensors, but there are {len(others)} {what}s")
    for k, (a, b) in enumerate(zip(vs, others)):
        name = f"v[{k}]" if is_tuple or len(vs) > 1 else "v"
        if tuple(a.shape) != tuple(b.shape):
            raise ValueError(f"{fn_name}: {name} has shape {tuple(a.shape)}, but the {what} it "
                             f"pairs with has shape {tuple(b.shape)}")
        check_not_complex_for_real(a, _float_dtype(b), f"{fn_name}: {name}", what)
    return tuple(ops.cast(a, _float_dtype(b)) for a, b in zip(vs, others))


def _float_dtype(x: Tensor):
    return x.dtype if is_float(x.dtype) else np.dtype(np.float32)


# -- create_graph ------------------------------------------------------------------------------
@contextlib.contextmanager
def _graph_mode(create_graph: bool):
    """With create_graph=False, outer tapes don't record the computation (results are detached)."""
    if create_graph:
        yield
        return
    state = core.current_state()
    saved = list(state.tapes)
    for tape in saved:                  # paused (a stop_recording inside has nothing to do)
        tape._pop()
    try:
        yield
    finally:
        for tape in saved:              # in their order: the stack is as it was
            tape._push()


def _detach(values, create_graph: bool) -> tuple:
    """Cuts results from the graph unless create_graph (matters inside traces)."""
    if create_graph:
        return tuple(values)
    return tuple(ops.stop_gradient(v) for v in values)


def _alias(x: Tensor) -> Tensor:
    """A fresh differentiable view of x, as PyTorch's `view_as`: closures over x don't count."""
    return reshape_p.bind(x, shape=tuple(x.shape))


def _watched_call(tape: GradientTape, func: Callable, xs: tuple):
    xs = tuple(_alias(x) for x in xs)
    tape.watch(list(xs))
    return xs, func(*xs)


def _zeros_for(out: Tensor, x: Tensor) -> Tensor:
    return ops.zeros(tuple(out.shape) + tuple(x.shape), x.dtype)


# -- jacobian ----------------------------------------------------------------------------------
@numpy_boundary
@pytree_inputs("jacobian")
def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
             vectorize: bool = True, strategy: str = "reverse-mode", *,
             parallel_iterations: int | None = None, chunk_size: int | None = None,
             progress: bool = True):
    """Jacobian of `func` at `inputs`, as `torch.autograd.functional.jacobian`.

    `pj.jacobian(func)` without inputs is JAX's form (pforjac.transforms.jacobian): a
    function of func's arguments, so `scipy.optimize.root(fun, x0, jac=pj.jacobian(fun))`.

    Args:
        func: a function of Tensors returning a Tensor or a tuple of Tensors.
        inputs: a Tensor or a tuple of Tensors (numpy arrays are converted).
        create_graph: if True, the result can be differentiated again (by an
            outer `GradientTape` or a further `jacobian`); otherwise it is detached.
        strict: if True, raise when an output does not depend on an input
            (otherwise that block is zeros). Not available in forward mode.
        vectorize: compute all rows (or columns) at once with pfor (the default;
            PyTorch's default is False), or, with False, one vjp per row in a Python
            loop: the same numbers, much slower (a 1000x9 least-squares Jacobian
            took 41 ms instead of 0.2 ms here).
        strategy: "reverse-mode" (one vjp per output entry) or "forward-mode"
            (one jvp per input entry, requires `vectorize=True`); prefer
            forward mode when the inputs have fewer entries than the outputs.
        parallel_iterations: (pforjac's extension) with `vectorize=True`, how many
            rows or columns pfor computes at a time; bounds the working memory. By
            default all at once, or in chunks that fit when that would not fit in the
            memory available (see docs/scipy.md, "Long Jacobians").
        chunk_size: the same as parallel_iterations (torch.func.jacrev's name).
        progress: a progress bar (tqdm, if installed) on a Jacobian computed in more
            than one chunk that runs longer than two seconds; False for none.

    Returns:
        `J[i][j]` of shape `outputs[i].shape + inputs[j].shape` and inputs[j]'s
        dtype (forward mode of a real-to-complex function: the output's complex
        dtype, its derivative in full; reverse mode gives its real part); a level
        of tuple is dropped where `inputs` or the output is a single Tensor.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> x = np.array([[0.0, 1.0], [2.0, 3.0]])
        >>> J = pj.jacobian(lambda x: x.exp().sum(axis=1), x)
        >>> type(J).__name__, J.shape, float(J[1, 0, 0])
        ('ndarray', (2, 2, 2), 0.0)
    """
    _check_func(func, "jacobian")
    is_inputs_tuple, xs = _as_inputs(inputs, "jacobian")
    _check_strategy(strategy, "strategy", "jacobian")
    chunk = chunk_option(parallel_iterations, chunk_size, "jacobian")
    with entry_point("jacobian", "parallel_iterations"), progress_option(progress):
        is_outputs_tuple, rows = _jacobian(func, xs, create_graph, strict, vectorize, strategy,
                                           chunk, "jacobian")
    return _unpack(rows, (is_outputs_tuple, is_inputs_tuple))


def _independent(fn_name: str, i: int, j: int) -> str:
    if fn_name == "hessian":      # the rows are the gradient's entries: name what is constant
        return (f"hessian: the gradient of the user-provided function with respect to input {i} "
                f"is independent of input {j} (as for a function linear in it)")
    return f"{fn_name}: output {i} of the user-provided function is independent of input {j}"


def _jacobian(func, xs: tuple, create_graph: bool, strict: bool, vectorize: bool, strategy: str,
              parallel_iterations, fn_name: str):
    """The rows of the Jacobian of `func` at `xs` (checked options; `fn_name` for errors)."""
    strategy_arg = "outer_jacobian_strategy" if fn_name == "hessian" else "strategy"
    if strict and strategy == "forward-mode":
        raise UnsupportedOptionsError(
            f"{fn_name}: strict=True is not supported with {strategy_arg}='forward-mode'; "
            f"set strict=False, or use {strategy_arg}='reverse-mode'")
    if strategy == "forward-mode" and not vectorize:
        raise UnsupportedOptionsError(
            f"{fn_name}: {strategy_arg}='forward-mode' is only implemented with vectorize=True "
            f"(as in PyTorch); pass vectorize=True, or use {strategy_arg}='reverse-mode'")
    with _graph_mode(create_graph):
        if strategy == "forward-mode":
            with working_memory_advice(f"{fn_name} (forward mode)", parallel_iterations):
                is_outputs_tuple, rows = _jacobian_forward(func, xs, parallel_iterations)
        else:
            is_outputs_tuple, rows = _jacobian_reverse(func, xs, strict, vectorize,
                                                       parallel_iterations, fn_name)
        rows = tuple(_detach(row, create_graph) for row in rows)
    return is_outputs_tuple, rows


def _jacobian_reverse(func, xs: tuple, strict: bool, vectorize: bool, parallel_iterations,
                      fn_name: str):
    """One tape.jacobian per output: its rows by pfor (vectorize) or by the while-loop."""
    with GradientTape(persistent=True) as tape:
        aliases, outputs = _watched_call(tape, func, xs)
    is_outputs_tuple, outputs = _as_outputs(outputs, fn_name)
    tape._mark_recorded(outputs)       # computed in the block: a constant one is unconnected
    rows = []
    for i, out in enumerate(outputs):
        blocks = tape.jacobian(out, list(aliases), parallel_iterations=parallel_iterations,
                               experimental_use_pfor=vectorize)
        row = []
        for j, (block, x) in enumerate(zip(blocks, xs)):
            if block is None:
                if strict:
                    raise RuntimeError(f"{_independent(fn_name, i, j)}; this is not allowed in "
                                       f"strict mode (pass strict=False to get zeros)")
                block = _zeros_for(out, x)
            row.append(block)
        rows.append(tuple(row))
    return is_outputs_tuple, tuple(rows)


def _trace(func, xs: tuple, fn_name: str):
    """Traces func once; returns the Program and whether it returned a tuple."""
    shape = {}

    def checked(*args):
        out = func(*args)
        shape["tuple"], _ = _as_outputs(out, fn_name)
        return out
    program = make_program(checked, [(tuple(x.shape), x.dtype) for x in xs])
    return program, shape["tuple"]


def _jacobian_forward(func, xs: tuple, parallel_iterations=None):
    """Traces func once, then pushes all basis tangents through it in one pfor pass."""
    program, is_outputs_tuple = _trace(func, xs, "jacobian")
    sizes = [x.size for x in xs]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    n = int(offsets[-1])
    check_results_fit([(tuple(out.shape) + tuple(x.shape), x.dtype)
                       for out in program.outputs for x in xs])

    def body(i):
        tangents = [ops.reshape(ops.one_hot(i - int(off) if off else i, size, x.dtype), x.shape)
                    for x, off, size in zip(xs, offsets, sizes)]
        return jvp_program(program, list(xs), tangents)[1]

    if n:
        body_program = make_program(body, [((), np.int32)])
        columns = tree_unflatten(body_program.out_tree, run_loop(body_program, n, parallel_iterations))
    else:
        columns = [None] * len(program.outputs)
    rows = []
    for out, col in zip(program.outputs, columns):
        rows.append(tuple(_zeros_for(out, x) if col is None else _columns_to_block(col, out, x, a, b)
                          for x, a, b in zip(xs, offsets[:-1], offsets[1:])))
    return is_outputs_tuple, tuple(rows)


def _columns_to_block(columns: Tensor, out, x: Tensor, start: int, stop: int) -> Tensor:
    """Stacked tangents [n, *out] -> the block out.shape + x.shape for inputs start:stop."""
    block = ops.transpose(ops.reshape(columns[int(start):int(stop)], (int(stop - start), out.size)))
    # the input's dtype, but a complex output's derivatives by a real input stay complex
    # (as jax.jacfwd's and torch's forward mode are)
    dtype = np.result_type(x.dtype, out.dtype) if out.dtype.kind == "c" else x.dtype
    return c_ordered(ops.cast(ops.reshape(block, tuple(out.shape) + tuple(x.shape)), dtype))


# -- hessian -----------------------------------------------------------------------------------
def _scalar_output(out, fn_name: str) -> Tensor:
    is_tuple, outs = _as_outputs(out, fn_name)
    if is_tuple:
        raise ValueError(f"{fn_name}: the function should return a single Tensor, got a tuple of "
                         f"{len(outs)}")
    if outs[0].size != 1:
        raise ValueError(f"{fn_name}: the Tensor returned by the function should hold a single "
                         f"element, got shape {tuple(outs[0].shape)}")
    return outs[0]


def _gradient(func, xs: tuple, fn_name: str) -> tuple[Tensor, tuple]:
    """(func's scalar output, its gradient w.r.t. xs with zeros where unconnected), differentiable."""
    with GradientTape() as tape:
        aliases, out = _watched_call(tape, func, xs)
    out = _scalar_output(out, fn_name)
    tape._mark_recorded([out])
    grads = tape.gradient(out, list(aliases))
    return out, tuple(ops.zeros(x.shape, x.dtype) if g is None else g for g, x in zip(grads, xs))


@numpy_boundary
@pytree_inputs("hessian")
def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False,
            vectorize: bool = True, outer_jacobian_strategy: str | None = None, *,
            chunk_size: int | None = None, progress: bool = True):
    """Hessian of a scalar function, as `torch.autograd.functional.hessian`.

    Vectorized by default (all rows of the Hessian at once through pfor; PyTorch's
    default `vectorize=False`, one row per loop iteration, is the same numbers about
    20x slower on a 100-D Rosenbrock function: pass it to debug a conversion).

    The Jacobian of the gradient: forward-over-reverse (`outer_jacobian_strategy=
    "forward-mode"`, JAX's `jacfwd(jacrev(f))`; it needs `vectorize=True`) or
    reverse-over-reverse (`"reverse-mode"`, PyTorch's default). The default, None, takes
    forward-over-reverse, whose rules are exact where reverse-over-reverse meets a 0/0
    (the Hessian of a function of eigenvalues at a repeated one), and falls back to
    reverse-over-reverse when `func` can't be traced (a Python `if` on a value:
    `ConcretizationError`), with `vectorize=False` and with `strict=True`. `H[i][j]` has shape `inputs[i].shape + inputs[j].shape`.
    `chunk_size` and `progress` as for `jacobian`. `pj.hessian(func)` without inputs is
    JAX's form (pforjac.transforms.hessian), a function of func's arguments:
    `minimize(f, x0, hess=pj.hessian(f))`.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> H = pj.hessian(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]))
        >>> H.tolist()
        [[6.0, 0.0], [0.0, 12.0]]
    """
    _check_func(func, "hessian")
    is_inputs_tuple, xs = _as_inputs(inputs, "hessian")
    if outer_jacobian_strategy is not None:
        _check_strategy(outer_jacobian_strategy, "outer_jacobian_strategy", "hessian")
    chunk = chunk_option(None, chunk_size, "hessian")

    def rows_by(strategy: str):
        return _jacobian(lambda *a: _gradient(func, a, "hessian")[1], xs, create_graph,
                         strict, vectorize, strategy, chunk, "hessian")[1]

    with entry_point("hessian", "chunk_size"), progress_option(progress):
        if outer_jacobian_strategy is not None:
            rows = rows_by(outer_jacobian_strategy)
        elif strict or not vectorize:           # (forward mode takes neither)
            rows = rows_by("reverse-mode")
        else:
            try:
                rows = rows_by("forward-mode")
            except ConcretizationError:         # Python control flow on values: eager tape
                rows = rows_by("reverse-mode")
    return _unpack(rows, (is_inputs_tuple, is_inputs_tuple))


# -- vjp, jvp, hvp -----------------------------------------------------------------------------
@numpy_boundary
@pytree_inputs("vjp")
def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func(inputs), v^T J)`, as `torch.autograd.functional.vjp`.

    One backward pass (no row loop, so nothing to vectorize: as fast as a gradient).

    Example:
        >>> import numpy as np, pforjac as pj
        >>> out, g = pj.vjp(lambda x: x * x, np.array([1.0, 2.0]), np.array([1.0, 1.0]))
        >>> g.tolist()
        [2.0, 4.0]
    """
    _check_func(func, "vjp")
    is_inputs_tuple, xs = _as_inputs(inputs, "vjp")
    with _graph_mode(create_graph):
        with GradientTape() as tape:
            aliases, outputs = _watched_call(tape, func, xs)
        is_outputs_tuple, outputs = _as_outputs(outputs, "vjp")
        tape._mark_recorded(outputs)
        vs = _validate_v(v, outputs, is_outputs_tuple, "output", "vjp")
        grads = tape.gradient(list(outputs), list(aliases), output_gradients=list(vs))
        grads = [_fill(g, x, k, strict, "vjp", "the output is independent of input")
                 for k, (g, x) in enumerate(zip(grads, xs))]
        outputs, grads = _detach(outputs, create_graph), _detach(grads, create_graph)
    return _unpack(outputs, is_outputs_tuple), _unpack(grads, is_inputs_tuple)


def _fill(value, like: Tensor, k: int, strict: bool, fn_name: str, why: str) -> Tensor:
    if value is not None:
        return value
    if strict:
        raise RuntimeError(f"{fn_name}: {why} {k}; this is not allowed in strict mode "
                           f"(pass strict=False to get zeros)")
    return ops.zeros(like.shape, _float_dtype(like))


@numpy_boundary
@pytree_inputs("jvp")
def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func(inputs), J v)` by forward mode, as `torch.autograd.functional.jvp`.

    `func` is traced once and its equations' jvp rules push `v` forward.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> out, t = pj.jvp(lambda x: x * x, np.array([1.0, 2.0]), np.array([1.0, 0.0]))
        >>> t.tolist()
        [2.0, 0.0]
    """
    _check_func(func, "jvp")
    is_inputs_tuple, xs = _as_inputs(inputs, "jvp")
    vs = _validate_v(v, xs, is_inputs_tuple, "input", "jvp")
    with _graph_mode(create_graph):
        program, is_outputs_tuple = _trace(func, xs, "jvp")
        if strict:              # as PyTorch's: an input that no output depends on is refused
            for k, reaches in enumerate(inputs_reaching_outputs(program)):
                if not reaches:
                    _fill(None, xs[k], k, True, "jvp", "the output is independent of input")
        outputs, tangents = jvp_program(program, list(xs), list(vs))
        tangents = [_fill(t, o, k, strict, "jvp", "the inputs do not affect output")
                    for k, (t, o) in enumerate(zip(tangents, outputs))]
        outputs, tangents = _detach(outputs, create_graph), _detach(tangents, create_graph)
    return _unpack(outputs, is_outputs_tuple), _unpack(tangents, is_outputs_tuple)


@numpy_boundary
@pytree_inputs("hvp")
def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """`(func(inputs), H v)` for a scalar `func`, as `torch.autograd.functional.hvp`.

    Computed as the vjp of the gradient with `v` (reverse over reverse; H is symmetric):
    two passes, no row loop, so nothing to vectorize.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> out, hv = pj.hvp(lambda x: (x ** 3).sum(), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
        >>> hv.tolist()
        [6.0, 12.0]
    """
    _check_func(func, "hvp")
    is_inputs_tuple, xs = _as_inputs(inputs, "hvp")
    vs = _validate_v(v, xs, is_inputs_tuple, "input", "hvp")
    with _graph_mode(create_graph):
        with GradientTape() as tape:
            aliases = tuple(_alias(x) for x in xs)
            tape.watch(list(aliases))
            out, grads = _gradient(func, aliases, "hvp")
        tape._mark_recorded(grads)
        hv = tape.gradient(list(grads), list(aliases), output_gradients=list(vs))
        hv = [_fill(h, x, k, strict, "hvp", "the gradient is independent of input")
              for k, (h, x) in enumerate(zip(hv, xs))]
        (out,), hv = _detach([out], create_graph), _detach(hv, create_graph)
    return out, _unpack(hv, is_inputs_tuple)
