"""Scalar functions with derivatives of every order, for the divided differences of the
symmetric matrix functions (`spectral.py`): exp, log, sqrt, powers, sin, cos, and users'
elementwise callables (registered by `pforjac.matrix_function`, which differentiates them).

A function is known to the primitive by its name (a string param, so that compiled code
can render it); a user's callable is registered here under a name made from its id and
kept alive for the process.
"""
from __future__ import annotations

import math
import threading
from typing import Callable

import numpy as np

__all__ = ["scalar_function", "function_name", "register_callable"]


class ScalarFunction:
    """`deriv(x, d)`: the d-th derivative at the points x (d = 0: the value), in numpy."""

    def __init__(self, name: str, deriv: Callable[[np.ndarray, int], np.ndarray]):
        self.name, self.deriv = name, deriv


def _power_deriv(p: float):
    def deriv(x, d):
        coef = math.prod(p - j for j in range(d))
        if coef == 0:
            return np.zeros_like(x)
        with np.errstate(divide="ignore", invalid="ignore"):
            return coef * np.power(x, p - d)
    return deriv


def _log_deriv(x, d):
    if d == 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (-1.0) ** (d - 1) * math.factorial(d - 1) * np.power(x, -float(d))


def _trig(fn, phase: int):
    def deriv(x, d):               # sin^(d) = sin(x + d pi/2); cos likewise
        return [np.sin, np.cos, lambda v: -np.sin(v), lambda v: -np.cos(v)][(d + phase) % 4](x)
    return deriv


_KNOWN = {
    "exp": ScalarFunction("exp", lambda x, d: np.exp(x)),
    "log": ScalarFunction("log", _log_deriv),
    "sqrt": ScalarFunction("sqrt", _power_deriv(0.5)),
    "sin": ScalarFunction("sin", _trig(np.sin, 0)),
    "cos": ScalarFunction("cos", _trig(np.cos, 1)),
}
_USER: dict[str, ScalarFunction] = {}
_user_lock = threading.Lock()


def scalar_function(name: str) -> ScalarFunction:
    """The function called `name`: a known one, `power:<p>`, or a registered callable."""
    if name in _KNOWN:
        return _KNOWN[name]
    if name.startswith("power:"):
        return ScalarFunction(name, _power_deriv(float(name[6:])))
    if name in _USER:
        return _USER[name]
    raise ValueError(f"sym_matrix_function: unknown function {name!r}; use one of "
                     f"{sorted(_KNOWN)}, 'power:<p>', or pass a callable")


def function_name(f) -> str:
    """The primitive's name for `f`: a known name or a power (a callable must be registered
    first: `register_callable`, which `pj.sym_matrix_function` does)."""
    if isinstance(f, str):
        scalar_function(f)                    # refuses an unknown name here
        return f
    raise TypeError(f"sym_funm: f must be a function name, got {type(f).__name__} (for a "
                    f"callable use pj.sym_matrix_function)")


def register_callable(f, deriv) -> str:
    """Registers a callable under a name made from its id (kept alive for the process), with
    `deriv(x, d)` its d-th derivative in numpy, and returns the name."""
    name = f"user:{getattr(f, '__qualname__', 'f')}:{id(f):x}"
    with _user_lock:
        if name not in _USER:
            _USER[name] = ScalarFunction(name, deriv)
            _USER[name].owner = f
    return name
