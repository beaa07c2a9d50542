"""`vmap`: JAX's vectorizing map, built on pfor.

`vmap(fun, in_axes, out_axes)` is a pfor whose loop body takes the i-th slice of
each mapped argument along its axis, calls `fun` on the slices, and whose stacked
results get their loop axis moved to `out_axes`. Everything pfor does comes with
it: loop-invariant work (the unmapped arguments' computations) runs once, outside
the loop; an op without a converter runs per iteration with one warning; a body
pfor cannot convert runs as a sequential loop (`fallback_report()` lists both);
`chunk_size` is pfor's `parallel_iterations` (chunks of the mapped axis, joined).
It composes with every transform both ways: `vmap(grad(f))` for per-example
gradients, `grad` / `jacrev` of a function using `vmap`, `pj.function` of either.

Example:
    >>> import numpy as np, pforjac as pj
    >>> def loss(w, x, y):
    ...     return (np.dot(x, w) - y) ** 2
    >>> w, X, Y = np.ones(2), np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, 2.0])
    >>> per_example = pj.vmap(pj.grad(loss), in_axes=(None, 0, 0))(w, X, Y)
    >>> per_example.tolist()
    [[4.0, 8.0], [30.0, 40.0]]
"""
from __future__ import annotations

import functools
import inspect
import operator
from typing import Any, Callable

import numpy as np

from . import ops
from .boundary import numpy_boundary
from .index_conversion import trace_converting
from .memory import check_results_fit, working_memory_advice
from . import progress as _progress
from .pfor import c_ordered, check_parallel_iterations, run_body, run_loop
from .pickling import Transformed
from .program import Program, make_program
from .tree import tree_flatten as _flatten, tree_map as _tree_map
from .tensor import Tensor, as_tensor
from .tree_util import flatten_up_to, tree_flatten, tree_structure, tree_unflatten

__all__ = ["vmap", "vectorized_map"]


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, chunk_size: int | None = None,
         axis_size: int | None = None) -> Callable:
    """Vectorizes `fun` over an axis of its arguments, as `jax.vmap`.

    Args:
        fun: a function of arrays (pytrees of them), written with numpy or pforjac ops.
        in_axes: for each positional argument, the axis mapped over: an int (negative
            counts from the end), `None` (not mapped: every call sees it whole), or a
            pytree of those, a prefix of that argument's structure. An int or `None`
            alone applies to every argument. Keyword arguments are mapped over axis 0,
            as in JAX.
        out_axes: where the mapped axis goes in each output (a pytree prefix of the
            outputs); `None` for an output that does not depend on the mapped axis
            (an error names it if it does).
        chunk_size: map at most this many slices at a time (the results are joined);
            bounds the working memory, as torch.func.vmap's `chunk_size`.
        axis_size: the mapped size, needed only when no argument is mapped.

    Returns:
        The vectorized function. Given numpy arrays at top level it returns numpy arrays;
        given Tensors, or inside a tape or a trace, Tensors (differentiable again).
    """
    if not callable(fun):
        raise TypeError(f"vmap: fun must be callable, got {type(fun).__name__}")
    check_parallel_iterations(chunk_size)
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")

    @numpy_boundary
    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        leaves, treedef = tree_flatten((args, kwargs))
        axes = _leaf_axes(in_axes, args, kwargs)
        n = _mapped_size(fun, leaves, axes, treedef, axis_size)
        leaves = [_mapped_leaf(x, a, fun, k, treedef) if a is not None else x
                  for k, (x, a) in enumerate(zip(leaves, axes))]
        axes = [None if a is None else a % leaves[k].ndim for k, a in enumerate(axes)]
        program = trace_converting(fun, lambda f: make_program(
            functools.partial(_body, f, treedef, leaves, axes), [((), np.int32)]))
        return _outputs(program, n, out_axes, chunk_size)
    return Transformed(vmapped, vmap, fun, in_axes, out_axes, chunk_size, axis_size)


