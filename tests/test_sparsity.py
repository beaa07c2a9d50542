"""Sparsity patterns found from the traced program (pforjac.sparse.pattern).

Each workload's true pattern is built by construction (index arithmetic, never pforjac's
rules); the pattern found must equal it and contain the non-zeros of the dense Jacobian
(pforjac's, at random points). A structural pattern may be a strict superset of every
numeric one where values cancel (`x - x`) or a constant's zeros are not read (a dense
banded matrix): those workloads say so.
"""
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import pforjac as pj
from pforjac import core, extend
from pforjac.sparse import _sets, pattern_rules
from pforjac.sparse.pattern import (hessian_sparsity, jacobian_sparsity, program_hessian_sparsity,
                                    program_jacobian_sparsity)
from pforjac.testing import isolated_registries


def _from_lists(deps: list, n: int) -> np.ndarray:
    """The boolean matrix whose row e is True at the columns in deps[e]."""
    out = np.zeros((len(deps), n), bool)
    for e, cols in enumerate(deps):
        out[e, list(cols)] = True
    return out


def _banded(n: int, offsets, periodic=False) -> np.ndarray:
    i = np.arange(n)
    out = np.zeros((n, n), bool)
    for k in offsets:
        j = i + k
        keep = slice(None) if periodic else (j >= 0) & (j < n)
        out[i[keep], j[keep] % n] = True
    return out


# -- the workloads ---------------------------------------------------------------------------
def heat(u):
    """Nonlinear conductivity k(u) = 1 + u^2, zero Dirichlet boundaries (pad), fluxes on
    the cell faces (slices)."""
    k = 1.0 + u * u
    up, kp = pj.pad(u, ((1, 1),)), pj.pad(k, ((1, 1),))
    flux = 0.5 * (kp[1:] + kp[:-1]) * (up[1:] - up[:-1])
    return flux[1:] - flux[:-1]


def heat_periodic(u):
    k = pj.exp(u)
    flux = 0.5 * (k + pj.roll(k, -1)) * (pj.roll(u, -1) - u)
    return flux - pj.roll(flux, 1)


def brusselator_2d(u, A=3.4, B=1.0, alpha=10.0):
    """The 2-D Brusselator of SciMLBenchmarks (`brusselator_2d_loop`): u is (N, N, 2), the
    Laplacian periodic (its `limit`), the forcing f(x, y, t) at t = 1.5 a constant."""
    N = u.shape[0]
    xy = np.linspace(0.0, 1.0, N)
    a = alpha / (xy[1] - xy[0]) ** 2
    forcing = 5.0 * (((xy[:, None] - 0.3) ** 2 + (xy[None, :] - 0.6) ** 2) <= 0.01)
    lap = lambda w: (pj.roll(w, 1, 0) + pj.roll(w, -1, 0) + pj.roll(w, 1, 1)
                     + pj.roll(w, -1, 1) - 4.0 * w)
    x, y = u[:, :, 0], u[:, :, 1]
    du = a * lap(x) + B + x * x * y - (A + 1.0) * x + forcing
    dv = a * lap(y) + A * x - x * x * y
    return pj.stack([du, dv], axis=-1)


def _brusselator_truth(N: int) -> np.ndarray:
    i, j, c = np.indices((N, N, 2))
    flat = lambda a, b, cc: ((a % N) * N + b % N) * 2 + cc
    rows = np.arange(N * N * 2).reshape(N, N, 2)
    out = np.zeros((N * N * 2, N * N * 2), bool)
    for cols in (flat(i + 1, j, c), flat(i - 1, j, c), flat(i, j + 1, c), flat(i, j - 1, c),
                 flat(i, j, 0 * c), flat(i, j, 0 * c + 1)):
        out[rows.ravel(), cols.ravel()] = True
    return out


def block_diagonal(x, k=3):
    y = pj.reshape(x, (-1, k))
    return pj.reshape(y * pj.sum(y * y, axis=1, keepdims=True), (-1,))


def arrowhead(x):
    """A dense first row (a sum), a dense first column (x_0 in every entry), a diagonal."""
    return pj.concat([pj.reshape(pj.sum(x * x), (1,)), x[1:] * x[0]])


