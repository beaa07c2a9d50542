"""Converters of the dense linear algebra primitives: numpy.linalg batches over leading axes,
so the loop axis is one more batch axis in front. A single-matrix op applies as it is; solve
pads the batch ranks so that both operands' loop and batch axes line up, or, when only the
right-hand side is stacked, solves for all iterations as more columns."""
from __future__ import annotations

from .. import ops
from ..ops import dense_linalg as la, determinant, eigenvalues, pseudo_inverse, spectral
from ..ops import triangular as tri
from ..pfor import register_converter
from ._helpers import align, iter_ndim


def _as_batched(prim):
    def convert(n, args, stacked, **params):
        return prim.bind(args[0], **params), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in (la.cholesky_p, la.eigh_p, la.svd_p, la.qr_p, la.slogdet_p, pseudo_inverse.pinv_p,
              determinant.det_p, eigenvalues.eigvalsh_p, eigenvalues.svdvals_p):
    register_converter(_prim)(_as_batched(_prim))


def _convert_solve(prim):
    def convert(n, args, stacked, **params):
        (a, b), (a_stacked, b_stacked) = args, stacked
        if b_stacked and not a_stacked:
            return _solve_columns(prim, n, a, b, params), True
        rank = max(iter_ndim(x, s) for x, s in zip(args, stacked))
        a, b = (align(x, s, rank) for x, s in zip(args, stacked))  # (n, 1.., batch, rows, cols)
        return prim.bind(a, b, **params), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in (la.solve_p, tri.triangular_solve_p):
    register_converter(_prim)(_convert_solve(_prim))


def _solve_columns(prim, n, a, b, params):
    """The Jacobian's case, one matrix a for every iteration's right-hand side: the loop axis
    becomes more columns of b, so each matrix is factored once, not once per iteration (a
    broadcast solve factors a for each of the n stacked right-hand sides)."""
    rows, cols = b.shape[-2:]
    wide = ops.reshape(ops.moveaxis(b, 0, -1), tuple(b.shape[1:-1]) + (cols * n,))
    x = prim.bind(a, wide, **params)
    return ops.moveaxis(ops.reshape(x, tuple(x.shape[:-1]) + (cols, n)), -1, 0)


def _convert_broadcasting(prim):
    """Batch axes broadcast in the forward: the loop axis goes in front of every stacked
    input, padded so that per-iteration batch ranks line up."""
    def convert(n, args, stacked, **params):
        rank = max(iter_ndim(x, s) for x, s in zip(args, stacked))
        return prim.bind(*(align(x, s, rank) for x, s in zip(args, stacked)), **params), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in (spectral.sym_funm_p, determinant.cofactor_p):
    register_converter(_prim)(_convert_broadcasting(_prim))


@register_converter(eigenvalues.eigh_lift_p)
def _convert_eigh_lift(n, args, stacked, lower, constant=(0, 0)):
    """a (..., m, m) and c (..., m): their per-iteration batch axes (all but the last 2 and
    the last 1) line up once each stacked one's loop axis is padded to the same rank."""
    (a, c), (sa, sc) = args, stacked
    rank = max(a.ndim - sa - 2, c.ndim - sc - 1)
    a, c = align(a, sa, rank + 2), align(c, sc, rank + 1)
    return eigenvalues.eigh_lift_p.bind(a, c, lower=lower, constant=constant), True