def vectorized_map(fn: Callable, elems, fallback_to_while_loop: bool = True, *,
                   chunk_size: int | None = None, progress: bool = True):
    """Maps `fn` over the first axis of `elems` (a tensor or nested structure), vectorized.

    As TensorFlow's: the tensors' first dimensions must agree, except that one of size 1 is
    broadcast (every iteration sees its only row). `chunk_size` rows at a time if given
    (pfor's parallel_iterations), else all at once or in chunks that fit in memory;
    `progress=False` hides the bar of a long chunked map.

    Example:
        >>> import pforjac as pj
        >>> pj.vectorized_map(lambda r: r.sum(), pj.constant([[1., 2.], [3., 4.]])).numpy()
        array([3., 7.], dtype=float32)
    """
    leaves, _ = _flatten(elems)
    if not leaves:
        raise ValueError("vectorized_map: elems holds no tensors")
    leaves = [as_tensor(x) for x in leaves]
    sizes = {x.shape[0] if x.ndim else None for x in leaves}
    if len(sizes) > 1:
        sizes.discard(1)                       # a unit first dimension is broadcast
    if len(sizes) != 1 or None in sizes:
        raise ValueError(f"vectorized_map: every element of elems needs the same first dimension "
                         f"(or 1, broadcast), got shapes {[x.shape for x in leaves]}")
    n = sizes.pop()
    elems = _tree_map(as_tensor, elems)
    chunk = _progress.chunk_option(None, chunk_size, "vectorized_map")
    program = trace_converting(fn, lambda f: make_program(
        lambda i: f(_tree_map(lambda x: x[0] if x.shape[0] == 1 < n else x[i], elems)),
        [((), np.int32)]))
    with _progress.enabled(progress):
        return run_body(program, n, fallback_to_while_loop, chunk)


def _body(fun, treedef, leaves, axes, i):
    sliced = [x if a is None else ops.gather(x, i, axis=a) for x, a in zip(leaves, axes)]
    args, kwargs = tree_unflatten(treedef, sliced)
    return fun(*args, **kwargs)


# -- axes ----------------------------------------------------------------------------------------
def _check_axes_spec(spec, what: str) -> None:
    for axis in tree_flatten(spec, is_leaf=lambda x: x is None)[0]:
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, (int, np.integer))):
            raise TypeError(f"vmap {what} must be an int, None, or a (nested) container of "
                            f"those, got {axis!r} in {spec!r}")


def _leaf_axes(in_axes, args: tuple, kwargs: dict) -> list:
    """The mapped axis (or None) of every leaf of `(args, kwargs)`."""
    if not isinstance(in_axes, tuple):
        in_axes = (in_axes,) * len(args)
    elif len(in_axes) != len(args):
        raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                         f"corresponding to the positional arguments passed to the function, but "
                         f"got len(in_axes)={len(in_axes)}, len(args)={len(args)}")
    spec = (in_axes, {k: 0 for k in kwargs})
    return _broadcast_prefix(spec, (args, kwargs), "in_axes")


def _broadcast_prefix(spec, tree, what: str) -> list:
    """`spec`'s leaves (axes or None) repeated over the leaves of the subtree each stands for."""
    spec_leaves, spec_def = tree_flatten(spec, is_leaf=lambda x: x is None)
    try:
        subtrees = flatten_up_to(spec_def, tree)
    except ValueError as e:
        raise ValueError(f"vmap {what} specification must be a tree prefix of the "
                         f"corresponding value, got specification {spec!r:.120} for value tree "
                         f"{tree_structure(tree)}: {e}") from None
    out: list = []
    for axis, subtree in zip(spec_leaves, subtrees):
        out.extend([axis] * len(tree_flatten(subtree)[0]))
    return out


