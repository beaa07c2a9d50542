"""pforjac.sparse: colourings, sparse Jacobians and Hessians against dense ones, scipy recipes."""
import importlib.util
import time

import numpy as np
import pytest

import pforjac as pj

sp = pytest.importorskip("scipy.sparse")
import pforjac.sparse as pjs  # noqa: E402
from pforjac.sparse import coloring  # noqa: E402



# -- workloads with patterns known by construction ---------------------------------------------
def banded(x):                      # pentadiagonal: x[i-2] .. x[i+2]
    xp = pj.pad(x, [(2, 2)])
    return xp[:-4] * xp[2:-2] + pj.sin(xp[3:-1]) - xp[4:] ** 2


def banded_pattern(n):
    return sum(sp.eye_array(n, k=k) for k in range(-2, 3))


def block_diagonal(x):              # 5 blocks of 4: y_b = tanh(W x_b) * x_b
    w = np.arange(16.0).reshape(4, 4) / 10 - 0.7
    xb = pj.reshape(x, (5, 4))
    return pj.reshape(pj.tanh(pj.matmul(xb, w)) * xb, (20,))


def block_pattern():
    return sp.block_diag([np.ones((4, 4))] * 5)


def stencil_2d(u):                  # 5-point periodic Laplacian of u**2 on a 6x7 grid
    v = u * u
    return (pj.roll(v, 1, 0) + pj.roll(v, -1, 0) + pj.roll(v, 1, 1) + pj.roll(v, -1, 1)
            - 4 * v + u)


