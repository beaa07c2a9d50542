"""Custom derivatives of a user's function: `custom_jvp`, `custom_vjp` (JAX's semantics)
and `custom_gradient` (TensorFlow's).

The rules are written with pforjac ops or numpy on Tensors, so they are differentiable
again (a Hessian differentiates the rule), vectorized by pfor, compiled by
`pforjac.function` and followed by forward and reverse mode alike:

- a `custom_jvp` function's reverse mode transposes its tangent rule (the rule is linear
  in the tangents, so reverse mode over it, at zero tangents, gives the vjp);
- a `custom_vjp` function's forward mode transposes its cotangent rule the same way (JAX
  refuses forward mode there; here jacfwd and jacrev agree, both following `bwd`).

Called with no tape recording and no trace open, a custom function is its primal,
run as it is. Otherwise it is one equation of a call primitive (`custom_calls.py`).
Only the arguments are differentiated: a value the function closes over is a constant to
its rule. Rules must be pure (the same values in, the same values out): compiled code and
the loop cache reuse them.

Example:
    >>> import numpy as np, pforjac as pj
    >>> @pj.custom_jvp
    ... def log1pexp(x):
    ...     return np.log1p(np.exp(x))
    >>> @log1pexp.defjvp
    ... def log1pexp_jvp(primals, tangents):
    ...     (x,), (t,) = primals, tangents
    ...     return log1pexp(x), t * (1 - 1 / (1 + np.exp(x)))
    >>> float(pj.grad(log1pexp)(np.float64(100.0)))
    1.0
"""
from __future__ import annotations

import functools
import inspect
from typing import Callable

import numpy as np

from . import core
from .custom_calls import CallRules, custom_jvp_call_p, custom_vjp_call_p, register_rules
from .tensor import Tensor
from .tree import flatten_like, tree_flatten, tree_unflatten

__all__ = ["custom_jvp", "custom_vjp", "custom_gradient"]


def _shapes(leaves) -> tuple:
    return tuple(tuple(np.shape(x)) for x in leaves)


def _tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor._from_array(np.asarray(x))


def _plain() -> bool:
    state = core.current_state()
    return not state.tapes and not state.traces and state.lifting is None


