"""JAX's first transforms on pforjac: `grad`, `value_and_grad`, `jacrev`, `jacfwd`.

They take JAX's arguments (`argnums` an int or a tuple of ints, `has_aux`) and pytrees of
inputs (nested lists, tuples and dicts, as `tree.py` flattens them), and work on functions
written with numpy (`np.sin(x)`, `x @ A`: numpy's dispatch runs pforjac's ops). Inputs given
as numpy arrays or Python numbers are read as numpy reads them (Python floats: float64).
Given numpy arrays or Python numbers at top level, they return numpy arrays (numpy in, numpy
out: `pforjac.boundary`); given Tensors, or inside a tape or trace, Tensors, differentiable
again: `jacfwd(jacrev(f))` is a Hessian.

Example:
    >>> import numpy as np, pforjac as pj
    >>> f = lambda x, y: np.sum(np.sin(x) * y)
    >>> dx, dy = pj.grad(f, argnums=(0, 1))(np.array([0.0, 1.0]), np.array([2.0, 3.0]))
    >>> dx.round(4).tolist(), dy.round(4).tolist()
    ([2.0, 1.6209], [0.0, 0.8415])
"""
from __future__ import annotations

import functools
import operator
from typing import Callable, NamedTuple

import numpy as np

from . import functional
from .boundary import numbers_as_array, numpy_boundary
from .memory import entry_point
from .pickling import Transformed
from .ops.shape import reshape_p
from .tape import GradientTape
from .tensor import ConcretizationError, Tensor, as_tensor, is_float
from .tree import tree_flatten, tree_unflatten

__all__ = ["grad", "value_and_grad", "jacrev", "jacfwd", "jacobian", "hessian", "float0"]


def _argnums(argnums, nargs: int, fn_name: str) -> tuple[tuple, bool]:
    """(the positions, whether argnums was a tuple), checked against the call's arguments."""
    is_tuple = isinstance(argnums, (tuple, list))
    nums = tuple(argnums) if is_tuple else (argnums,)
    for k in nums:
        try:
            k = operator.index(k)
        except TypeError:
            raise TypeError(f"{fn_name}: argnums must be an int or a tuple of ints, got "
                            f"{argnums!r}") from None
        if not -nargs <= k < nargs:
            raise ValueError(f"{fn_name}: argnums {argnums!r} asks for positional argument {k}, "
                             f"but the function was called with {nargs} positional arguments")
    return tuple(k % nargs for k in nums), is_tuple


# JAX's dtype of the gradient of an integer input (`allow_int=True`): a structured dtype with
# no bytes, so such a "gradient" holds no numbers and can't be mistaken for zeros of a float
float0 = np.dtype([("float0", np.void, 0)])


class _Options(NamedTuple):
    fn_name: str
    allow_int: bool = False
    holomorphic: bool = False


def _input(leaf, opts: _Options):
    """A fresh differentiable view of one input leaf (closures over the caller's Tensor
    don't count, as in JAX), or, for an integer input with allow_int, its float0 zeros."""
    x = leaf if isinstance(leaf, Tensor) else Tensor._from_array(np.array(leaf))
    kind, name = x.dtype.kind, opts.fn_name
    if kind in "biu" and opts.allow_int:
        return np.zeros(tuple(x.shape), float0)
    if x.dtype == object:
        raise TypeError(f"{name}: an input leaf of type {type(leaf).__name__} is not an array; "
                        f"register its class as a pytree node "
                        f"(pforjac.tree_util.register_dataclass or register_pytree_node)")
    if kind not in "fc":
        raise TypeError(f"{name} requires real- or complex-valued inputs (a floating dtype), "
                        f"but an input has dtype {x.dtype.name}; cast it to float first, or pass "
                        f"allow_int=True for a float0 gradient")
    if opts.holomorphic and kind != "c":
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but "
                        f"got {x.dtype.name}")
    if name == "jacfwd" and kind == "c" and not opts.holomorphic:
        raise TypeError(f"jacfwd requires real-valued inputs, but got {x.dtype.name}. For "
                        f"holomorphic differentiation, pass holomorphic=True")
    return reshape_p.bind(x, shape=tuple(x.shape)) if x is leaf else x   # (made here: fresh)