def stencil_pattern(a, b):
    idx = np.arange(a * b).reshape(a, b)
    rows, cols = [], []
    for da, db in [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]:
        rows.append(idx.ravel())
        cols.append(np.roll(idx, (da, db), (0, 1)).ravel())
    return sp.csr_array((np.ones(5 * a * b), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(a * b, a * b))


def dense_row(x):                   # row 0 touches every input: reverse needs 2 colours
    return pj.concat([pj.reshape((x * x).sum(), (1,)), x[1:] ** 3], 0)


def dense_row_pattern(n):
    p = sp.lil_array((n, n))
    p[0, :] = 1
    p.setdiag(1)
    return p


def dense_column(x):                # every output reads x[0]: forward needs 2 colours
    return x * x[0] + pj.sin(x)


def dense_column_pattern(n):
    p = sp.lil_array((n, n))
    p[:, 0] = 1
    p.setdiag(1)
    return p


def heat(u):                        # 1-D heat equation, conductivity 1 + u**2, zero boundaries
    up = pj.pad(u, [(1, 1)])
    k = 1 + up * up
    flux = 0.5 * (k[1:] + k[:-1]) * (up[1:] - up[:-1])
    return flux[1:] - flux[:-1]


def tridiagonal(n):
    return sum(sp.eye_array(n, k=k) for k in (-1, 0, 1))


JACOBIANS = {
    "banded": (banded, lambda: banded_pattern(30), (30,)),
    "block_diagonal": (block_diagonal, block_pattern, (20,)),
    "stencil_2d": (stencil_2d, lambda: stencil_pattern(6, 7), (6, 7)),
    "dense_row": (dense_row, lambda: dense_row_pattern(25), (25,)),
    "dense_column": (dense_column, lambda: dense_column_pattern(25), (25,)),
}


def dense_jacobian(f, x):
    J = pj.jacobian(f, pj.constant(x)).numpy()
    return J.reshape(-1, x.size)


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse"])
@pytest.mark.parametrize("name", sorted(JACOBIANS))
def test_jacobian_equals_dense(name, mode):
    f, pattern, shape = JACOBIANS[name]
    x = np.random.default_rng(0).normal(size=shape)
    J = pjs.jacobian(f, x, mode=mode, sparsity=pattern())
    assert isinstance(J, sp.csr_array) and J.dtype == np.float64
    np.testing.assert_allclose(J.toarray(), dense_jacobian(f, x), rtol=1e-10, atol=1e-10)
    # exactly the pattern's structure, in order
    expected = coloring.as_pattern(pattern())
    np.testing.assert_array_equal(J.indptr, expected.indptr)
    np.testing.assert_array_equal(J.indices, expected.indices)


def test_structural_zeros_are_kept():
    x = np.array([0.0, 1.0, 0.0, 2.0])      # d(x**2)/dx is 0 at the zeros of x
    J = pjs.jacobian(lambda v: v * v, x, sparsity=np.eye(4))
    assert J.nnz == 4 and J.data.tolist() == [0.0, 2.0, 0.0, 4.0]


@pytest.mark.parametrize("name, mode, ncolors", [
    ("dense_row", "reverse", 2), ("dense_column", "forward", 2),
    ("banded", "forward", 5), ("stencil_2d", "forward", None)])
def test_auto_picks_the_cheaper_direction(name, mode, ncolors):
    f, pattern, shape = JACOBIANS[name]
    p = pjs.prepare_jacobian(f, np.ones(shape), sparsity=pattern())
    assert p.mode == mode
    forward = coloring.column_coloring(pattern()).max() + 1
    reverse = coloring.row_coloring(pattern()).max() + 1
    assert p.ncolors == min(forward, reverse)
    if ncolors is not None:
        assert p.ncolors == ncolors


def natural_greedy(dense: np.ndarray) -> np.ndarray:
    """The reference: first-fit distance-2 column colouring in natural order, on a dense
    bool matrix, written independently of pforjac.sparse.coloring."""
    n = dense.shape[1]
    colors = np.full(n, -1)
    shares = (dense.T.astype(int) @ dense.astype(int)) > 0
    for j in range(n):
        used = set(colors[shares[j] & (np.arange(n) != j)])
        colors[j] = next(c for c in range(n) if c not in used)
    return colors


@pytest.mark.parametrize("seed", range(12))
def test_colourings_are_proper_and_no_worse_than_natural_greedy(seed):
    rng = np.random.default_rng(seed)
    m, n = rng.integers(5, 60, size=2)
    dense = rng.random((m, n)) < rng.uniform(0.02, 0.3)
    cols = coloring.column_coloring(dense)
    rows = coloring.row_coloring(dense)
    for c, d in ((cols, dense), (rows, dense.T)):
        assert coloring.check_column_coloring(d, c)
        # independent check: within each row, the colours of its columns are distinct
        for r in d:
            assert len(set(c[r])) == r.sum()
        assert c.max() + 1 <= natural_greedy(d).max() + 1


def test_columns_sharing_256_rows_conflict():
    dense = np.zeros((256, 3), bool)       # (an int8 count of shared rows wraps to 0 here)
    dense[:, :2] = True
    colors = coloring.column_coloring(dense)
    assert colors[0] != colors[1] and coloring.check_column_coloring(dense, colors)


@pytest.mark.parametrize("seed", range(12))
def test_recolouring_by_classes_never_adds_colours(seed):
    rng = np.random.default_rng(200 + seed)
    dense = rng.random((70, 60)) < 0.08
    graph = coloring._column_conflicts(coloring.as_pattern(dense))
    first = coloring.greedy_coloring(graph, rng.permutation(60).tolist())
    again = coloring.recolor_by_classes(graph, first)
    assert coloring.check_column_coloring(dense, again) and again.max() <= first.max()


@pytest.mark.parametrize("seed", range(12))
def test_star_colourings_allow_direct_recovery(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(5, 60))
    a = rng.random((n, n)) < rng.uniform(0.02, 0.2)
    sym = a | a.T | np.eye(n, dtype=bool)
    colors = coloring.star_coloring(sym)
    assert coloring.check_star_coloring(sym, colors)
    # no worse than the distance-2 colouring, which is itself valid for a symmetric matrix
    assert colors.max() <= coloring.column_coloring(sym).max()
    # adjacent vertices differ
    i, j = np.nonzero(sym & ~np.eye(n, dtype=bool))
    assert np.all(colors[i] != colors[j])
    hubs = sym.copy()           # two dense rows and columns: hub_coloring's case
    hubs[:2] = hubs[:, :2] = True
    hub_colors = coloring.hub_coloring(coloring.as_pattern(hubs))
    if hub_colors is not None:
        assert coloring.check_star_coloring(hubs, hub_colors)
    assert coloring.check_star_coloring(hubs, coloring.star_coloring(hubs))


def test_reuse_at_new_points_and_no_shared_memory():
    f, pattern, shape = JACOBIANS["stencil_2d"]
    rng = np.random.default_rng(1)
    p = pjs.prepare_jacobian(f, np.zeros(shape), sparsity=pattern())
    results = []
    for _ in range(3):
        x = rng.normal(size=shape)
        J = p(x)
        np.testing.assert_allclose(J.toarray(), dense_jacobian(f, x), rtol=1e-10, atol=1e-10)
        results.append(J)
    a, b = results[0], results[1]
    for u, v in [(a.data, b.data), (a.indices, b.indices), (a.indptr, b.indptr)]:
        assert not np.shares_memory(u, v)
    a.data[:] = 0          # writing one result changes no other
    assert np.abs(b.data).sum() > 0


def test_wrong_size_input_names_both_shapes():
    p = pjs.prepare_jacobian(heat, np.ones(10), sparsity=tridiagonal(10))
    with pytest.raises(ValueError, match=r"shape \(10,\).*shape \(11,\)"):
        p(np.ones(11))
    with pytest.raises(ValueError, match=r"shape \(2, 5\)"):
        p(np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"shape \(9, 10\), but the function needs .*\(10, 10\)"):
        pjs.jacobian(heat, np.ones(10), sparsity=np.ones((9, 10)))


def test_float32_stays_float32_and_formats():
    x = np.linspace(0, 1, 12, dtype=np.float32)
    for fmt, cls in [("csr", sp.csr_array), ("csc", sp.csc_array), ("coo", sp.coo_array)]:
        J = pjs.jacobian(heat, x, sparsity=tridiagonal(12), format=fmt)
        assert isinstance(J, cls) and J.dtype == np.float32
        np.testing.assert_allclose(J.toarray(), dense_jacobian(heat, x.astype(np.float64)),
                                   rtol=1e-3, atol=1e-3)


def test_repr_like_asdex():
    p = pjs.prepare_jacobian(lambda x: x[1:] - x[:-1], np.ones(50),
                             sparsity=np.eye(49, 50) + np.eye(49, 50, k=1))
    assert repr(p) == "ColoredPattern(49x50, nnz=98, sparsity=96.0%, forward, 2 colours)"
    assert p.colors.shape == (50,) and p.ncolors == 2 and p.pattern.shape == (49, 50)


def test_spy_writes_a_png_or_says_what_to_install(tmp_path):
    p = pjs.prepare_jacobian(heat, np.ones(30), sparsity=tridiagonal(30))
    if importlib.util.find_spec("matplotlib") is None:
        with pytest.raises(ImportError, match=r"pforjac\[plot\]"):
            p.spy(tmp_path / "heat.png")
        return
    p.spy(tmp_path / "heat.png")
    assert (tmp_path / "heat.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_heat_200k_sparse_in_well_under_a_second():
    n = 200_000
    x = np.random.default_rng(2).random(n)
    start = time.perf_counter()
    J = pjs.jacobian(heat, x, sparsity=tridiagonal(n))
    elapsed = time.perf_counter() - start
    print(f"heat equation, n={n}: sparse Jacobian in {elapsed:.3f} s (dense: 320 GB)")
    assert elapsed < 10          # a crash guard; the design gives about 0.1-0.3 s
    assert J.shape == (n, n) and J.nnz == 3 * n - 2
    # spot-check a window of rows against the dense Jacobian of the same window
    window = x[1000:1012]
    inner = dense_jacobian(heat, window)[1:-1, :]
    np.testing.assert_allclose(J[1001:1011, 1000:1012].toarray(), inner, rtol=1e-10, atol=1e-12)


# -- Hessians ----------------------------------------------------------------------------------
def chained_rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def arrow(x):                       # dense row and column 0, diagonal: 2 star colours
    return x[0] * (x * x).sum() + pj.exp(x).sum()


def arrow_pattern(n):
    return dense_row_pattern(n) + dense_column_pattern(n)


HESSIANS = {
    "chained_rosenbrock": (chained_rosenbrock, lambda: tridiagonal(30), 30, 3),
    "arrow": (arrow, lambda: arrow_pattern(30), 30, 2),
    "block": (lambda x: (pj.tanh(pj.reshape(x, (6, 4))).sum(1) ** 2).sum(),
              lambda: sp.block_diag([np.ones((4, 4))] * 6), 24, 4),
}


@pytest.mark.parametrize("name", sorted(HESSIANS))
def test_hessian_symmetric_and_equal_to_dense(name):
    f, pattern, n, ncolors = HESSIANS[name]
    x = np.random.default_rng(3).normal(size=n) / 2
    p = pjs.prepare_hessian(f, x, sparsity=pattern())
    assert p.ncolors == ncolors and p.mode == "star"
    H = p(x)
    dense = pj.hessian(f, pj.constant(x)).numpy()
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-10, atol=1e-10)
    assert abs(H - H.T).max() == 0


def test_large_arrowhead_hessian_gets_two_colours():
    n = 5000                    # the greedy star colouring would visit n**2 neighbours
    x = np.random.default_rng(6).normal(size=n) / 2
    p = pjs.prepare_hessian(arrow, x, sparsity=arrow_pattern(n))
    assert p.ncolors == 2
    H = p(x)                    # the closed form: 2 x0 I + exp(x) I, 2 x in row and column 0
    diagonal = 2 * x[0] + np.exp(x)
    diagonal[0] += 4 * x[0]
    np.testing.assert_allclose(H.diagonal(), diagonal, rtol=1e-12)
    np.testing.assert_allclose(H[[0], 1:].toarray().ravel(), 2 * x[1:], rtol=1e-12)
    np.testing.assert_allclose(H[1:, [0]].toarray().ravel(), 2 * x[1:], rtol=1e-12)
    assert H.nnz == 3 * n - 2


# -- automatic pattern detection (pforjac.sparse.pattern) ---------------------------------------
@pytest.mark.parametrize("name", sorted(JACOBIANS))
def test_detected_pattern_gives_the_same_jacobian(name):
    f, pattern, shape = JACOBIANS[name]
    x = np.random.default_rng(4).normal(size=shape)
    J = pjs.jacobian(f, x)
    np.testing.assert_allclose(J.toarray(), dense_jacobian(f, x), rtol=1e-10, atol=1e-10)


def test_detected_hessian_pattern():
    x = np.random.default_rng(5).normal(size=30) / 2
    H = pjs.hessian(chained_rosenbrock, x)
    np.testing.assert_allclose(H.toarray(), pj.hessian(chained_rosenbrock, pj.constant(x)).numpy(),
                               rtol=1e-10, atol=1e-10)


# -- scipy recipes (docs/sparse.md) -------------------------------------------------------------
def small_brusselator(N=5):
    import sys, pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    import _sparse_workloads as w
    rhs, y0 = w.brusselator(pj, N)
    return rhs, y0, w.brusselator_pattern(N)


@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_solve_ivp_with_a_prepared_jacobian(method):
    integrate = pytest.importorskip("scipy.integrate")
    rhs, y0, pattern = small_brusselator()
    p = pjs.prepare_ode_jacobian(rhs, 0.0, y0, sparsity=pattern)
    t = 1.3                      # the forcing (t >= 1.1) is read from the traced t
    dense = pj.jacobian(lambda y: rhs(np.float64(t), y), pj.constant(y0)).numpy()
    np.testing.assert_allclose(p.scipy_jac()(t, y0).toarray(), dense, rtol=1e-10, atol=1e-9)
    rhs_c = pj.function(rhs)

    def fun(t, y):
        return np.asarray(rhs_c(np.asarray(t), y))
    ours = integrate.solve_ivp(fun, (0, 1.5), y0, method=method, jac=p.scipy_jac(),
                               rtol=1e-6, atol=1e-6)
    fd = integrate.solve_ivp(fun, (0, 1.5), y0, method=method, jac_sparsity=pattern,
                             rtol=1e-6, atol=1e-6)
    assert ours.success and ours.njev >= 1
    np.testing.assert_allclose(ours.y[:, -1], fd.y[:, -1], rtol=1e-3, atol=1e-3)
    assert rhs_c.trace_count == 1          # t passed as an array: no retrace per step


def broyden_tridiagonal(x):
    xp = pj.pad(x, [(1, 1)])
    return (3 - 2 * x) * x - xp[:-2] - 2 * xp[2:] + 1


def test_least_squares_with_a_sparse_jacobian():
    optimize = pytest.importorskip("scipy.optimize")
    n = 200
    p = pjs.prepare_jacobian(broyden_tridiagonal, -np.ones(n), sparsity=tridiagonal(n))
    fun = pj.function(broyden_tridiagonal)
    res = optimize.least_squares(lambda x: np.asarray(fun(x)), -np.ones(n), jac=p, method="trf")
    assert res.success and res.cost < 1e-16 and res.njev >= 1
    assert sp.issparse(res.jac)


def test_minimize_trust_constr_with_a_sparse_hessian():
    optimize = pytest.importorskip("scipy.optimize")
    n = 40
    p = pjs.prepare_hessian(chained_rosenbrock, np.zeros(n), sparsity=tridiagonal(n))

    @pj.function
    def grad(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = chained_rosenbrock(x)
        return g.gradient(y, x)
    f = pj.function(chained_rosenbrock)
    res = optimize.minimize(lambda x: float(f(x)), np.full(n, 0.5), method="trust-constr",
                            jac=lambda x: np.asarray(grad(x)), hess=p.scipy_hess(),
                            options={"gtol": 1e-10, "maxiter": 2000})
    np.testing.assert_allclose(res.x, np.ones(n), atol=1e-6)
    assert res.nhev >= 1
