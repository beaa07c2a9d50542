"""The compressed derivative passes: all colours in one compiled, vectorized pass.

A colouring with `c` colours turns a sparse Jacobian into a dense (c, .) product: forward
mode pushes the c seed vectors `S[k] = sum of e_j over the columns j of colour k` through
the function's jvp rules, reverse mode pulls the c cotangents `R[k]` (rows of colour k)
back through its vjp rules, a Hessian pushes the seeds through the jvp of the gradient
(forward over reverse). In each case the loop over the c seeds is one pfor over a traced
body, and `pforjac.function` compiles the whole computation (primal, derivative, pfor)
once (into generated numpy code, or one native function on the numba backend): a call
runs c passes as one.

Every function here works on a flat view of the user's function: `flat_program` traces
`x (n,) -> f(x.reshape(shape), *args).reshape(-1)`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import ops
from ..compiled import function
from ..forward import jvp_program
from ..pfor import pfor
from ..program import Program, make_program, run_program
from ..tape import GradientTape
from ..tensor import as_tensor, constant

__all__ = ["flat_program", "gradient_program", "forward_pass", "reverse_pass", "seed_matrix"]


def flat_program(f: Callable, shape: tuple, dtype, arg_avals: Sequence[tuple],
                 what: str = "the function") -> Program:
    """Traces f on a flat input of `prod(shape)` entries; its output is flattened too."""
    n = int(np.prod(shape, dtype=np.int64))

    def flat(x, *args):
        y = f(ops.reshape(x, shape), *args)
        if isinstance(y, (tuple, list, dict)):
            raise TypeError(f"{what} must return a single array, got a {type(y).__name__}")
        return ops.reshape(as_tensor(y), (-1,))
    return make_program(flat, [((n,), dtype), *arg_avals])


def gradient_program(f: Callable, shape: tuple, dtype, arg_avals: Sequence[tuple]) -> Program:
    """Traces x (n,) -> the gradient of the scalar f(x.reshape(shape), *args), flat."""
    value = flat_program(f, shape, dtype, arg_avals, "the function of a Hessian")
    if value.outputs[0].shape != (1,):
        raise ValueError(f"hessian: the function must return a scalar, got shape "
                         f"{tuple(value.outputs[0].shape)} for an input of shape {tuple(shape)}")

    def gradient(x, *args):
        with GradientTape() as tape:
            tape.watch(x)
            (y,) = run_program(value, [x, *args])
        g = tape.gradient(y, x)
        return ops.zeros(x.shape, x.dtype) if g is None else g
    return make_program(gradient, [(tuple(value.inputs[0].shape), dtype), *arg_avals])


def forward_pass(program: Program, seeds: np.ndarray, backend: str | None = None):
    """A compiled `(x, *args) -> B` with `B[k] = J(x) @ seeds[k]`, shape (c, m), on
    `backend` (None: `pforjac.config.backend` when it traces)."""
    out = program.outputs[0]
    seeds_t = constant(seeds.astype(program.inputs[0].dtype))
    c, nargs = seeds.shape[0], len(program.inputs) - 1

    def sparse_forward_pass(x, *args):
        def body(i):
            (t,) = jvp_program(program, [x, *args], [seeds_t[i]] + [None] * nargs)[1]
            return ops.zeros(out.shape, out.dtype) if t is None else t
        return pfor(body, c)
    return function(sparse_forward_pass, backend=backend)


def reverse_pass(program: Program, cotangents: np.ndarray, backend: str | None = None):
    """A compiled `(x, *args) -> B` with `B[k] = cotangents[k] @ J(x)`, shape (c, n), on
    `backend` (None: `pforjac.config.backend` when it traces)."""
    x_var = program.inputs[0]
    cts = constant(cotangents.astype(program.outputs[0].dtype))
    c = cotangents.shape[0]

    def sparse_reverse_pass(x, *args):
        with GradientTape(persistent=True) as tape:
            tape.watch(x)
            (y,) = run_program(program, [x, *args])

        def body(i):
            g = tape.gradient(y, x, output_gradients=cts[i])
            return ops.zeros(x_var.shape, x_var.dtype) if g is None else g
        return pfor(body, c)
    return function(sparse_reverse_pass, backend=backend)


def seed_matrix(colors: np.ndarray, ncolors: int, dtype=np.float64) -> np.ndarray:
    """The (ncolors, len(colors)) 0/1 matrix whose row k sums the basis vectors of colour k."""
    seeds = np.zeros((ncolors, colors.size), dtype)
    seeds[colors, np.arange(colors.size)] = 1
    return seeds
