"""The one rule for what derivatives are taken with respect to, shared by every entry point
(pj.jacobian and the functional API, pforjac.dask, pforjac.sparse)."""
from __future__ import annotations

import numpy as np

__all__ = ["check_differentiable_input"]


def check_differentiable_input(dtype, what: str) -> None:
    """Derivatives are taken with respect to floating-point (or complex) inputs only: an
    integer or bool input is refused, by every entry point, with this one message (`what`
    names the input: "jacobian: inputs[0]")."""
    if np.dtype(dtype).kind not in "fc":
        raise TypeError(f"{what} has dtype {np.dtype(dtype).name}, but derivatives are taken "
                        f"with respect to floating-point inputs only; cast it first")
