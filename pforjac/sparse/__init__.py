"""pforjac.sparse: sparse Jacobians and Hessians by colouring and one compressed pfor pass.

A Jacobian with a few non-zeros a row needs as many derivative passes as its pattern has
colours (3 for a tridiagonal matrix, whatever its size), and pfor runs those passes as one
vectorized pass. `jacobian_sparsity(f, x)` finds the pattern from the traced program;
`prepare_jacobian(f, x)` colours it and compiles that pass once;
`p(x)` returns a scipy.sparse array with exactly the pattern's structure. Needs scipy (the
`pforjac[scipy]` extra). See docs/sparse.md.

Example:
    >>> import numpy as np, pforjac as pj, pforjac.sparse as pjs
    >>> tridiagonal = np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1)
    >>> def f(x):
    ...     return pj.pad(x, [(1, 1)])[:-2] - 2 * x ** 2 + pj.pad(x, [(1, 1)])[2:]
    >>> J = pjs.jacobian(f, np.ones(5), sparsity=tridiagonal)
    >>> J.toarray()[1].tolist()
    [1.0, -4.0, 1.0, 0.0, 0.0]
"""
from .colored import ColoredPattern
from . import call_rules  # noqa: F401  (the sparsity rule of custom-derivative calls)
from .pattern import (hessian_sparsity, jacobian_sparsity, program_hessian_sparsity,
                      program_jacobian_sparsity)
from .coloring import column_coloring, row_coloring, star_coloring
from .prepared import (PreparedHessian, PreparedJacobian, hessian, jacobian, prepare_hessian,
                       prepare_jacobian, prepare_ode_jacobian)

__all__ = ["ColoredPattern", "PreparedJacobian", "PreparedHessian", "jacobian", "hessian",
           "prepare_jacobian", "prepare_hessian", "prepare_ode_jacobian", "column_coloring",
           "row_coloring", "star_coloring", "jacobian_sparsity", "hessian_sparsity",
           "program_jacobian_sparsity", "program_hessian_sparsity"]
