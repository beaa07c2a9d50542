"""autograd's `check_grads(f, modes, order)(*args)`, on `pforjac.testing.check_grads`
(reverse and forward mode against central differences in float64)."""
from __future__ import annotations

import numpy as np

from .. import testing

__all__ = ["check_grads"]


def check_grads(f, modes=("fwd", "rev"), order=2):
    def check(*args, **kwargs):
        xs = tuple(np.asarray(a, dtype=np.float64) for a in args)
        wanted = tuple({"fwd": "fwd", "rev": "rev"}[m] for m in modes)
        testing.check_grads(lambda *a: f(*a, **kwargs), xs if len(xs) > 1 else xs[0],
                            order=order, modes=wanted)
    return check