class _Custom:
    """What custom_jvp and custom_vjp share: argument handling and the call's binding."""

    prim = None

    def __init__(self, fun: Callable, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(sorted(int(k) for k in nondiff_argnums))
        self._rules: dict = {}

    def __get__(self, obj, objtype=None):          # as a method: bound like a function
        return self if obj is None else functools.partial(self, obj)

    def _arguments(self, args, kwargs) -> tuple:
        if not kwargs:
            return args
        bound = inspect.signature(self.fun).bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.args

    def __call__(self, *args, **kwargs):
        args = self._arguments(args, kwargs)
        self._check_defined()
        if _plain():
            return self.fun(*args)
        nondiff = tuple(args[k] for k in self.nondiff_argnums)
        diff = [a for k, a in enumerate(args) if k not in self.nondiff_argnums]
        leaves, in_tree = tree_flatten(diff)
        xs = [_tensor(x) for x in leaves]
        rec = self._record(nondiff, in_tree)
        residuals = self.prim is custom_vjp_call_p and bool(core.current_state().tapes)
        outs = self.prim.bind(*xs, rules=rec.key, residuals=residuals)
        out_tree, n_out, _ = rec.layout(xs)
        return tree_unflatten(out_tree, outs[:n_out])

    def _record(self, nondiff: tuple, in_tree) -> CallRules:
        try:
            key = (nondiff, repr(in_tree))
            hash(key)
        except TypeError:
            raise TypeError(f"{type(self).__name__} '{self.__name__}': the arguments at "
                            f"nondiff_argnums {self.nondiff_argnums} must be hashable "
                            f"(functions, numbers, strings, tuples); pass arrays as ordinary "
                            f"arguments") from None
        if key not in self._rules:
            self._rules[key] = register_rules(self._make_rules(nondiff, in_tree))
        return self._rules[key]

    def _full(self, nondiff: tuple, in_tree, xs) -> list:
        """The call's positional arguments from the differentiated leaves `xs`."""
        args = list(tree_unflatten(in_tree, xs))
        for k, value in zip(self.nondiff_argnums, nondiff):
            args.insert(k, value)
        return args

    def _flat_fun(self, rec: CallRules, nondiff: tuple, in_tree) -> Callable:
        def fun(*xs):
            out_leaves, out_tree = tree_flatten(self.fun(*self._full(nondiff, in_tree, xs)))
            rec.layouts[_avals(xs)] = (out_tree, len(out_leaves), None)
            return out_leaves
        return fun


def _avals(xs) -> tuple:
    from .custom_calls import _avals_key
    return _avals_key([_tensor(x) if not hasattr(x, "dtype") else x for x in xs])


class custom_jvp(_Custom):
    """A function with its own forward-mode (tangent) rule, as `jax.custom_jvp`.

    `f.defjvp(rule)` with `rule(primals, tangents) -> (primal_out, tangent_out)` (with
    `nondiff_argnums`, `rule(*nondiff_args, primals, tangents)`), or `f.defjvps(*rules)`
    with one `rule(t, ans, *args)` per argument. Reverse mode transposes the rule, which
    must be linear in the tangents.
    """

    prim = custom_jvp_call_p

    def __init__(self, fun: Callable, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        self.jvp, self._rules = jvp, {}
        return jvp

    def defjvps(self, *per_argument: Callable | None) -> None:
        """One rule per differentiated argument, `rule(t, ans, *args) -> output tangent`."""
        def jvp(*rest):
            primals, tangents = rest[-2], rest[-1]
            ans = self(*rest[:-2], *primals)
            terms = [r(t, ans, *primals) for r, t in zip(per_argument, tangents) if r is not None]
            return ans, functools.reduce(lambda a, b: a + b, terms)
        self.defjvp(jvp)

    def _check_defined(self) -> None:
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} "
                                 f"using defjvp.")

    def _make_rules(self, nondiff: tuple, in_tree) -> CallRules:
        rec = CallRules(self.__name__, None, jvp=lambda xs, ts: None)
        rec.fun = self._flat_fun(rec, nondiff, in_tree)

        def jvp(xs, ts):
            primals = tuple(tree_unflatten(in_tree, xs))
            tangents = tuple(tree_unflatten(in_tree, ts))
            out, t_out = _pair(self.jvp(*nondiff, primals, tangents), "jvp rule", self.__name__)
            out_leaves, out_tree = tree_flatten(out)
            return out_leaves, flatten_like(out_tree, t_out)
        rec.jvp = jvp
        return rec


def _pair(result, what: str, name: str) -> tuple:
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise TypeError(f"the {what} of custom function '{name}' must return a pair, got "
                        f"{type(result).__name__}")
    return result[0], result[1]


class custom_vjp(_Custom):
    """A function with its own reverse-mode rule, as `jax.custom_vjp`.

    `f.defvjp(fwd, bwd)`: `fwd(*args) -> (output, residuals)`, `bwd(residuals, g) -> a tuple
    with one cotangent per differentiated argument` (with `nondiff_argnums`,
    `bwd(*nondiff_args, residuals, g)`; None for a zero cotangent). Residuals are arrays
    (or nests of them). Forward mode transposes `bwd`, which must be linear in `g`.
    """

    prim = custom_vjp_call_p

    def __init__(self, fun: Callable, nondiff_argnums=()):
        super().__init__(fun, nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd, self.bwd, self._rules = fwd, bwd, {}

    def _check_defined(self) -> None:
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} "
                                 f"using defvjp.")

    def _make_rules(self, nondiff: tuple, in_tree) -> CallRules:
        rec = CallRules(self.__name__, None)
        rec.fun = self._flat_fun(rec, nondiff, in_tree)
        trees: dict = {}                   # leaves' shapes -> their nest (outputs, residuals)

        def fwd(*xs):
            out, res = _pair(self.fwd(*self._full(nondiff, in_tree, xs)), "fwd", self.__name__)
            out_leaves, out_tree = tree_flatten(out)
            res_leaves, res_tree = tree_flatten(res)
            rec.layouts[_avals(xs)] = (out_tree, len(out_leaves), res_tree)
            trees[("out", _shapes(out_leaves))] = out_tree
            trees[("res", _shapes(res_leaves))] = res_tree
            return out_leaves, res_leaves

        def bwd(res, cts):
            residuals = tree_unflatten(trees[("res", _shapes(res))], res)
            g = tree_unflatten(trees[("out", _shapes(cts))], cts)
            return self._input_cts(self.bwd(*nondiff, residuals, g), in_tree)
        rec.fwd, rec.bwd = fwd, bwd
        return rec

    def _input_cts(self, cts, in_tree) -> list:
        n = len(in_tree.children)
        if n == 1 and not (isinstance(cts, (tuple, list)) and len(cts) == 1):
            cts = (cts,)
        if not isinstance(cts, (tuple, list)) or len(cts) != n:
            raise TypeError(f"the bwd rule of custom_vjp function '{self.__name__}' must "
                            f"return a tuple of {n} cotangents (one per differentiated "
                            f"argument), got {type(cts).__name__}")
        try:
            return flatten_like(in_tree, list(cts))
        except ValueError as e:
            raise ValueError(f"the bwd rule of custom_vjp function '{self.__name__}' returned "
                             f"cotangents not nested as its arguments: {e}") from None


