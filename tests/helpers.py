"""Small helpers several test files share (imported as `helpers`, as random_programs is)."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

# pfor must vectorize the body: its fallback warnings ("pfor ...") become errors
no_fallback = pytest.mark.filterwarnings("error:pfor:RuntimeWarning")


def pfor_and_loop_jacobians(f, x_np):
    """(pfor, while-loop) jacobians of f at x, unconnected entries zero."""
    x = pj.constant(x_np)
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = f(x)
    return (g.jacobian(y, x, unconnected_gradients="zero").numpy(),
            g.jacobian(y, x, unconnected_gradients="zero", experimental_use_pfor=False).numpy())


def central_differences(f, x, eps=1e-6):
    """The gradient of the scalar numpy function f at x, by central differences."""
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        out[k] = (f(up) - f(down)) / (2 * eps)
    return out


def c_ordered(t) -> bool:
    return np.asarray(t).flags.c_contiguous


def layout_case(rng):
    """x (3, 4) and a function of it whose natural result layout is transposed."""
    x = pj.constant(rng.normal(size=(3, 4)))
    w = pj.constant(rng.normal(size=(4, 4)))
    return x, lambda a: pj.transpose(pj.tanh(a @ w)) * pj.broadcast_to(a[:, :1], (3, 4)).T
