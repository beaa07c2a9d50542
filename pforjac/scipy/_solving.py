"""What the scipy solver helpers share: a user function's derivatives compiled once per
shape (eager, with one warning, when the function cannot be traced), numpy at scipy's
boundary, and the rule that decides when a Jacobian or Hessian is computed sparse.

scipy calls the derivative functions thousands of times with float64 arrays of one shape,
so each is a `pforjac.function`: traced and compiled on its first call, generated numpy
code afterwards. A function that branches in Python on values (`if x[0] > 0:`) cannot be
traced; it then runs eagerly (per op, slower), and the helper says so once.
"""
from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from ..config import checked_backend, config
from ..tensor import Tensor
from ..warn import warn_at_user_line

__all__ = ["Derivatives", "as_numpy", "use_sparse", "check_sparse", "SPARSE_MIN_SIZE",
           "SPARSE_MAX_DENSITY"]

# "auto" computes a Jacobian or Hessian sparse (pattern detected, coloured: one pass per
# colour) when it has at least SPARSE_MIN_SIZE columns and at most SPARSE_MAX_DENSITY of its
# entries can be non-zero. Below that size a dense pass costs microseconds and scipy's dense
# linear algebra beats its sparse one; above that density colouring saves little.
SPARSE_MIN_SIZE = 100
SPARSE_MAX_DENSITY = 0.1


def as_numpy(value) -> np.ndarray:
    """A Tensor result as the numpy array scipy expects (no copy); arrays pass through."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, Tensor):
        return value.numpy()
    return np.asarray(value)


def check_sparse(sparse, who: str) -> None:
    if sparse not in (True, False, "auto"):
        raise ValueError(f"{who}: sparse must be True, False or 'auto', got {sparse!r}")


def use_sparse(sparse, detect: Callable, size: int, who: str):
    """The sparsity pattern to use (a scipy.sparse array), or None for dense: `sparse=True`
    always detects it (`detect()`), "auto" only for a problem of SPARSE_MIN_SIZE or more
    unknowns, keeping it when its density is at most SPARSE_MAX_DENSITY."""
    check_sparse(sparse, who)
    if sparse is False or (sparse == "auto" and size < SPARSE_MIN_SIZE):
        return None
    try:
        pattern = detect()
    except Exception:
        if sparse is True:
            raise
        return None           # (a function pforjac cannot trace: its dense path says why)
    total = pattern.shape[0] * pattern.shape[1]
    if sparse == "auto" and (total == 0 or pattern.nnz > SPARSE_MAX_DENSITY * total):
        return None
    return pattern


class Derivatives:
    """The derivative functions of one solve: each made by `compiled(fn)` from an eager
    function of numpy arrays; compiled with `pforjac.function` on `backend` ("numpy" or
    "numba"; None: `pforjac.config.backend`) unless the user function cannot be traced
    (then every one runs eagerly, after one warning naming the cause). After its first call
    each runs its compiled code directly (`Function.specialize`): scipy keeps the signature."""

    def __init__(self, who: str, backend: str | None = None):
        self.who = who
        self.eager = False
        self.backend = checked_backend(config.backend if backend is None else backend,
                                       f"{who}: backend")

    def compiled(self, fn: Callable, eager: Callable | None = None) -> Callable:
        """`fn` compiled; `eager` (default `fn`) is what runs when it cannot be traced."""
        from ..compiled import function
        state = {"call": None}
        compiled = function(fn, backend=self.backend)
        fn = fn if eager is None else eager

        def first(*args):
            if self.eager:
                state["call"] = fn
                return fn(*args)
            try:      # (specialize traces; a float, an ODE's time, is traced as an input)
                run = compiled.specialize(*_arrays(args), writable=True)
                out = run(*args)
            except Exception as e:      # not traceable: the eager call raises a user's own error
                out = fn(*args)
                self._fall_back(e)
                state["call"] = fn
                return out
            state["call"] = run
            return out

        def call(*args):
            run = state["call"]
            return first(*args) if run is None else run(*args)
        call.settled = lambda: state["call"]
        return call

    def ready(self, fn: Callable, *example) -> Callable:
        """`compiled(fn)` after its first call, on `example` (the solver's starting point):
        the specialized entry of the compiled code itself, with no layer of its own around
        it (each costs a solver a few percent of a small problem's gradient), or, where `fn`
        cannot be traced, `fn` run eagerly with numpy results."""
        call = self.compiled(fn)
        call(*example)
        settled = call.settled()
        return (lambda *args: as_numpy(fn(*args))) if settled is fn else settled

    def native(self, fn: Callable, args: tuple) -> Callable | None:
        """`fn` itself compiled, called directly, when the backend is numba and its native
        code runs it (it then costs about a microsecond a call); None otherwise (numpy's
        own call of `fn` is then as fast as generated numpy code, and a function that
        cannot be traced or lowered stays the user's)."""
        if self.backend != "numba" or self.eager:
            return None
        from ..compiled import function
        compiled = function(fn, backend="numba")
        try:
            with warnings.catch_warnings():      # (numpy's own call is then the one used)
                warnings.simplefilter("ignore")
                compiled(*args)
                fast = compiled.specialize(*args, writable=True)
        except Exception:
            return None
        return fast if fast.backend == "numba" else None

    def _fall_back(self, error: Exception) -> None:
        if self.eager:
            return
        self.eager = True
        reason = str(error).split(". ")[0]
        warn_at_user_line(
            f"{self.who}: the function could not be compiled with pforjac.function "
            f"({type(error).__name__}: {reason[:300]}), so its derivatives run eagerly, op by "
            f"op (slower). To compile it, replace Python `if`/`while` on values with "
            f"pforjac.where and keep float()/.numpy() out of it")


def _arrays(args: tuple) -> tuple:
    """The arguments with floats as the 0-d float64 arrays they are traced as."""
    return tuple(np.asarray(a, np.float64) if isinstance(a, float) else a for a in args)
