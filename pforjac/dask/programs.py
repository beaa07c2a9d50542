"""The chunk programs of a distributed Jacobian, traced once on the client.

A chunk is the in-process chunk of `parallel_iterations=k` (pfor.run_loop) with its loop
indices made an input: `rows(indices)` vectorizes "the gradient of output row i" over k
indices at once (reverse mode), `columns(indices)` the jvp of input column i (forward
mode). The forward pass runs eagerly once, here, as the in-process call runs it: its
activations become the program's constants, so a task computes only its chunk, with the
numpy calls the in-process chunk makes. One program per chunk length (k, and the last
chunk's remainder), each compiled with the passes that keep eager code's bits
(`batch_major=False`), for the backend asked for (None: `pforjac.config.backend`): on
"numba" a chunk runs one native function in the client's process (artifact.py).
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..compiled.compiled_trace import trace_compiled
from ..compiled.numba_backend import use_backend
from ..compiled.passes import pass_list
from ..forward import jvp_program
from ..functional import _trace, _watched_call
from ..jacobians import _gradients
from ..pfor import vectorize_stacked
from ..program import make_program
from ..tape import GradientTape
from ..inputs import check_differentiable_input
from ..tensor import Tensor, Variable, as_tensor, constant, is_float
from .artifact import ChunkProgram

__all__ = ["JacobianPlan", "basis_seeds", "colour_seeds", "chunk_lengths", "reverse_plan",
           "forward_plan", "batch_program"]


class JacobianPlan:
    """What every task of one Jacobian reads (one key of the graph): the chunk programs by
    chunk length, over `iterations` seeds (rows, columns or colours)."""

    def __init__(self, mode: str, out_shape: tuple, in_shape: tuple, dtype, programs: dict,
                 iterations: int):
        self.mode, self.out_shape, self.in_shape = mode, out_shape, in_shape
        self.dtype, self.programs, self.iterations = np.dtype(dtype), programs, iterations

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.programs.values())


def basis_seeds(size: int):
    """(how many seeds, seed i shaped like `like`): the one-hot basis of `size` entries."""
    return size, lambda i, like: ops.reshape(ops.one_hot(i, size, like.dtype), like.shape)


def colour_seeds(colors: np.ndarray):
    """The seeds of a colouring: seed k is 1 at the entries of colour k (0 elsewhere)."""
    colors = np.asarray(colors, np.int32)
    ncolors = int(colors.max()) + 1 if colors.size else 0
    c = constant(colors)

    def seed(i, like):
        return ops.reshape(ops.cast(ops.equal(c, i), like.dtype), like.shape)
    return lambda size: (ncolors, seed)


def chunk_lengths(n: int, k: int) -> list[int]:
    """The lengths of the chunks of `range(n)` that `parallel_iterations=k` makes."""
    return [min(k, n - s) for s in range(0, n, k)]


def _compile(fn, avals, name: str, backend: str | None) -> ChunkProgram:
    compiled = trace_compiled(fn, avals, True, name, True, pass_list(False))
    use_backend(compiled, backend, name, what="pforjac.dask's chunk program")
    return ChunkProgram.of(compiled)


def _check_input(x, what: str) -> Tensor:
    if isinstance(x, (tuple, list)) and any(np.ndim(v) or isinstance(v, Tensor) for v in x):
        raise TypeError(f"{what} takes one input array x, got a {type(x).__name__} of "
                        f"{len(x)} arrays (it would stack them into one input); call it once "
                        f"per input, or pass one array and split it inside f")
    xt = as_tensor(x, f"{what}: x")
    check_differentiable_input(xt.dtype, f"{what}: x")
    return xt


def _one_output(y, what: str) -> Tensor:
    if isinstance(y, (tuple, list, dict)):
        raise TypeError(f"{what}: f must return one Tensor, got a {type(y).__name__}; stack the "
                        f"outputs (pforjac.stack) or call {what} once per output")
    return as_tensor(y, f"{what}: f(x)")


def reverse_plan(f, x, k: int, seeds=basis_seeds, backend: str | None = None) -> JacobianPlan:
    """The row programs of J = df/dx, k rows a chunk (and the remainder's): the vjps of
    `seeds(f(x).size)` (the basis; a colouring's for a compressed sparse Jacobian)."""
    xt = _check_input(x, "pforjac.dask.jacobian")
    with GradientTape(persistent=True) as tape:
        (xa,), y = _watched_call(tape, f, (xt,))
    y = _one_output(y, "pforjac.dask.jacobian")
    n, seed = seeds(y.size)

    def rows(indices):
        def body(i):
            return _gradients(tape._entries, y, seed(i, y), [xa])
        (g,) = vectorize_stacked(make_program(body, [((), np.int32)]), indices, (0, n))
        shape = (int(indices.shape[0]), xt.size)
        return ops.zeros(shape, xt.dtype) if g is None else ops.reshape(g, shape)

    if not is_float(y.dtype):
        raise TypeError(f"pforjac.dask.jacobian: f(x) has dtype {y.dtype.name}: no gradient "
                        f"flows through it; return a floating-point output")
    programs = {m: _compile(rows, [((m,), np.dtype(np.int32))], "rows", backend)
                for m in sorted(set(chunk_lengths(n, k)))}
    return JacobianPlan("reverse", tuple(y.shape), tuple(xt.shape), xt.dtype, programs, n)


def forward_plan(f, x, k: int, seeds=basis_seeds, backend: str | None = None) -> JacobianPlan:
    """The column programs of J = df/dx, k input columns a chunk (and the remainder's): the
    jvps of `seeds(x.size)` (the basis; a colouring's for a compressed sparse Jacobian)."""
    xt = _check_input(x, "pforjac.dask.jacobian")
    program, is_tuple = _trace(f, (xt,), "pforjac.dask.jacobian")
    if is_tuple:
        _one_output((), "pforjac.dask.jacobian")
    _read_variables_now(program)
    (out,), (m, seed) = program.outputs, seeds(xt.size)

    def columns(indices):
        def body(i):
            return jvp_program(program, [xt], [seed(i, xt)])[1]
        (c,) = vectorize_stacked(make_program(body, [((), np.int32)]), indices, (0, m))
        shape = (int(indices.shape[0]), math.prod(out.shape))
        return ops.transpose(ops.zeros(shape, xt.dtype) if c is None else ops.reshape(c, shape))

    programs = {c: _compile(columns, [((c,), np.dtype(np.int32))], "columns", backend)
                for c in sorted(set(chunk_lengths(m, k)))}
    dtype = np.result_type(xt.dtype, out.dtype) if out.dtype.kind == "c" else xt.dtype
    return JacobianPlan("forward", tuple(out.shape), tuple(xt.shape), dtype, programs, m)


def _read_variables_now(program) -> None:
    """The Variables `program` reads become their values now, as reverse mode's eager
    forward pass reads them: the plan is fixed when the graph is built, and the chunk
    programs are compiled from values (a Variable left in would be lifted to a run-time
    input of the compiled chunk, which its vectorized loop body can't reach)."""
    program.const_values = [v._read() if isinstance(v, Variable) else v
                            for v in program.const_values]


def batch_program(f, shape: tuple, dtype, backend: str | None = None
                  ) -> tuple[ChunkProgram, tuple, np.dtype]:
    """The per-example Jacobian program of one block shape, its result's shape and dtype."""
    shapes = {}

    def block(xb):
        with GradientTape() as tape:
            tape.watch(xb)
            y = _one_output(f(xb), "pforjac.dask.batch_jacobian")
        j = tape.batch_jacobian(y, xb, unconnected_gradients="zero")
        shapes["result"] = tuple(j.shape), j.dtype
        return j

    program = _compile(block, [(tuple(shape), np.dtype(dtype))], "per_example", backend)
    return (program,) + shapes["result"]