def _mapped_leaf(x, axis: int, fun, k: int, treedef) -> Tensor:
    x = as_tensor(x)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"vmap was requested to map {_leaf_name(fun, k, treedef)} along axis "
                         f"{axis}, which implies that its rank should be at least "
                         f"{axis + 1 if axis >= 0 else -axis}, but is only {x.ndim} (its shape "
                         f"is {tuple(x.shape)})")
    return x


def _mapped_size(fun, leaves: list, axes: list, treedef, axis_size) -> int:
    sizes = {}
    for k, (x, a) in enumerate(zip(leaves, axes)):
        if a is not None:
            x = _mapped_leaf(x, a, fun, k, treedef)
            sizes[k] = (int(x.shape[a]), a, tuple(x.shape), x.dtype)
    if not sizes:
        if axis_size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes or "
                             "axis_size must be specified")
        return operator.index(axis_size)
    distinct = {s for s, *_ in sizes.values()} | ({axis_size} if axis_size is not None else set())
    if len(distinct) > 1:
        lines = [f"  * one axis had size {s}: axis {a} of {_leaf_name(fun, k, treedef)} of type "
                 f"{dtype.name}{list(shape)}" for k, (s, a, shape, dtype) in sizes.items()]
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + ";\n".join(lines)
                         + (f"\n  (axis_size={axis_size})" if axis_size is not None else ""))
    return distinct.pop()


def _leaf_name(fun, k: int, treedef) -> str:
    """'argument x', 'argument params (leaf 2 of 4)', "kwargs['y']": which input leaf k is."""
    args_def, kwargs_def = treedef.children
    start = 0
    for j, child in enumerate(args_def.children):
        if k < start + child.num_leaves:
            where = "" if child.num_leaves == 1 else f" (leaf {k - start} of {child.num_leaves})"
            return f"argument {_arg_name(fun, j)}{where}"
        start += child.num_leaves
    for key, child in zip(kwargs_def.aux[0], kwargs_def.children):
        if k < start + child.num_leaves:
            return f"kwargs[{key!r}]"
        start += child.num_leaves
    return f"input leaf {k}"


def _arg_name(fun, j: int) -> str:
    try:
        params = [p for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[j].name if j < len(params) else f"args[{j}]"


# -- outputs -------------------------------------------------------------------------------------
def _outputs(program: Program, n: int, out_axes, chunk_size):
    check_results_fit([((n,) + tuple(v.shape), v.dtype) for v in program.outputs], what="vmap")
    with working_memory_advice("vmap", chunk_size):
        outs = run_loop(program, n, chunk_size)
    out_tree = program.out_tree
    axes = _broadcast_prefix(out_axes, tree_unflatten(out_tree, outs), "out_axes")
    mapped = _depends_on_index(program)
    result = [_place(v, a, m, n, k) for k, (v, a, m) in enumerate(zip(outs, axes, mapped))]
    return tree_unflatten(out_tree, result)


def _place(value: Tensor, axis, mapped: bool, n: int, k: int) -> Tensor:
    if axis is None:
        if mapped:
            raise ValueError(f"vmap out_axes: output {k} was declared unmapped (out_axes None), "
                             f"but it depends on the mapped axis; give it an int out_axes")
        if n == 0:
            raise ValueError(f"vmap out_axes: output {k} is unmapped (out_axes None), but the "
                             f"mapped axis has size 0, so no call computed it")
        return value[0]
    ndim = value.ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"vmap out_axes: axis {axis} is out of bounds for output {k}, which "
                         f"has {ndim - 1} dimensions before mapping")
    axis %= ndim
    return c_ordered(value if axis == 0 else ops.moveaxis(value, 0, axis))


def _depends_on_index(program: Program) -> list[bool]:
    """For each output of the loop body, whether it depends on the loop index."""
    dep = {id(program.inputs[0])}
    for eqn in program.equations:
        if any(id(v) in dep for v in eqn.inputs):
            dep.update(id(v) for v in eqn.outputs)
    return [id(v) in dep for v in program.outputs]