def _check_output(value: Tensor, opts: _Options) -> None:
    if value.dtype.kind == "c" and not opts.holomorphic:
        raise TypeError(f"{opts.fn_name} requires real-valued outputs, but got "
                        f"{value.dtype.name}. For holomorphic differentiation, pass "
                        f"holomorphic=True; for a real loss of complex values take its real "
                        f"part or modulus (np.real(z), np.abs(z) ** 2)")
    if opts.holomorphic and value.dtype.kind != "c":
        raise TypeError(f"{opts.fn_name} with holomorphic=True requires outputs with complex "
                        f"dtype, but got {value.dtype.name}")


def _prepared(args: tuple, nums: tuple, opts: _Options):
    """(args with each differentiated leaf replaced by a fresh Tensor, the flat Tensors,
    for each differentiated argument its tree and its leaves' slots: an index into the flat
    Tensors, or the float0 zeros of an integer leaf)."""
    args, flat, trees = list(args), [], []
    for k in nums:
        if args[k] is None:
            raise TypeError(f"{opts.fn_name}: the argument to differentiate (position {k}) is "
                            f"None; pass a numpy array, a Python number or a Tensor")
        args[k] = numbers_as_array(args[k])      # [1.0, 2.0] is an array, as numpy reads it
        leaves, tree = tree_flatten(args[k])
        slots = []
        for j, v in enumerate(leaves):
            x = _input(v, opts)
            if isinstance(x, Tensor):
                slots.append(len(flat))
                flat.append(x)
                leaves[j] = x
            else:
                slots.append(x)
        args[k] = tree_unflatten(tree, leaves)
        trees.append((tree, slots, leaves))
    return args, flat, trees


def _regrouped(values: list, trees: list, is_tuple: bool, zeros=None):
    """Flat per-input results back in the structure of the differentiated arguments; an
    integer leaf gets its float0 zeros (`zeros(slot)` shapes them)."""
    out = []
    for tree, slots, _ in trees:
        leaves = [values[s] if isinstance(s, int) else (s if zeros is None else zeros(s))
                  for s in slots]
        out.append(tree_unflatten(tree, leaves))
    return tuple(out) if is_tuple else out[0]


def _split_aux(out, has_aux: bool, fn_name: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{fn_name}(..., has_aux=True) needs the function to return a pair "
                        f"(output, auxiliary data), got {type(out).__name__}")
    return out[0], out[1]


