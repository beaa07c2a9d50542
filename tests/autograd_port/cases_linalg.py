"""autograd's tests/test_linalg.py (real dtypes), plus scipy.linalg.solve_triangular."""
from __future__ import annotations

import numpy

from .spec import SPD, Gen, R


def _sym(np, a):
    return (a + np.swapaxes(a, -1, -2)) / 2.0


def build(np, sp, la, cases):
    L = np.linalg
    cases.add("la_inv", L.inv, R(8, 8))
    for n, m in ((2, 3), (3, 2), (3, 3)):
        cases.add(f"la_pinv_{n}x{m}", L.pinv, R(n, m))
        cases.add(f"la_pinv_3d_{n}x{m}", L.pinv, R(2, n, m))
    cases.add("la_inv_3d", L.inv, R(4, 4, 4) + 5 * _eye(4))
    cases.add("la_inv_4d", L.inv, R(4, 4, 4, 4) + 5 * _eye(4))
    cases.add("la_solve_arg1", lambda a, b: L.solve(a, b), R(8, 8) + 10 * _eye(8), R(8, 7))
    cases.add("la_solve_arg1_1d", lambda a, b: L.solve(a, b), R(8, 8) + 10 * _eye(8), R(8))
    cases.add("la_solve_arg2", lambda a, b: L.solve(a, b), R(6, 6) + _eye(6), R(6, 5), wrt=(1,))
    cases.add("la_solve_both", lambda a, b: L.solve(a, b), R(6, 6) + 4 * _eye(6), R(6, 5),
              wrt=(0, 1))
    cases.add("la_solve_arg1_3d", lambda a, b: L.solve(a, b[..., None])[..., 0],
              R(5, 4, 4) + 5 * _eye(4), R(5, 4))
    cases.add("la_solve_arg1_3d_3d", lambda a, b: L.solve(a, b), R(5, 4, 4) + 5 * _eye(4),
              R(5, 4, 6))
    cases.add("la_det", L.det, R(6, 6))
    cases.add("la_det_3d", L.det, R(3, 3, 3))
    cases.add("la_slogdet", lambda x: L.slogdet(x)[1], R(6, 6))
    cases.add("la_slogdet_neg", lambda x: L.slogdet(-x)[1], R(6, 6))
    cases.add("la_slogdet_3d", lambda x: np.sum(L.slogdet(x)[1]), R(4, 4, 4) + 5 * _eye(4))
    _norms(np, L, cases)
    _decompositions(np, L, cases)
    cases.add("la_solve_triangular_lower", lambda a, b: la.solve_triangular(a, b, lower=True),
              R(5, 5) + 5 * _eye(5), R(5, 3), wrt=(0, 1))
    cases.add("la_solve_triangular_upper_trans",
              lambda a, b: la.solve_triangular(a, b, trans="T"), R(5, 5) + 5 * _eye(5), R(5),
              wrt=(0, 1))
    cases.add("la_matrix_power_3", lambda a: L.matrix_power(a, 3), R(4, 4))
    cases.add("la_matrix_power_m2", lambda a: L.matrix_power(a, -2), R(4, 4) + 4 * _eye(4))
    cases.add("la_multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), R(3, 4), R(4, 5), R(5, 2),
              wrt=(0, 1, 2))


def _eye(n):
    return Gen(lambda rng: numpy.eye(n))


def _norms(np, L, cases):
    cases.add("la_vector_2norm", L.norm, R(6))
    cases.add("la_frobenius_norm", L.norm, R(6, 5))
    cases.add("la_frobenius_norm_axis", lambda x: L.norm(x, axis=(0, 1)), R(6, 5, 4))
    for order in (2, 3, 4, 1, -1, float("inf"), -float("inf"), 0.5):
        cases.add(f"la_vector_norm_ord_{order}", lambda x, o=order: L.norm(x, ord=o), R(6),
                  hessian=order not in (1, -1, float("inf"), -float("inf")))
    for axis in range(3):
        cases.add(f"la_norm_axis_{axis}", lambda x, a=axis: L.norm(x, axis=a), R(6, 5, 4))
    cases.add("la_norm_nuclear", lambda x: L.norm(x, ord="nuc"), R(6, 5))
    cases.add("la_norm_nuclear_axis", lambda x: L.norm(x, ord="nuc", axis=(0, 1)), R(6, 5, 4))
    cases.add("la_norm_matrix_2", lambda x: L.norm(x, ord=2), R(5, 4))
    cases.add("la_norm_matrix_m2", lambda x: L.norm(x, ord=-2), R(5, 4))
    cases.add("la_norm_matrix_fro_keepdims", lambda x: L.norm(x, ord="fro", axis=(1, 2),
                                                             keepdims=True), R(3, 5, 4))
    cases.add("la_norm_list", lambda x: L.norm(np.array([x, x + 2.0])), R())


def _decompositions(np, L, cases):
    cases.add("la_eigh_lower", lambda x: L.eigh(_sym(np, x)), R(6, 6))
    cases.add("la_eigh_upper", lambda x: L.eigh(_sym(np, x), "U"), R(6, 6))
    cases.add("la_eigh_broadcast", lambda x: L.eigh(_sym(np, x)), R(2, 3, 5, 5) + 10 * _eye(5))
    cases.add("la_eigvalsh", lambda x: L.eigvalsh(_sym(np, x)), R(5, 5))
    cases.add("la_cholesky", lambda a: L.cholesky(_sym(np, a)), SPD(6))
    cases.add("la_cholesky_broadcast", lambda a: L.cholesky(_sym(np, a)), SPD(5, 2, 3))
    cases.add("la_cholesky_reparam", lambda a, z: L.norm(np.dot(L.cholesky(_sym(np, a)), z)),
              SPD(6), R(6))
    for shape in ((3, 5), (2, 3, 5), (4, 4), (2, 4, 4), (5, 3), (2, 5, 3)):
        tag = "x".join(map(str, shape))
        cases.add(f"la_svd_{tag}", lambda x: L.svd(x, full_matrices=False), R(*shape))
        cases.add(f"la_svd_only_s_{tag}", lambda x: L.svd(x, compute_uv=False), R(*shape))
    for shape in ((5, 3), (4, 4), (2, 5, 3)):
        tag = "x".join(map(str, shape))
        cases.add(f"la_qr_{tag}", lambda x: L.qr(x), R(*shape))