def custom_gradient(f: Callable | None = None):
    """A function with its own gradient, as `tf.custom_gradient`: `f(*xs)` returns
    `(y, grad_fn)`, and `grad_fn(*upstream)` the gradient of each input (one value for
    one input). `grad_fn`'s closure is rebuilt by running `f` again when the gradient is
    taken, so it may read any value `f` computed (and stays differentiable).

    Example:
        >>> import numpy as np, pforjac as pj
        >>> @pj.custom_gradient
        ... def clip_grad(x):
        ...     def grad(upstream):
        ...         return np.clip(upstream, -1.0, 1.0)
        ...     return x * 1.0, grad
        >>> pj.grad(lambda x: np.sum(clip_grad(x) * 5.0))(np.ones(2)).tolist()
        [1.0, 1.0]
    """
    if f is None:
        return custom_gradient
    name = getattr(f, "__name__", "custom_gradient")
    plain, with_variables = _gradient_custom(f, name, False), _gradient_custom(f, name, True)

    @functools.wraps(f)
    def call(*xs):
        if _plain():
            return f(*xs)[0]
        variables = _variables_read(f, xs)
        if not variables:
            return plain(*xs)
        return with_variables(len(xs), *xs, *variables)
    return call


def _variables_read(f: Callable, xs) -> list:
    """The trainable Variables `f` reads (one probe run, alone on its own tape)."""
    from .custom_calls import clean_state
    from .tape import GradientTape
    with clean_state(), GradientTape() as probe:
        f(*xs)
    return list(probe.watched_variables())


def _gradient_custom(f: Callable, name: str, variables: bool) -> custom_vjp:
    """The custom_vjp of a custom_gradient function; with `variables`, called as
    `(n, *xs, *variables)`, its gradient also `grad_fn(..., variables=...)`'s second part."""
    def primal(*args):
        return f(*args[1:1 + args[0]] if variables else args)[0]
    primal.__name__ = name
    custom = custom_vjp(primal, nondiff_argnums=(0,) if variables else ())

    def fwd(*args):
        return primal(*args), (args[1:] if variables else args)

    def bwd(*rest):
        n, saved, upstream = (rest[0], rest[1], rest[2]) if variables else (None, rest[0], rest[1])
        xs, vs = (saved[:n], saved[n:]) if variables else (saved, ())
        grad_fn = f(*xs)[1]
        ups = upstream if isinstance(upstream, (list, tuple)) else (upstream,)
        if not variables:
            return _as_tuple(grad_fn(*ups))
        grads, var_grads = _pair(grad_fn(*ups, variables=list(vs)), "grad_fn", name)
        return _as_tuple(grads) + tuple(var_grads)
    custom.defvjp(fwd, bwd)
    return custom


def _as_tuple(grads) -> tuple:
    return tuple(grads) if isinstance(grads, (list, tuple)) else (grads,)