def dense_row(x):
    return pj.concat([pj.reshape(pj.sum(x), (1,)), pj.exp(x[1:])])


def dense_column(x):
    return pj.sin(x) + x[0]


def where_branches(x):
    """Both branches: the reversed x and the rotated x."""
    return pj.where(x > 0, pj.flip(x, 0) ** 2, pj.roll(x, 1))


def extremes(x):
    return pj.maximum(x, pj.flip(x, 0)) + pj.abs(x[::-1]) * 0.5


def second_differences(x):
    d = x[1:] - x[:-1]
    return d[1:] - d[:-1]


def cancellation(x):
    return x - x + pj.sin(x[::-1]) * 0.0


def reductions(x):
    X = pj.reshape(x, (3, 4))
    parts = [pj.sum(X, axis=0), pj.max(X, axis=1), pj.reshape(pj.prod(X), (1,)),
             pj.mean(X, axis=1, keepdims=True), pj.cumsum(X, axis=1), pj.min(X, axis=0)]
    return pj.concat([pj.reshape(p, (-1,)) for p in parts])


def _reductions_truth() -> np.ndarray:
    X = np.arange(12).reshape(3, 4)
    deps = [X[:, j] for j in range(4)] + [X[i] for i in range(3)] + [X.ravel()] \
        + [X[i] for i in range(3)] + [X[i, :j + 1] for i in range(3) for j in range(4)] \
        + [X[:, j] for j in range(4)]
    return _from_lists(deps, 12)


_B = np.array([[1.0, -1.0], [2.0, 3.0], [0.5, 4.0]])
_BANDED = np.eye(6) * 2.0 + np.eye(6, k=1) + np.eye(6, k=-1)


def matmuls(x):
    X = pj.reshape(x, (4, 3))
    return pj.concat([pj.reshape(X @ _B, (-1,)), pj.reshape(pj.transpose(X) @ X, (-1,))])


def _matmuls_truth() -> np.ndarray:
    X = np.arange(12).reshape(4, 3)
    deps = [X[i] for i in range(4) for _ in range(2)]
    deps += [set(X[:, i]) | set(X[:, k]) for i in range(3) for k in range(3)]
    return _from_lists(deps, 12)


def banded_constant(x):
    return _BANDED @ pj.tanh(x)


def einsums(x):
    X, D = pj.reshape(x[:12], (3, 4)), pj.reshape(x[12:], (2, 2))
    return pj.concat([pj.reshape(pj.einsum("ij,kj->ik", X, X), (-1,)),
                      pj.einsum("ii->i", D), pj.reshape(pj.einsum("ij,j->i", X, x[:4]), (-1,))])


def _einsums_truth() -> np.ndarray:
    X, D = np.arange(12).reshape(3, 4), np.arange(12, 16).reshape(2, 2)
    deps = [set(X[i]) | set(X[k]) for i in range(3) for k in range(3)]
    deps += [{D[0, 0]}, {D[1, 1]}] + [set(X[i]) | set(range(4)) for i in range(3)]
    return _from_lists(deps, 16)


_IDX = np.array([4, 0, 4, 2, -1, 3])


def gather_scatter(x):
    g = pj.gather(x, _IDX) ** 2
    s = pj.scatter_add(pj.sin(x), _IDX, axis=0, size=7)
    return pj.concat([g, s])


def _gather_scatter_truth() -> np.ndarray:
    n = 6
    deps = [{i % n} for i in _IDX] + [{p for p, i in enumerate(_IDX) if i % 7 == r}
                                      for r in range(7)]
    return _from_lists(deps, n)


def traced_index(x):
    """An index the input decides (argmax): any entry along the axis."""
    return pj.gather(x, pj.reshape(pj.argmax(x), (1,))) * x[:2]


