"""Derivatives of a function's float outputs by the tape and by forward mode, for the checks
of `pforjac.testing` and `pforjac.degenerate_check`."""
from __future__ import annotations

from .tensor import Tensor, as_tensor, is_float
from .tree import tree_flatten

__all__ = ["float_outputs", "vjp", "jvp"]


def float_outputs(f, xs) -> list[Tensor]:
    leaves, _ = tree_flatten(f(*xs))
    return [y for y in map(as_tensor, leaves) if is_float(y.dtype)]


def vjp(f, xs, us) -> list[Tensor]:
    """Cotangents of the inputs for output cotangents `us`, through a GradientTape."""
    from .tape import GradientTape
    with GradientTape() as tape:
        tape.watch(xs)
        ys = float_outputs(f, xs)
    tape._mark_recorded(ys)             # made in the block: a constant one is unconnected
    return tape.gradient(ys, list(xs), output_gradients=list(us), unconnected_gradients="zero")


def jvp(f, xs, vs) -> list[Tensor]:
    """Output tangents (zeros where unconnected) of `f` at `xs` along `vs`, forward mode."""
    import pforjac
    if hasattr(pforjac, "jvp"):                      # functional.py, PyTorch conventions
        outs, tangents = pforjac.jvp(f, tuple(xs), tuple(vs), create_graph=True)
        outs, _ = tree_flatten(outs)
        tangents, _ = tree_flatten(tangents)
    else:
        from .forward import jvp_program
        from .program import make_program
        program = make_program(f, [(tuple(x.shape), x.dtype) for x in xs])
        outs, tangents = jvp_program(program, xs, vs)
    pairs = [(as_tensor(y), t) for y, t in zip(outs, tangents) if is_float(as_tensor(y).dtype)]
    from . import ops
    return [ops.zeros_like(y) if t is None else as_tensor(t) for y, t in pairs]
