"""scipy's Radau and BDF solvers with their dense LU calls made straight to LAPACK.

On a small dense system (Robertson's 3x3) a Radau solve spends a third of its time in
`scipy.linalg.lu_solve` and `lu_factor`: about 8 and 5 us a call of Python (argument
checks, the batching decorator, the routine lookup) around LAPACK's `getrs` / `getrf`,
which take half a microsecond each. The solvers here are scipy's own classes with only
those two calls replaced by the same LAPACK routines, looked up once per dtype, so every
step, Newton iteration and value is bit for bit scipy's. scipy's checks are kept: an
input with inf or NaN goes to scipy's function, which raises as it always does, and a
singular matrix gets scipy's warning. Sparse Jacobians keep scipy's sparse LU.

One more change, to BDF's start: scipy makes its array of differences with `np.empty` and
fills two rows, and its first step subtracts the third before writing it. The result is
overwritten before anything reads it, so the solve is right whatever those bytes were, but
where the leftover heap bytes hold a signaling NaN the subtraction raises numpy's "invalid
value encountered in subtract", a warning (an error under `np.errstate(invalid="raise")`
or an "error" warnings filter) that comes and goes with what the process freed before.
The rows are zeroed instead, which changes no value.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

__all__ = ["lapack_lu_method"]

_CLASSES: dict = {}


def lapack_lu_method(method):
    """The scipy solver class to run for `method`: Radau and BDF (named by string) with
    LAPACK called directly for dense LUs; any other method as it was given."""
    if not isinstance(method, str) or method not in ("Radau", "BDF"):
        return method
    cls = _CLASSES.get(method)
    if cls is None:
        import scipy.integrate
        cls = _CLASSES[method] = _subclass(getattr(scipy.integrate, method))
    return cls


def _subclass(base: type) -> type:
    def __init__(self, *args, **kwargs):
        base.__init__(self, *args, **kwargs)
        if base.__name__ == "BDF":
            _clear_unset_differences(self)
        from scipy.sparse import issparse
        # (the attributes scipy's dense branch sets; a scipy without them keeps its own)
        if not issparse(getattr(self, "J", None)) and hasattr(self, "solve_lu") \
                and hasattr(self, "lu") and hasattr(self, "nlu"):
            self.lu, self.solve_lu = _dense_lu(self)
    doc = (f"scipy.integrate.{base.__name__} with its dense LU factorizations and solves "
           "calling LAPACK's getrf/getrs directly (the same routines scipy.linalg's "
           "lu_factor/lu_solve call, without their per-call checks); otherwise scipy's.")
    return type(base.__name__, (base,), {"__init__": __init__, "__doc__": doc,
                                         "__module__": __name__})


def _clear_unset_differences(solver) -> None:
    """Zeroes the rows of BDF's differences `D` past the two scipy fills (see the module's
    doc): before the first step nothing has written them."""
    D = getattr(solver, "D", None)
    if isinstance(D, np.ndarray) and D.ndim == 2 and getattr(solver, "order", None) == 1:
        D[2:] = 0


def _finite(a: np.ndarray) -> bool:
    """Whether every entry of `a` is finite, in one BLAS dot: a sum of squares is finite
    exactly when every entry is, except when it overflows, and then scipy's own checked
    function is called, which gives the same result."""
    r = a.ravel()
    return math.isfinite(abs(r.dot(r)))


def _dense_lu(solver):
    """The `lu(A)` and `solve_lu(LU, b)` a scipy solver calls, on LAPACK directly."""
    from scipy.linalg import LinAlgWarning, get_lapack_funcs, lu_factor, lu_solve
    routines: dict = {}

    def routine(name: str, *arrays):
        key = (name,) + tuple(a.dtype.char for a in arrays)
        found = routines.get(key)
        if found is None:
            found = routines[key] = get_lapack_funcs((name,), arrays)[0]
        return found

    def lu(A):
        solver.nlu += 1
        if not (isinstance(A, np.ndarray) and A.ndim == 2 and A.size and _finite(A)):
            return lu_factor(A, overwrite_a=True)
        factor, piv, info = routine("getrf", A)(A, overwrite_a=True)
        if info < 0:
            raise ValueError(f"illegal value in {-info}th argument of internal getrf "
                             "(lu_factor)")
        if info > 0:
            warnings.warn(f"Diagonal number {info} is exactly zero. Singular matrix.",
                          LinAlgWarning, stacklevel=2)
        return factor, piv

    def solve_lu(LU, b):
        factor, piv = LU
        if not (isinstance(b, np.ndarray) and b.ndim in (1, 2) and b.size
                and b.shape[0] == factor.shape[0] and _finite(b)):
            return lu_solve(LU, b, overwrite_b=True)
        x, info = routine("getrs", factor, b)(factor, piv, b, overwrite_b=True)
        if info != 0:
            raise ValueError(f"illegal value in {-info}th argument of internal gesv|posv")
        return x
    return lu, solve_lu
