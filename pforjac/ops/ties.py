"""Division by eigenvalue and singular-value gaps that says where a derivative is undefined.

The derivatives of eigenvectors and singular vectors divide by differences of eigenvalues
(or of squared singular values), and those of a non-square matrix's singular vectors by the
singular values. `tie_divide(m, d, scale)` is m / d, except where |d| is at rounding level
(|d| <= 16 eps scale):
- 0 where m is exactly 0: nothing reaches that pair, as when only the values are used or
  a cotangent does not depend on the vectors;
- NaN where m is not 0: the derivative of a lone vector at a repeated value is not
  defined, and no finite number would be right. The forward warns (it runs on concrete
  values on every path: eager, pfor, compiled), naming the op and the way out.
"""
from __future__ import annotations

import numpy as np

from ..warn import warn_wrong_result
from ._family import declare_elementwise
from .broadcasting import unbroadcast
from .elementwise import _fit
from ..core import defjvp, defvjp

__all__ = ["tie_divide"]

_TIE = 16.0

_ADVICE = {
    "eigh": ("eigenvalues", "functions f(S) = V f(W) V^T have one: use "
             "pj.sym_matrix_function or pforjac.scipy.linalg's expm, logm, sqrtm, funm; for "
             "a Hessian of a function of the eigenvalues alone use forward over reverse "
             "(pj.hessian's default for a function it can trace, or jacfwd(grad(f)))"),
    "svd": ("(or, for a non-square matrix, zero) singular values", "functions of the "
            "singular values alone have one; so has the polar factor of a full-rank matrix: "
            "use pforjac.scipy.linalg.polar"),
}
_MESSAGES = {   # an op whose rule divides by values that may be zero, not by gaps
    "qr": "qr: its derivative at a rank-deficient matrix is not defined past the rank drop "
          "(Q's later columns are an arbitrary completion, R's diagonal there a kink); the "
          "result holds NaN. Q's columns and R's rows before the drop have one.",
}


def _tie_divide_impl(m, d, scale, op: str = "linalg"):
    m, d = np.asarray(m), np.asarray(d)
    tol = _TIE * np.finfo(np.result_type(m, d, np.float32)).eps * np.asarray(scale)
    tie = np.abs(d) <= tol
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(tie, 0.0, m / np.where(tie, 1.0, d)).astype(np.result_type(m, d))
    undefined = tie & (m != 0)
    if np.any(undefined):
        what, advice = _ADVICE.get(op, ("values", ""))
        warn_wrong_result(_MESSAGES.get(op) or
                          f"{op}: the derivative of its vectors at repeated {what} is not "
                          f"defined (the rule divides by a zero gap); the result holds NaN "
                          f"there. {advice}.")
        out = np.where(undefined, np.nan, out)
    return out


tie_divide_p = declare_elementwise("tie_divide", _tie_divide_impl,
                                   domain=("real", "nonzero", "positive"))


def _vjp_m(g, ans, m, d, scale, op="linalg"):
    return unbroadcast(tie_divide_p.bind(g, d, scale, op=op), m.shape)


def _vjp_d(g, ans, m, d, scale, op="linalg"):
    return unbroadcast(-tie_divide_p.bind(g * ans, d, scale, op=op), d.shape)


defvjp(tie_divide_p, _vjp_m, _vjp_d, None)
defjvp(tie_divide_p,
       lambda t, ans, m, d, scale, op="linalg": _fit(tie_divide_p.bind(t, d, scale, op=op), ans.shape),
       lambda t, ans, m, d, scale, op="linalg": _fit(-tie_divide_p.bind(t * ans, d, scale, op=op),
                                            ans.shape),
       None)


def tie_divide(m, d, scale, op: str):
    """m / d; 0 where d is at rounding level (relative to `scale`) and m is 0, NaN (with a
    warning naming `op`) where d is and m is not."""
    return tie_divide_p.bind(m, d, scale, op=op)