# data movement: the truth is where numpy's own op sends each element's index
_MOVES = [
    (lambda X: pj.transpose(X, (2, 0, 1)), lambda A: A.transpose(2, 0, 1)),
    (lambda X: pj.moveaxis(X, 0, -1), lambda A: np.moveaxis(A, 0, -1)),
    (lambda X: pj.swapaxes(X, 0, 1), lambda A: np.swapaxes(A, 0, 1)),
    (lambda X: pj.flip(X, (0, 2)), lambda A: np.flip(A, (0, 2))),
    (lambda X: pj.tile(X[:, :1], (1, 2, 1)), lambda A: np.tile(A[:, :1], (1, 2, 1))),
    (lambda X: pj.broadcast_to(X[:1, None], (2, 3, 3, 4)),
     lambda A: np.broadcast_to(A[:1, None], (2, 3, 3, 4))),
    (lambda X: pj.stack([X[1], X[0]], axis=1), lambda A: np.stack([A[1], A[0]], axis=1)),
    (lambda X: pj.split(X, [1, 3], axis=2)[1], lambda A: np.split(A, [1, 3], axis=2)[1]),
    (lambda X: pj.reshape(X, (4, 6))[::-2, 1:5:3], lambda A: A.reshape(4, 6)[::-2, 1:5:3]),
    (lambda X: X[1, None, ..., 2], lambda A: A[1, None, ..., 2]),
    (lambda X: pj.roll(X, (1, -2), axis=(1, 2)), lambda A: np.roll(A, (1, -2), axis=(1, 2))),
    (lambda X: pj.concat([X[:, :1], X[:, 2:]], axis=1),
     lambda A: np.concatenate([A[:, :1], A[:, 2:]], axis=1)),
]


def data_movement(x):
    X = pj.reshape(x, (2, 3, 4))
    padded = pj.pad(X[0], ((1, 0), (0, 2)))
    put = core.bind(pj.ops.indexing.setitem_zeros_p, X[1], key=(1,), shape=(3, 3, 4))
    return pj.concat([pj.reshape(mv(X), (-1,)) for mv, _ in _MOVES]
                     + [pj.reshape(padded, (-1,)), pj.reshape(put, (-1,))])


def _data_movement_truth() -> np.ndarray:
    A = np.arange(24).reshape(2, 3, 4)
    put = np.full((3, 3, 4), -1)
    put[1] = A[1]
    srcs = [np.ravel(np.asarray(mv(A))) for _, mv in _MOVES]
    srcs += [np.pad(A[0], ((1, 0), (0, 2)), constant_values=-1).ravel(), put.ravel()]
    src = np.concatenate(srcs)
    return _from_lists([[s] if s >= 0 else [] for s in src], 24)


@dataclass
class Workload:
    name: str
    f: Callable
    n: int
    truth: Callable
    structural: str = ""         # why the numeric non-zeros may be fewer (else: equal)


JACOBIANS = [
    Workload("heat", heat, 12, lambda: _banded(12, (-1, 0, 1))),
    Workload("heat_periodic", heat_periodic, 10, lambda: _banded(10, (-1, 0, 1), True)),
    Workload("brusselator_2d", lambda u: brusselator_2d(pj.reshape(u, (5, 5, 2))), 50,
             lambda: _brusselator_truth(5)),
    Workload("block_diagonal", block_diagonal, 12,
             lambda: np.kron(np.eye(4, dtype=bool), np.ones((3, 3), bool))),
    Workload("arrowhead", arrowhead, 8,
             lambda: np.eye(8, dtype=bool) | (np.arange(8) == 0)[:, None]
             | (np.arange(8) == 0)[None, :]),
    Workload("dense_row", dense_row, 8,
             lambda: np.eye(8, dtype=bool) | (np.arange(8) == 0)[:, None]),
    Workload("dense_column", dense_column, 8,
             lambda: np.eye(8, dtype=bool) | (np.arange(8) == 0)[None, :]),
    Workload("where_branches", where_branches, 9,
             lambda: np.eye(9, dtype=bool)[::-1] | _banded(9, (-1,), True)),
    Workload("extremes", extremes, 9, lambda: np.eye(9, dtype=bool) | np.eye(9, dtype=bool)[::-1]),
    Workload("second_differences", second_differences, 9,
             lambda: _banded(9, (0, 1, 2))[:7]),
    Workload("cancellation", cancellation, 6,
             lambda: np.eye(6, dtype=bool) | np.eye(6, dtype=bool)[::-1],
             structural="x - x and sin(x) * 0 cancel: structurally they stay"),
    Workload("reductions", reductions, 12, _reductions_truth),
    Workload("matmuls", matmuls, 12, _matmuls_truth),
    Workload("banded_constant", banded_constant, 6, lambda: np.ones((6, 6), bool),
             structural="a dense constant's zeros are not read"),
    Workload("einsums", einsums, 16, _einsums_truth),
    Workload("gather_scatter", gather_scatter, 6, _gather_scatter_truth),
    Workload("traced_index", traced_index, 5, lambda: np.ones((2, 5), bool)),
    Workload("data_movement", data_movement, 24, _data_movement_truth),
]