def _scalar(value, opts: _Options) -> Tensor:
    if isinstance(value, (tuple, list)):
        raise TypeError(f"{opts.fn_name}: the function returned a {type(value).__name__} of "
                        f"{len(value)}, but a gradient needs a scalar output; if the other "
                        f"items are auxiliary data, pass has_aux=True and return (output, aux)")
    if not isinstance(value, Tensor):
        value = Tensor._from_array(np.array(value))
    if value.shape != ():
        raise TypeError(f"{opts.fn_name}: Gradient only defined for scalar-output functions. "
                        f"Output had shape: {tuple(value.shape)} (use jacrev or jacfwd for a "
                        f"Jacobian)")
    if not is_float(value.dtype):
        raise TypeError(f"{opts.fn_name} requires real-valued outputs (a floating dtype), got "
                        f"{value.dtype.name}")
    _check_output(value, opts)
    return value


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False) -> Callable:
    """`fun`'s value and its gradient with respect to the arguments at `argnums`, as
    `jax.value_and_grad`: `(value, grad)`, or `((value, aux), grad)` with `has_aux=True`. A
    non-scalar output raises TypeError, as in JAX. An input the output does not depend on
    gets zeros (as in JAX; `GradientTape.gradient` gives None). With `holomorphic=True`
    the inputs and the output are complex and the gradient is the complex derivative;
    with `allow_int=True` an integer input gets a gradient of dtype `pforjac.float0`
    (numpy zeros that hold no bytes, as JAX's float0), otherwise it raises.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> value, g = pj.value_and_grad(lambda x: np.sum(x ** 2))(np.array([1.0, 2.0]))
        >>> float(value), g.tolist()
        (5.0, [2.0, 4.0])
    """
    opts = _Options("grad", allow_int, holomorphic)

    @numpy_boundary
    @functools.wraps(fun)
    def value_and_grad_fun(*args, **kwargs):
        nums, is_tuple = _argnums(argnums, len(args), "grad")
        args, flat, trees = _prepared(args, nums, opts)
        with GradientTape() as tape:
            tape.watch(flat)
            value, aux = _split_aux(fun(*args, **kwargs), has_aux, "grad")
            value = _scalar(value, opts)
        tape._mark_recorded([value])
        grads = tape.gradient(value, flat, unconnected_gradients="zero") if flat else []
        grads = _regrouped(grads, trees, is_tuple)
        return ((value, aux) if has_aux else value), grads
    return Transformed(value_and_grad_fun, value_and_grad, fun, argnums, has_aux, holomorphic,
                       allow_int)


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False) -> Callable:
    """The gradient of the scalar function `fun` with respect to the arguments at `argnums`,
    as `jax.grad` (returns `grad`, or `(grad, aux)` with `has_aux=True`; `holomorphic` and
    `allow_int` as in `value_and_grad`).

    Example:
        >>> import numpy as np, pforjac as pj
        >>> pj.grad(lambda x: np.sum(np.exp(x)))(np.array([0.0, 1.0])).round(4).tolist()
        [1.0, 2.7183]
    """
    value_and_grad_fun = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_fun(*args, **kwargs):
        value, grads = value_and_grad_fun(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return Transformed(grad_fun, grad, fun, argnums, has_aux, holomorphic, allow_int)


def _called(args: list, nums: tuple, trees: list, xs) -> list:
    """The arguments with the differentiated leaves taken from `xs`."""
    called = list(args)
    for k, (tree, slots, leaves) in zip(nums, trees):
        called[k] = tree_unflatten(tree, [xs[s] if isinstance(s, int) else leaf
                                          for s, leaf in zip(slots, leaves)])
    return called


def _jacobian_transform(fun, argnums, has_aux: bool, strategy: str, opts: _Options,
                        chunk_size=None, progress: bool = True) -> Callable:
    """jacrev and jacfwd: `functional.jacobian` (vectorized) of `fun` flattened to a function
    of its differentiated leaves returning its output leaves; the blocks regrouped as JAX
    does, the output's structure outside, the input's inside."""
    fn_name = opts.fn_name

    @numpy_boundary
    @functools.wraps(fun)
    def jacobian_fun(*args, **kwargs):
        nums, is_tuple = _argnums(argnums, len(args), fn_name)
        args, flat, trees = _prepared(args, nums, opts)
        seen = {}

        def flat_fun(*xs):
            out, seen["aux"] = _split_aux(fun(*_called(args, nums, trees, xs), **kwargs),
                                          has_aux, fn_name)
            leaves, seen["tree"] = tree_flatten(out)
            leaves = [as_tensor(v) for v in leaves]
            for v in leaves if fn_name == "jacrev" or opts.holomorphic else ():
                _check_output(v, opts)
            seen["shapes"] = [tuple(v.shape) for v in leaves]
            return tuple(leaves)

        if flat:
            with entry_point(fn_name, "chunk_size"):
                rows = functional.jacobian(flat_fun, tuple(flat), create_graph=True,
                                           vectorize=True, strategy=strategy,
                                           chunk_size=chunk_size, progress=progress)
        else:                                  # only integer inputs: float0 blocks alone
            rows = [()] * len(flat_fun())
        blocks = [_regrouped(list(row), trees, is_tuple,
                             lambda z, out=out: np.zeros(out + z.shape, float0))
                  for row, out in zip(rows, seen["shapes"])]
        result = tree_unflatten(seen["tree"], blocks)
        if not has_aux:
            return result
        aux = seen["aux"] if strategy == "reverse-mode" else \
            _split_aux(fun(*args, **kwargs), True, fn_name)[1]   # (traced there: run again)
        return result, aux
    return jacobian_fun


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False, *, chunk_size: int | None = None,
           progress: bool = True) -> Callable:
    """The Jacobian of `fun` by reverse mode, all rows at once (pfor), as `jax.jacrev`: for
    an output leaf of shape `out` and an input leaf of shape `in`, a block `out + in`, nested
    in the output's structure, then the inputs'. A complex output needs `holomorphic=True`
    (then every input and output is complex); `allow_int` as in `value_and_grad`.
    `chunk_size` rows at a time if given (as torch.func.jacrev's), else all at once, or in
    chunks that fit when all at once would not fit in memory; `progress=False` hides the bar
    of a long chunked Jacobian.

    Example:
        >>> import numpy as np, pforjac as pj
        >>> pj.jacrev(lambda x: np.sin(x) * 2.0)(np.zeros(2)).tolist()
        [[2.0, 0.0], [0.0, 2.0]]
    """
    call = _jacobian_transform(fun, argnums, has_aux, "reverse-mode",
                               _Options("jacrev", allow_int, holomorphic), chunk_size, progress)
    return Transformed(call, jacrev, fun, argnums, has_aux, holomorphic, allow_int,
                       chunk_size=chunk_size, progress=progress)


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False, *, chunk_size: int | None = None,
           progress: bool = True) -> Callable:
    """The Jacobian of `fun` by forward mode, all columns at once (pfor), as `jax.jacfwd`
    (the result is laid out as jacrev's). `fun` is traced: no Python `if` on tensor values.
    With `has_aux=True` the function runs once more, eagerly, for its auxiliary data. A
    complex input needs `holomorphic=True`; `allow_int` as in `value_and_grad`.
    `chunk_size` and `progress` as for `jacrev` (columns instead of rows).

    Example:
        >>> import numpy as np, pforjac as pj
        >>> pj.jacfwd(lambda x: x ** 2)(np.array([1.0, 3.0])).tolist()
        [[2.0, 0.0], [0.0, 6.0]]
    """
    call = _jacobian_transform(fun, argnums, has_aux, "forward-mode",
                               _Options("jacfwd", allow_int, holomorphic), chunk_size, progress)
    return Transformed(call, jacfwd, fun, argnums, has_aux, holomorphic, allow_int,
                       chunk_size=chunk_size, progress=progress)


