"""Linear algebra derivatives at degenerate points: repeated eigenvalues and singular values,
singular, rank-deficient and ill-conditioned matrices.

Where a derivative is defined it must be right (closed forms, central differences, JAX's
values recorded in tests/data/linalg_degenerate_jax.json by linalg_degenerate_jax.py next
to it); where it is not (a lone eigenvector at a tie) it must be NaN, never a finite
number. Each reproducer runs on every path: the eager tape, pfor (`pj.jacobian`), the row
loop (`vectorize=False`), compiled code (`pj.function`) and forward mode (`jacfwd`).
"""
import json
import pathlib
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.ops import dense_linalg, determinant, eigenvalues, pseudo_inverse, spectral
from pforjac.ops import triangular
from pforjac.scipy import linalg as pla
from pforjac.testing import check_degenerate, degenerate_matrices

JAX = {k: np.asarray(v) for k, v in json.loads(
    (pathlib.Path(__file__).parent / "data" / "linalg_degenerate_jax.json").read_text()).items()}
X3 = np.array([1.0, 2.0, 3.0])


def _tape_jacobian(f):
    def jac(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.jacobian(y, x)
    return jac


def _paths(f, x):
    """f's Jacobian at x on every path, as numpy arrays."""
    x = np.asarray(x, np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        out = {"tape": _tape_jacobian(f)(pj.constant(x)),
               "pfor": pj.jacobian(f, x),
               "loop": pj.jacobian(f, x, vectorize=False),
               "compiled": pj.function(_tape_jacobian(f))(x),
               "jacfwd": pj.jacfwd(f)(x)}
    return {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in out.items()}


def _assert_every_path(f, x, want, atol=1e-10, nan_where=None):
    for path, got in _paths(f, x).items():
        if nan_where is not None:
            assert np.all(np.isnan(got[nan_where])), (path, got)
            got, want_ = got[~nan_where], np.asarray(want)[~nan_where]
        else:
            want_ = want
        np.testing.assert_allclose(got, want_, atol=atol, rtol=1e-9, err_msg=path)


# -- finding 1: functions of eigh's vectors at a repeated eigenvalue ---------------------------
def _whitened(s):
    w, v = np.linalg.eigh(s)
    return X3 @ (v @ np.diag(1.0 / w) @ v.T) @ X3


def test_whitening_through_eigh_at_a_tie_is_nan_with_a_warning_never_finite():
    with pytest.warns(RuntimeWarning, match="eigh: the derivative of its vectors at repeated"):
        g = pj.grad(_whitened)(np.eye(3))
    assert np.all(np.isnan(np.asarray(g)[np.tril_indices(3, -1)]))   # never the old diagonal-only answer
    for path, jac in _paths(_whitened, np.eye(3)).items():
        assert np.isnan(jac[1, 0]) and np.isnan(jac[2, 1]), path


def test_whitening_through_the_matrix_function_is_exact_at_the_tie():
    """x^T S^-1 x: gradient -S^-1 x x^T S^-1, read from S's lower triangle as eigh does."""
    def whitened(s):
        return X3 @ pla.fractional_matrix_power(s, -1.0) @ X3
    full = -np.outer(X3, X3)
    _assert_every_path(whitened, np.eye(3), full, atol=1e-9)


def test_v_exp_w_vt_at_identity_is_nan_through_eigh_and_e_through_expm():
    def through_eigh(s):
        w, v = np.linalg.eigh(s)
        return v @ np.diag(np.exp(w)) @ v.T
    for path, jac in _paths(through_eigh, np.eye(2)).items():
        assert np.isnan(jac[0, 1, 1, 0]), path                 # was 0; e exactly
    want = np.einsum("ik,jl->ijkl", np.eye(2), np.eye(2)) * np.e     # D expm(I)[E] = e E
    _assert_every_path(pla.expm, np.eye(2), want)


def test_expm_at_a_tied_spectrum_and_its_hessian_match_jax():
    _assert_every_path(pla.expm, JAX["tied"], JAX["expm_jacobian_tied"], atol=1e-9)
    hess = pj.hessian(lambda s: pj.sum(pla.expm(s) * JAX["W"]), np.eye(3))
    np.testing.assert_allclose(np.asarray(hess), JAX["expm_hessian_identity"], atol=1e-10)


def test_matrix_functions_match_scipy_and_refuse_a_non_symmetric_matrix():
    import scipy.linalg as sl
    s = JAX["tied"]
    for mine, theirs in ((pla.expm, sl.expm), (pla.logm, sl.logm), (pla.sqrtm, sl.sqrtm)):
        np.testing.assert_allclose(np.asarray(mine(s)), theirs(s), atol=1e-12)
    funm = pla.funm(s, lambda x: np.exp(np.sin(x)))
    np.testing.assert_allclose(np.asarray(funm), sl.funm(s, lambda x: np.exp(np.sin(x))), atol=1e-12)
    with pytest.raises(ValueError, match="not symmetric.*symmetric matrices only"):
        pla.expm(np.array([[1.0, 2.0], [0.0, 1.0]]))


def test_funm_with_a_callable_is_exact_at_a_tie():
    """D f(I)[E] = f'(1) E for any f: here f = exp(sin(x)), f'(1) = cos(1) e^sin(1)."""
    jac = pj.jacobian(lambda s: pla.funm(s, lambda x: np.exp(np.sin(x))), np.eye(2))
    want = np.einsum("ik,jl->ijkl", np.eye(2), np.eye(2)) * np.cos(1) * np.exp(np.sin(1))
    np.testing.assert_allclose(np.asarray(jac), want, atol=1e-9)


# -- finding 2: svd's vectors at repeated singular values, and the polar factor ------------------
def test_svd_recomposed_at_repeated_singular_values_is_nan_never_finite():
    def recomposed(a):
        u, s, vh = np.linalg.svd(a)
        return u @ np.diag(s) @ vh
    for path, jac in _paths(recomposed, 2 * np.eye(2)).items():
        assert np.isnan(jac[0, 1, 0, 1]), path               # was 0 (the identity map: 1)


def test_polar_factor_at_an_orthogonal_matrix_is_exact():
    import scipy.linalg as sl
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((3, 3)))
    h, cols = 1e-6, []
    for e in np.eye(9):
        d = e.reshape(3, 3)
        cols.append(((sl.polar(q + h * d)[0] - sl.polar(q - h * d)[0]) / (2 * h)).ravel())
    want = np.stack(cols, 1).reshape(3, 3, 3, 3)
    _assert_every_path(lambda a: pla.polar(a)[0], q, want, atol=1e-8)


# -- finding 3: second derivatives of functions of the values alone at ties ------------------------
def test_hessian_of_eigenvalues_cubed_at_identity():
    """sum(w^3) = tr(X^3) for X read from its lower triangle: along X[1,0] the second
    derivative is 12 (X[1,0] enters twice, 6 per entry). Forward over reverse (hessian's
    default) is exact; reverse over reverse would need the Hessian of the function of the
    values: NaN with a warning."""
    def f(x):
        return np.sum(np.linalg.eigvalsh(x) ** 3)
    fwd = np.asarray(pj.hessian(f, np.eye(2), outer_jacobian_strategy="forward-mode"))
    assert fwd[1, 0, 1, 0] == pytest.approx(12.0, abs=1e-12)
    assert fwd[0, 0, 0, 0] == pytest.approx(6.0, abs=1e-12)
    np.testing.assert_allclose(np.asarray(pj.jacfwd(pj.grad(f))(np.eye(2))), fwd, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(pj.hessian(f, np.eye(2))), fwd)
    np.testing.assert_array_equal(np.asarray(pj.hessian(f)(np.eye(2))), fwd)
    with pytest.warns(RuntimeWarning):
        rev = np.asarray(pj.hessian(f, np.eye(2), outer_jacobian_strategy="reverse-mode"))
    assert np.isnan(rev[1, 0, 1, 0])                           # was 0
    s = JAX["A"] + JAX["A"].T                                  # distinct eigenvalues: both modes
    np.testing.assert_allclose(np.asarray(pj.hessian(f, s)), _trace_cubed_hessian(s), atol=1e-9)


def _trace_cubed_hessian(s):
    """tr(S^3) of the S read from X's lower triangle: grad 3 S^2 folded onto the triangle."""
    def fold(g):
        return np.tril(g + g.T) - np.diag(np.diag(g))
    n, out = len(s), np.zeros((len(s),) * 4)
    for k, l in zip(*np.tril_indices(n)):
        e = np.zeros((n, n))
        e[k, l] = e[l, k] = 1.0
        out[:, :, k, l] = fold(3 * (s @ e + e @ s))
    return out


def test_hessians_of_singular_value_functions_at_ties_and_away():
    def frob2(a):
        return np.sum(np.linalg.svd(a, compute_uv=False) ** 2)
    for point in (2 * np.eye(2), np.zeros((2, 2)), np.array([[1.0, 0], [0, 0], [0, 0]])):
        hess = np.asarray(pj.hessian(frob2, point, outer_jacobian_strategy="forward-mode"))
        n = point.size
        np.testing.assert_allclose(hess.reshape(n, n), 2 * np.eye(n), atol=1e-12)
    nuclear = np.asarray(pj.hessian(lambda a: np.linalg.norm(a, "nuc"), JAX["A"]))
    np.testing.assert_allclose(nuclear, JAX["nuclear_hessian"], atol=1e-10)


# -- finding 4: det at ill-conditioned and singular matrices ---------------------------------------
def test_det_hessian_at_an_ill_conditioned_matrix_is_exact():
    ill = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9 + 1e-8]])
    hess = np.asarray(pj.hessian(np.linalg.det, ill))
    assert abs(hess[1, 1, 1, 1]) < 1e-12                       # was 852.65; det is linear per entry
    np.testing.assert_allclose(hess, JAX["det_hessian_ill"], atol=1e-9)
    jac_of_grad = pj.jacfwd(pj.grad(np.linalg.det))(ill)
    np.testing.assert_allclose(np.asarray(jac_of_grad), JAX["det_hessian_ill"], atol=1e-9)