def _dense_jacobian(f, x) -> np.ndarray:
    out = pj.jacobian(f, pj.constant(x)).numpy()
    return out.reshape(-1, x.size)


@pytest.mark.parametrize("w", JACOBIANS, ids=[w.name for w in JACOBIANS])
def test_the_jacobian_pattern_is_the_one_built_by_construction(w):
    p = jacobian_sparsity(w.f, np.zeros(w.n))
    assert p.dtype == np.bool_ and p.format == "csr"
    np.testing.assert_array_equal(p.toarray(), w.truth())


@pytest.mark.parametrize("w", JACOBIANS, ids=[w.name for w in JACOBIANS])
def test_the_pattern_holds_the_dense_jacobians_nonzeros(w):
    """At random points every numeric non-zero is in the pattern; their union over the
    points is the whole pattern unless the workload says why not."""
    p = jacobian_sparsity(w.f, np.zeros(w.n)).toarray()
    rng = np.random.default_rng(0)
    seen = np.zeros_like(p)
    for _ in range(12):
        seen |= _dense_jacobian(w.f, rng.uniform(-2.0, 2.0, w.n)) != 0
    assert not (seen & ~p).any(), f"non-zeros outside the pattern at {np.argwhere(seen & ~p)}"
    if not w.structural:
        np.testing.assert_array_equal(seen, p)
    else:
        assert (p & ~seen).any(), "a structural workload whose pattern every point fills"


def test_the_heat_equation_at_200000_points_is_tridiagonal():
    n = 200_000
    p = jacobian_sparsity(heat, np.zeros(n))
    assert p.shape == (n, n) and p.nnz == 3 * n - 2
    rows = np.repeat(np.arange(n), np.diff(p.indptr))
    assert (np.abs(p.indices - rows) <= 1).all()


def test_brusselator_at_n_32_has_six_entries_a_row():
    p = jacobian_sparsity(lambda u: brusselator_2d(u), np.zeros((32, 32, 2)))
    assert p.shape == (2048, 2048)
    np.testing.assert_array_equal(p.toarray(), _brusselator_truth(32))


def test_inputs_of_any_shape_flatten_in_c_order_and_ints_trace_as_floats():
    p = jacobian_sparsity(lambda X: pj.transpose(X) * 2.0, np.zeros((2, 3), np.int64))
    expected = np.zeros((6, 6), bool)
    expected[np.arange(6), np.arange(6).reshape(2, 3).T.ravel()] = True
    np.testing.assert_array_equal(p.toarray(), expected)


def test_a_constant_or_integer_output_depends_on_nothing():
    assert jacobian_sparsity(lambda x: pj.constant(np.ones(3)), np.zeros(4)).nnz == 0
    assert jacobian_sparsity(lambda x: pj.cast(x > 0, np.float64), np.zeros(4)).nnz == 0
    assert jacobian_sparsity(lambda x: pj.stop_gradient(x) + pj.floor(x), np.zeros(4)).nnz == 0
    assert jacobian_sparsity(lambda x: pj.zeros_like(x) + pj.ones_like(x), np.zeros(4)).nnz == 0
    assert jacobian_sparsity(lambda x: x, np.zeros(3)).toarray().tolist() == np.eye(3).tolist()