_NO_INPUTS = object()


def _torch_or_jax(torch_form: Callable, jax_form: Callable) -> Callable:
    """`torch_form(func, inputs, ...)` (`pj.jacobian(f, x)`, PyTorch's), or, called with
    the function alone, `jax_form(func, argnums)` (`pj.jacobian(f)`, JAX's): a function of
    f's arguments, as scipy's `jac=`/`hess=` take it."""
    @functools.wraps(torch_form)
    def either(func, inputs=_NO_INPUTS, *args, argnums=0, **kwargs):
        if inputs is _NO_INPUTS and not args and not kwargs:
            if not callable(func):
                raise TypeError(f"{torch_form.__name__}: func must be callable, got "
                                f"{type(func).__name__}")
            return jax_form(func, argnums)
        if argnums != 0:
            raise TypeError(f"{torch_form.__name__}: argnums is JAX's form's argument "
                            f"({torch_form.__name__}(func, argnums=...)); with inputs given, "
                            f"pass the inputs to differentiate")
        return torch_form(func, inputs, *args, **kwargs)
    return either


jacobian = _torch_or_jax(functional.jacobian, jacrev)


def _jax_hessian(f: Callable, argnums=0) -> Callable:
    """JAX's hessian(f), `jacfwd(jacrev(f))`, as hessian(f, x)'s default: reverse over
    reverse where f can't be traced (a Python `if` on a value)."""
    forward, reverse = jacfwd(jacrev(f, argnums), argnums), jacrev(jacrev(f, argnums), argnums)

    @functools.wraps(f)
    def hessian_fun(*args, **kwargs):
        try:
            return forward(*args, **kwargs)
        except ConcretizationError:
            return reverse(*args, **kwargs)
    return Transformed(hessian_fun, _jax_hessian, f, argnums)


hessian = _torch_or_jax(functional.hessian, _jax_hessian)