def test_det_gradient_at_a_singular_matrix_is_the_cofactor_matrix():
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    cof = np.array([[-3.0, 6.0, -3.0], [6.0, -12.0, 6.0], [-3.0, 6.0, -3.0]])
    _assert_every_path(np.linalg.det, a, cof, atol=1e-12)


# -- finding 9: a zero singular value of a non-square matrix ---------------------------------------
def test_spectral_norm_gradient_at_a_zero_singular_value():
    a = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    np.testing.assert_array_equal(JAX["spectral_grad_rank_deficient"], np.eye(3, 2)[:, :2] * [1, 0])
    _assert_every_path(lambda t: np.linalg.norm(t, 2), a, JAX["spectral_grad_rank_deficient"])


# -- finding 11: pinv with an rcond that cuts a nonzero singular value ------------------------------
def test_pinv_cut_by_rcond_has_the_documented_constant_rank_derivative():
    """What docs/linalg.md says: the value is numpy's (the pseudo-inverse of the matrix with
    the cut singular values set to 0), the derivative the constant-rank formula at that
    truncated matrix A_r applied to the whole perturbation; it differs from the derivative of
    the truncated value by terms of order s_cut / s_kept (0.07 here, s = 1.15, 0.13)."""
    a = np.array([[1.0, 0.5], [0.3, 2e-3]])
    u, s, vh = np.linalg.svd(a)
    a_r = s[0] * np.outer(u[:, 0], vh[0])
    p = np.linalg.pinv(a_r)
    got = np.asarray(pj.jacobian(lambda t: np.linalg.pinv(t, rcond=0.5), a))
    np.testing.assert_allclose(np.asarray(np.linalg.pinv(pj.constant(a), rcond=0.5)), p, atol=1e-14)
    eye = np.eye(2)
    for k, d in enumerate(np.eye(4)):
        d = d.reshape(2, 2)
        want = -p @ d @ p + p @ p.T @ d.T @ (eye - a_r @ p) + (eye - p @ a_r) @ d.T @ p.T @ p
        np.testing.assert_allclose(got[..., k // 2, k % 2], want, atol=1e-12)
    h = 1e-7
    fd = [(np.linalg.pinv(a + h * d.reshape(2, 2), rcond=0.5)
           - np.linalg.pinv(a - h * d.reshape(2, 2), rcond=0.5)) / (2 * h) for d in np.eye(4)]
    assert 0.05 < np.abs(got - np.stack(fd, -1).reshape(2, 2, 2, 2)).max() < 0.1


# -- the degenerate-point checker over every linear algebra primitive ------------------------------
_B = np.random.default_rng(2).standard_normal((3, 2))
_SYM = degenerate_matrices(3, symmetric=True)
_ALL = degenerate_matrices(3)
_TIES = ("identity", "repeated", "scaled_orthogonal")


def _at(*names, points=_ALL):
    return {k: points[k] for k in names}


def _lift(a):
    return eigenvalues.eigh_lift_p.bind(a, 3.0 * pj.eigvalsh(a) ** 2, lower=True)


def _tied_products(usv):
    u, s, vh = usv
    return (u * s) @ vh


# name: (probe, points, points where NaN is allowed, symmetric directions). Not at "near_tie"
# (eigenvalues 1e-7 apart) for the vectors: second derivatives through them lose about
# eps / gap^2 (2% there), which docs/linalg.md states.
PROBES = {
    "solve": (lambda a: pj.solve(a, _B), _at("identity", "ill_conditioned", "scaled_orthogonal"),
              (), False),
    "cholesky": (pj.cholesky, _at("identity", "ill_conditioned", points=_SYM), (), True),
    "eigh": (lambda a: (lambda w, v: (v * pj.exp(w)) @ v.T)(*pj.eigh(a)),
             _at("identity", "repeated", "rank_deficient", "ill_conditioned", points=_SYM),
             _TIES, True),
    "svd": (lambda a: _tied_products(pj.svd(a)),
            _at("identity", "scaled_orthogonal", "general_rank_deficient", "ill_conditioned"),
            _TIES, False),
    "qr": (lambda a: (lambda q, r: q @ r)(*pj.qr(a)), _at("identity", "ill_conditioned"), (), False),
    "slogdet": (lambda a: pj.slogdet(a)[1], _at("identity", "scaled_orthogonal", "ill_conditioned"),
                (), False),
    "pinv": (pj.pinv, _at("identity", "scaled_orthogonal", "near_tie"), (), False),
    "triangular_solve": (lambda a: pj.solve_triangular(a, _B, lower=True),
                         {"identity": _ALL["identity"],
                          "ill_conditioned": (np.linalg.cholesky(_SYM["ill_conditioned"][0]), 1e-11)},
                         (), False),
    "sym_funm": (lambda s: pla.expm(s) + pla.logm(s + 2.0 * np.eye(3)),
                 _at("identity", "repeated", "near_tie", "ill_conditioned", points=_SYM), (), True),
    "det": (pj.det, _at("identity", "general_rank_deficient", "ill_conditioned"), (), False),
    "cofactor": (determinant.cofactor, _at("identity", "general_rank_deficient", "ill_conditioned"),
                 (), False),
    "eigvalsh": (lambda a: pj.sum(pj.eigvalsh(a) ** 3),
                 _at("identity", "repeated", "rank_deficient", "ill_conditioned", points=_SYM),
                 _TIES, True),
    "eigh_lift": (_lift, _at("identity", "repeated", "rank_deficient", "ill_conditioned",
                             points=_SYM), _TIES, True),
    "svdvals": (lambda a: pj.sum(pj.svdvals(a) ** 2),
                _at("identity", "scaled_orthogonal", "general_rank_deficient", "ill_conditioned"),
                _TIES + ("general_rank_deficient",), False),
}
_MODULES = (dense_linalg, determinant, eigenvalues, pseudo_inverse, spectral, triangular)


def test_every_linear_algebra_primitive_has_a_degenerate_point_check():
    prims = {v.name for m in _MODULES for v in vars(m).values() if isinstance(v, core.Primitive)}
    assert prims == set(PROBES), f"add probes for {prims - set(PROBES)}"


@pytest.mark.parametrize("name", sorted(PROBES))
def test_second_derivatives_at_degenerate_points(name):
    probe, points, nan_ok, symmetric = PROBES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        report = check_degenerate(probe, points, nan_ok=nan_ok, symmetric=symmetric, rtol=1e-5,
                                  atol=1e-6)
    assert set(report.values()) <= {"ok", "nan"}
    assert all(v == "ok" for (point, _), v in report.items() if point not in nan_ok)


def test_the_checker_catches_det_through_log_abs_det():
    """The old det, sign * exp(log|det|), whose Hessian cancels near a singular matrix. How
    wrong it is at one matrix depends on LAPACK's rounding there (on one CPU the error at
    9 + 1e-8 was caught, on another it fell inside the tolerance), so the checker must catch
    it at several of ten matrices ever closer to singular, and pass pforjac's det at all."""
    def old_det(a):
        sign, logdet = pj.slogdet(a)
        return sign * pj.exp(logdet)
    caught = []
    for eps in (3e-6, 1e-6, 3e-7, 1e-7, 3e-8, 1e-8, 3e-9, 1e-9, 3e-10, 1e-10):
        ill = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9 + eps]])
        try:
            check_degenerate(old_det, {"ill": (ill, 1e-6)})
        except AssertionError as e:
            assert "check_degenerate: at the 'ill' point" in str(e)
            caught.append(eps)
        check_degenerate(pj.det, {"ill": (ill, 1e-6)})
    assert len(caught) >= 3, caught