def test_a_traced_program_can_be_given_instead_of_f():
    program = pj.make_program(heat, [((7,), np.float32)])
    np.testing.assert_array_equal(program_jacobian_sparsity(program).toarray(),
                                  _banded(7, (-1, 0, 1)))
    program = pj.make_program(rosenbrock, [((5,), np.float64)])
    np.testing.assert_array_equal(program_hessian_sparsity(program).toarray(),
                                  _banded(5, (-1, 0, 1)))


def test_f_must_return_one_tensor():
    with pytest.raises(TypeError, match="must return one tensor"):
        jacobian_sparsity(lambda x: (x, x), np.zeros(2))


# -- Hessians ------------------------------------------------------------------------------
def rosenbrock(x):
    return pj.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_extended(x):
    """Moré, Garbow and Hillstrom's extended Rosenbrock: independent pairs."""
    return pj.sum(100.0 * (x[1::2] - x[::2] ** 2) ** 2 + (1.0 - x[::2]) ** 2)


def products(x):
    return pj.sum(x[:-1] * x[1:]) + pj.sum(x[:2] * x[-2:])


_D0, _D1 = np.linspace(1.0, 2.0, 10), np.linspace(-1.0, -0.5, 9)


def quadratic_by_diagonals(x):
    return pj.sum(_D0 * x * x) + pj.sum(_D1 * x[1:] * x[:-1])


def quadratic_dense_constant(x):
    return x @ (_BANDED @ x)


def quotients(x):
    return pj.sum(x[1:] / x[:-1])


def piecewise(x):
    return pj.sum(pj.abs(x)) + pj.sum(pj.maximum(x, 0.5)) + pj.sum(pj.where(x > 0, x ** 2, x))


def exp_of_a_sum(x):
    return pj.exp(pj.sum(x[:3])) + pj.sum(x[3:])


def dot_of_residuals(x):
    """0.5 r @ r, r a chained residual: each product pairs r_k with itself only."""
    r = x[1:] - x[:-1] ** 2
    return 0.5 * (r @ r)


def gram(x):
    X = pj.reshape(x, (2, 3))
    return pj.sum(X @ pj.transpose(X)) + pj.einsum("i,i->", x[:2], x[4:])


def _corners() -> np.ndarray:
    out = _banded(10, (-1, 1))
    for i, j in ((0, 8), (1, 9)):
        out[i, j] = out[j, i] = True
    return out


def _quotient_truth() -> np.ndarray:
    out = _banded(8, (-1, 1))
    out[np.arange(7), np.arange(7)] = True       # each x_i < n-1 is a denominator
    return out


HESSIANS = [
    Workload("rosenbrock", rosenbrock, 10, lambda: _banded(10, (-1, 0, 1))),
    Workload("rosenbrock_extended", rosenbrock_extended, 10,
             lambda: np.kron(np.eye(5, dtype=bool), np.ones((2, 2), bool))),
    Workload("products", products, 10, _corners),
    Workload("quadratic_by_diagonals", quadratic_by_diagonals, 10,
             lambda: _banded(10, (-1, 0, 1))),
    Workload("quadratic_dense_constant", quadratic_dense_constant, 6,
             lambda: np.ones((6, 6), bool), structural="a dense constant's zeros are not read"),
    Workload("quotients", quotients, 8, _quotient_truth),
    Workload("piecewise", piecewise, 6, lambda: np.eye(6, dtype=bool)),
    Workload("dot_of_residuals", dot_of_residuals, 8, lambda: _banded(8, (-1, 0, 1))),
    Workload("gram", gram, 6,           # X[i, j] X[k, j]: the same column; x0 x4, x1 x5
             lambda: np.kron(np.ones((2, 2), bool), np.eye(3, dtype=bool))
             | _banded(6, (-4, 4))),
    Workload("exp_of_a_sum", exp_of_a_sum, 6,
             lambda: np.pad(np.ones((3, 3), bool), ((0, 3), (0, 3)))),
]


