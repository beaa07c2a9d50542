"""Closed-form oracles: exact Jacobians where calculus gives them without differences.

- Linear programs (every line linear in x: moves, sums, cumsum, scatter_add, products with
  constants): column j of the Jacobian is f(e_j) - f(0), computed on numpy in float64,
  exact but for the rounding of sums of several products. Tolerance: 8 ulps of the scale.
- One elementwise op of one argument: the diagonal Jacobian of its textbook derivative
  (`DERIVATIVES`, written here from calculus, not from pforjac's rules). Tolerance: 8 ulps
  of the program's dtype (16 for float16, whose derivative formulas round twice).

`closed_program(seed)` draws such programs; `closed_oracles(program)` gives their (J, tol)
at the three points, or {} where neither form applies.
"""
from __future__ import annotations

import math

import numpy as np

from . import generator, interp

# linear in their x-dependent operand (`one`: at most one operand may depend on x)
LINEAR = {"neg": False, "add": False, "subtract": False, "multiply": True, "reshape": False,
          "flatten": False, "expand_dims": False, "squeeze": False, "transpose": False,
          "swapaxes": False, "moveaxis": False, "broadcast_to": False, "tile": False,
          "pad": False, "split": False, "concat": False, "stack": False, "flip": False,
          "roll": False, "getitem": False, "gather": False, "take_rows": False,
          "scatter_add": False, "cumsum": False, "sum": False, "matmul": True, "einsum": True,
          "multiply_list": True, "zeros_like_add": False}

_LN2, _LN10 = math.log(2.0), math.log(10.0)
DERIVATIVES = {
    "neg": lambda x: -np.ones_like(x), "exp": np.exp, "log": lambda x: 1 / x,
    "log1p": lambda x: 1 / (1 + x), "expm1": np.exp, "sin": np.cos, "cos": lambda x: -np.sin(x),
    "tan": lambda x: 1 / np.cos(x) ** 2, "tanh": lambda x: 1 / np.cosh(x) ** 2,
    "sigmoid": lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2,
    "softplus": lambda x: 1 / (1 + np.exp(-x)), "sqrt": lambda x: 0.5 / np.sqrt(x),
    "square": lambda x: 2 * x, "reciprocal": lambda x: -1 / x ** 2, "sinh": np.cosh,
    "cosh": np.sinh, "arcsin": lambda x: 1 / np.sqrt(1 - x * x),
    "arccos": lambda x: -1 / np.sqrt(1 - x * x), "arctan": lambda x: 1 / (1 + x * x),
    "arcsinh": lambda x: 1 / np.sqrt(x * x + 1), "arccosh": lambda x: 1 / np.sqrt(x * x - 1),
    "arctanh": lambda x: 1 / (1 - x * x), "log2": lambda x: 1 / (x * _LN2),
    "log10": lambda x: 1 / (x * _LN10), "abs": np.sign, "relu": lambda x: (x > 0) * 1.0,
    "sign": np.zeros_like, "floor": np.zeros_like, "ceil": np.zeros_like,
    "round": np.zeros_like,
}
ULPS = {"float64": 8, "float32": 8, "float16": 16}


def closed_program(seed: int) -> dict:
    """A linear program, or one unary op on x (its argument in the op's domain)."""
    rng = np.random.default_rng([seed, 3])
    if rng.random() < 0.5:
        return generator.generate(seed, batch=False, names=sorted(LINEAR))
    name = sorted(DERIVATIVES)[int(rng.integers(len(DERIVATIVES)))]
    program = generator.generate(seed, batch=False, names=["sum"])
    program.update(lines=[{"op": name, "args": [{"v": 0}], "kw": {}}], special=None,
                   domain=_DOMAINS.get(name, (-1.5, 1.5)))
    return program


_DOMAINS = {"log": (0.2, 3.0), "log2": (0.2, 3.0), "log10": (0.2, 3.0), "sqrt": (0.2, 3.0),
            "reciprocal": (0.3, 3.0), "log1p": (-0.7, 2.0), "arcsin": (-0.9, 0.9),
            "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9), "arccosh": (1.2, 3.0),
            "tan": (-1.2, 1.2)}


def closed_oracles(program: dict) -> dict:
    """{("jac", variant): (J, tol)} in float64 for the three points, or {}."""
    if program.get("special"):
        return {}
    if len(program["lines"]) == 1 and program["lines"][0]["op"] in DERIVATIVES \
            and program["lines"][0]["args"] == [{"v": 0}]:
        return {("jac", v): _unary(program, v) for v in (0, 1, 2)}
    if not _linear(program):
        return {}
    linear = _linear_jacobian(program)
    return {("jac", v): linear for v in (0, 1, 2)}


def _linear_jacobian(program: dict):
    x = interp.x_value(program).astype(np.float64)
    f = interp.numpy_f(program)
    base = f(np.zeros_like(x))
    cols = []
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = 1.0
        cols.append(f(e.reshape(x.shape)) - base)
    jac = np.stack(cols, -1).reshape(base.shape + x.shape) if cols else np.zeros(base.shape + x.shape)
    scale = float(np.abs(jac).max(initial=1.0))
    return jac, np.full(jac.shape, 8 * np.finfo(np.float64).eps * scale)


def _unary(program: dict, variant: int):
    name = program["lines"][0]["op"]
    x = interp.x_value(program, variant).astype(np.float64)
    d = DERIVATIVES[name](x)
    eye = np.eye(x.size).reshape(x.shape + x.shape)
    jac = eye * d.reshape(x.shape + (1,) * x.ndim)
    eps = float(np.finfo(program["dtype"]).eps)
    tol = ULPS[program["dtype"]] * eps * np.abs(jac) + 1e-300
    return jac, tol


def _linear(program: dict) -> bool:
    """Every line linear: an op of LINEAR whose x-dependent operands are at most one where
    it multiplies (constants elsewhere)."""
    depends = {0}
    for k, line in enumerate(program["lines"], 1):
        reads = {a["v"] for a in _values(line["args"])}
        live = reads & depends
        if live:
            if line["op"] not in LINEAR or (LINEAR[line["op"]] and _count(line, depends) > 1):
                return False
            depends.add(k)
    return True


def _values(args):
    for a in args:
        for b in (a if isinstance(a, list) else [a]):
            if isinstance(b, dict) and "v" in b:
                yield b


def _count(line, depends) -> int:
    return sum(1 for a in _values(line["args"]) if a["v"] in depends)