@pytest.mark.parametrize("w", HESSIANS, ids=[w.name for w in HESSIANS])
def test_the_hessian_pattern_is_the_one_built_by_construction(w):
    h = hessian_sparsity(w.f, np.zeros(w.n))
    assert h.dtype == np.bool_ and h.format == "csr" and (h != h.T).nnz == 0
    np.testing.assert_array_equal(h.toarray(), w.truth())


@pytest.mark.parametrize("w", HESSIANS, ids=[w.name for w in HESSIANS])
def test_the_hessian_pattern_holds_the_dense_hessians_nonzeros(w):
    h = hessian_sparsity(w.f, np.zeros(w.n)).toarray()
    rng = np.random.default_rng(1)
    seen = np.zeros_like(h)
    for _ in range(3):
        x = rng.uniform(0.3, 2.0, w.n) * rng.choice([-1.0, 1.0], w.n)
        seen |= pj.hessian(w.f, pj.constant(x)).numpy() != 0
    assert not (seen & ~h).any(), f"non-zeros outside the pattern at {np.argwhere(seen & ~h)}"
    if not w.structural:
        np.testing.assert_array_equal(seen, h)


def test_the_rosenbrock_hessian_at_10000_points_is_tridiagonal():
    n = 10_000
    h = hessian_sparsity(rosenbrock, np.zeros(n))
    assert h.shape == (n, n) and h.nnz == 3 * n - 2
    rows = np.repeat(np.arange(n), np.diff(h.indptr))
    assert (np.abs(h.indices - rows) <= 1).all()


def _gradient(f):
    def grad(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x)
    return grad


@pytest.mark.parametrize("w", HESSIANS, ids=[w.name for w in HESSIANS])
def test_the_hessian_pattern_is_the_jacobian_pattern_of_the_traced_gradient(w):
    """Two ways through different programs: the second-order sets over f's program, and
    the first-order sets over the program of its gradient (pforjac's vjp rules)."""
    h = hessian_sparsity(w.f, np.zeros(w.n))
    np.testing.assert_array_equal(h.toarray(),
                                  jacobian_sparsity(_gradient(w.f), np.zeros(w.n)).toarray())


def test_a_hessian_step_that_would_be_too_large_says_so(monkeypatch):
    monkeypatch.setattr(_sets, "PAIR_LIMIT", 10)
    with pytest.raises(MemoryError, match="op 'exp' would form 25 index pairs"):
        hessian_sparsity(lambda x: pj.exp(pj.sum(x)), np.zeros(5))
    with pytest.raises(MemoryError, match=r"mk,kn->mn of shapes \[\(2, 3\), \(3, 2\)\] sums 12"):
        hessian_sparsity(lambda x: pj.sum(pj.reshape(x, (2, 3)) @ pj.reshape(x, (3, 2))),
                         np.zeros(6))


def test_hessian_sparsity_wants_a_scalar():
    with pytest.raises(ValueError, match=r"scalar.*\(3,\)"):
        hessian_sparsity(lambda x: x * x, np.zeros(3))


def test_a_linear_function_has_an_empty_hessian_pattern():
    h = hessian_sparsity(lambda x: pj.sum(x[::2]) - 3.0 * x[1], np.zeros(4))
    assert h.shape == (4, 4) and h.nnz == 0


# -- the registry ---------------------------------------------------------------------------
# Ops handled conservatively on purpose (every output on every input): keep it short.
CONSERVATIVE: set = set()


def test_every_primitive_has_a_sparsity_rule_or_is_listed_as_conservative():
    missing = sorted(p.name for p in core.primitives.values() if p.origin != "extend"
                     and pattern_rules.curvature_of(p) != "constant"
                     and pattern_rules.sparsity_rule_for(p) is None)
    assert sorted(set(missing) - CONSERVATIVE) == [], \
        "give these a sparsity rule (pforjac/sparse/pattern_rules.py), or a family's"
    assert len(CONSERVATIVE) <= 5


def test_every_curvature_named_is_known():
    assert set(pattern_rules.curvatures.values()) <= set(pattern_rules.CURVATURES)
    assert pattern_rules.curvature_of(pj.ops.elementwise.multiply_p) == "bilinear"
    assert pattern_rules.curvature_of(pj.ops.elementwise.greater_p) == "constant"
    assert pattern_rules.curvature_of(pj.ops.elementwise.tanh_p) == "nonlinear"


def test_a_second_registration_is_refused():
    with pytest.raises(ValueError, match="'getitem' is already registered"):
        pattern_rules.defsparsity(pj.ops.indexing.getitem_p)(lambda eqn, ctx: [None])
    with pytest.raises(ValueError, match="unknown curvature 'wiggly'"):
        pattern_rules.defcurvature("wiggly", pj.ops.elementwise.exp_p)


def test_an_op_without_a_rule_is_conservative_and_warns_once():
    with isolated_registries():
        running_max = extend.defop("sparsity_test_running_max", np.maximum.accumulate,
                                   extend.same_shape)
        f = lambda x: running_max(x[:3]) * 2.0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            p = jacobian_sparsity(f, np.zeros(5))
            jacobian_sparsity(f, np.zeros(5))
        named = [w for w in caught if "sparsity_test_running_max" in str(w.message)]
        assert len(named) == 1 and "no sparsity rule" in str(named[0].message)
        np.testing.assert_array_equal(p.toarray(), np.arange(5)[None, :].repeat(3, 0) < 3)
        h = hessian_sparsity(lambda x: pj.sum(running_max(x[1:3])) + x[0], np.zeros(4))
        np.testing.assert_array_equal(h.toarray(), np.pad(np.ones((2, 2), bool), ((1, 1), (1, 1))))


def test_a_primitive_declared_again_loses_its_old_rules():
    with isolated_registries():
        old = core.new_primitive("sparsity_test_again", np.negative, lambda x: (x.shape, x.dtype))
        pattern_rules.defsparsity(old, curvature="linear")(pattern_rules.elementwise_rule)
        new = core.new_primitive("sparsity_test_again", np.negative,
                                 lambda x: (x.shape, x.dtype), override=True)
        assert old not in pattern_rules.sparsity_rules and old not in pattern_rules.curvatures
        assert pattern_rules.sparsity_rule_for(new) is None


def test_the_batched_matrix_rule_keeps_batches_apart():
    with isolated_registries():
        solve = extend.defop("sparsity_test_solve", np.linalg.solve,
                             lambda a, b: (np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
                                           + b.shape[-2:], b.dtype))
        pattern_rules.defsparsity(solve.prim, curvature="nonlinear")(
            pattern_rules.batched_matrix_rule(2, 2))
        try:
            f = lambda x: solve(pj.reshape(x[:18], (2, 3, 3)), pj.reshape(x[18:], (1, 3, 2)))
            p = jacobian_sparsity(f, np.zeros(24)).toarray()
        finally:
            del pattern_rules.sparsity_rules[solve.prim], pattern_rules.curvatures[solve.prim]
    a, b = np.arange(18).reshape(2, 3, 3), np.arange(18, 24)     # b's batch is broadcast
    expected = _from_lists([set(a[k].ravel()) | set(b) for k in range(2) for _ in range(6)], 24)
    np.testing.assert_array_equal(p, expected)


@pytest.mark.parametrize("f", [
    lambda a: pj.sum(np.cross(a, a[::-1] ** 2)),                       # einsum(eps, a, b)
    lambda a: pj.sum(pj.einsum("ij,j,k->ik", np.ones((2, 3)), a, a)),
])
def test_an_einsum_of_a_constant_and_two_live_operands_has_a_hessian_pattern(f):
    """An einsum of three operands, one of them constant, took the exact two-operand
    pairs' path and crashed on the constant's missing pattern (`np.cross` of two tensors
    is such an einsum, with the Levi-Civita symbol): it has the pairs across the two."""
    h = hessian_sparsity(f, np.zeros(3)).toarray()
    rng = np.random.default_rng(2)
    seen = np.zeros_like(h)
    for _ in range(3):
        seen |= pj.hessian(f, pj.constant(rng.normal(size=3))).numpy() != 0
    assert seen.any() and not (seen & ~h).any()
