"""tape.jacobian and batch_jacobian: every way of computing them agrees, on edge cases too;
refused calls; results that do not change with parallel_iterations; C-ordered results.

The edge-case table has one row per case. Each row runs through every path:

* `jacobian` and `batch_jacobian` with pfor (`experimental_use_pfor=True`, on a
  non-persistent tape, and the pfor pass must not fall back to the while-loop),
* the same with the while-loop (`experimental_use_pfor=False`, persistent tape),
* one `tape.gradient` call per target entry with one-hot `output_gradients`
  (the definition of a Jacobian row),
* `pforjac.jacobian` (the functional API),

and the results must agree in `None`-ness, shape, dtype and values (NaN and
Inf at the same places). These are the disagreements TensorFlow users hit:
an empty batch (tensorflow#37795), float32 zeros for float64 sources in an
unconnected batch_jacobian (tensorflow#43043), results that change with
`parallel_iterations` (tensorflow#47785).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import pforjac as pj
from helpers import c_ordered, layout_case, no_fallback, pfor_and_loop_jacobians
from random_programs import C

pfor_mod = importlib.import_module("pforjac.pfor")  # `pforjac.pfor` is also the function

BIG = 10 ** 9  # "very large" parallel_iterations


def w(shape, dtype, seed=0):
    """A fixed weight of the given shape and dtype."""
    rng = np.random.default_rng(seed)
    return pj.constant(rng.standard_normal(shape).astype(dtype))


def mlp(x):
    """x [b, 3] -> [b, 2]: matmul, sigmoid, matmul, tanh, in x's dtype."""
    h = pj.sigmoid(pj.matmul(x, w((3, 4), x.dtype)))
    return pj.tanh(pj.matmul(h, w((4, 2), x.dtype, 1)))


def elementwise(x):
    return pj.sin(x) * x + pj.exp(x * 0.5)


def mixed(x):
    """Elementwise, reductions, where, max: ops whose NaN handling differs most."""
    s = pj.sum(x * x, axis=-1, keepdims=True)
    m = pj.max(x, axis=-1, keepdims=True)
    return pj.where(x > 0, x * s, pj.exp(x) * m)


@dataclass
class Row:
    id: str
    x: Callable[[], Any]                 # the source's value (numpy, possibly a view)
    f: Callable                          # target = f(source)
    unconnected: str = "none"
    parallel_iterations: int | None = None
    batch: bool = True                   # also run batch_jacobian (needs rank >= 2)
    expect_none: bool = False            # the Jacobian is None (unconnected, integer source)
    expect_dtype: Any = None             # default: the source's dtype
    check: Callable | None = field(default=None, repr=False)  # extra check of the jacobian


def _rand(*shape, dtype=np.float64, seed=3):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _nan_inf(dtype):
    x = _rand(4, 3, dtype=dtype)
    x[1, 2], x[2, 0], x[3, 1] = np.nan, np.inf, -np.inf
    return x


ROWS = [
    # -- empty batch and zero-size axes
    Row("empty_batch", lambda: np.zeros((0, 3)), mlp),
    Row("empty_batch_f32", lambda: np.zeros((0, 3), np.float32), mlp, parallel_iterations=2),
    Row("empty_batch_unconnected_zero", lambda: np.zeros((0, 3)),
        lambda x: pj.constant(np.ones((0, 2))), unconnected="zero"),
    Row("zero_size_source_axis", lambda: np.zeros((3, 0)),
        lambda x: pj.matmul(x, w((0, 2), x.dtype)) + 1.0),
    Row("zero_size_target_axis", lambda: _rand(3, 4),
        lambda x: pj.matmul(x, w((4, 0), x.dtype))),
    Row("zero_size_everywhere", lambda: np.zeros((0, 0, 2)), lambda x: x * 2.0),
    # -- sizes 1 and scalars
    Row("target_size_1", lambda: _rand(1, 3), lambda x: pj.sum(mlp(x), axis=-1, keepdims=True)),
    Row("target_size_1_of_batch", lambda: _rand(4, 3), lambda x: pj.sum(mlp(x), axis=-1, keepdims=True)),
    Row("scalar_target", lambda: _rand(2, 3), lambda x: pj.sum(elementwise(x)), batch=False),
    Row("scalar_source", lambda: np.float64(0.7), lambda x: x * w((3,), x.dtype), batch=False),
    Row("scalar_source_and_target", lambda: np.float32(0.7), lambda x: pj.exp(x) * x, batch=False),
    # -- dtypes, zeros included (tensorflow#43043)
    Row("float32", lambda: _rand(4, 3, dtype=np.float32), mlp),
    Row("float64", lambda: _rand(4, 3), mlp),
    Row("float32_source_float64_math", lambda: _rand(4, 3, dtype=np.float32),
        lambda x: pj.matmul(x, w((3, 2), np.float64))),
    Row("unconnected_none_f64", lambda: _rand(4, 3), lambda x: w((4, 2), np.float64),
        expect_none=True),
    Row("unconnected_zero_f64", lambda: _rand(4, 3), lambda x: w((4, 2), np.float32),
        unconnected="zero"),
    Row("unconnected_zero_f32", lambda: _rand(4, 3, dtype=np.float32),
        lambda x: w((4, 2), np.float64), unconnected="zero"),
    Row("unconnected_through_int_cast", lambda: _rand(4, 3),
        lambda x: pj.cast(pj.cast(x, np.int32), np.float64), expect_none=True),
    Row("unconnected_through_int_cast_zero", lambda: _rand(4, 3),
        lambda x: pj.cast(pj.cast(x, np.int32), np.float64), unconnected="zero"),
    Row("partly_connected", lambda: _rand(4, 3), lambda x: x[:, :2] * 3.0),
    # -- integer sources: None, or float zeros under "zero"
    Row("int_source_none", lambda: np.arange(12, dtype=np.int32).reshape(4, 3),
        lambda x: pj.cast(x, np.float32) * 2.0, expect_none=True),
    Row("int_source_zero", lambda: np.arange(12, dtype=np.int32).reshape(4, 3),
        lambda x: pj.cast(x, np.float64) * 2.0, unconnected="zero", expect_dtype=np.float32),
    Row("int_source_int_target_zero", lambda: np.arange(12, dtype=np.int64).reshape(4, 3),
        lambda x: x * 2, unconnected="zero", expect_dtype=np.float32),
    # -- NaN and Inf propagate identically
    Row("nan_inf_elementwise", lambda: _nan_inf(np.float64), elementwise),
    Row("nan_inf_mixed_f32", lambda: _nan_inf(np.float32), mixed),
    Row("nan_inf_mlp", lambda: _nan_inf(np.float64), mlp,
        check=lambda j, x: np.isnan(j[:, :, 1]).all() and not np.isnan(np.delete(j, 1, 2)).any()),
    # -- non-contiguous and broadcast views
    Row("transposed", lambda: _rand(3, 4).T, mlp),
    Row("strided_negative", lambda: _rand(8, 6)[::-2, 1::2], mlp),
    Row("fortran_order", lambda: np.asfortranarray(_rand(4, 3, dtype=np.float32)), mixed),
    Row("broadcast_view", lambda: np.broadcast_to(_rand(1, 3), (4, 3)), mlp),
    Row("broadcast_view_scalar", lambda: np.broadcast_to(np.float64(0.5), (2, 3)), elementwise),
    # -- parallel_iterations: very large, 1, not dividing the number of rows
    Row("parallel_iterations_huge", lambda: _rand(4, 5), elementwise, parallel_iterations=BIG),
    Row("parallel_iterations_1", lambda: _rand(3, 3), mixed, parallel_iterations=1),
    Row("parallel_iterations_not_dividing", lambda: _rand(4, 5), mixed, parallel_iterations=3),
    Row("parallel_iterations_not_dividing_mlp", lambda: _rand(5, 3), mlp, parallel_iterations=3),
    Row("parallel_iterations_more_than_rows", lambda: _rand(2, 3), mlp, parallel_iterations=7),
]


# -- the paths ------------------------------------------------------------------------------
def _forward(row: Row, persistent: bool):
    x = pj.constant(row.x())
    with pj.GradientTape(persistent=persistent) as tape:
        tape.watch(x)
        y = row.f(x)
    return tape, x, y


def _no_while_loop(*args, **kwargs):
    raise AssertionError("the pfor path fell back to the while-loop")


def _tape_path(method: str, use_pfor: bool):
    def run(row: Row, monkeypatch):
        tape, x, y = _forward(row, persistent=not use_pfor)
        if use_pfor:
            monkeypatch.setattr(pfor_mod, "while_loop", _no_while_loop)
        try:
            return getattr(tape, method)(y, x, unconnected_gradients=row.unconnected,
                                         parallel_iterations=row.parallel_iterations,
                                         experimental_use_pfor=use_pfor)
        finally:
            monkeypatch.undo()
    return run


def _rows_of_gradients(tape, y, x, seeds, unconnected, shape):
    """Stacks `tape.gradient(y, x, output_gradients=seed)` over the seeds."""
    if not seeds:  # no rows: ask once with a zero seed whether the result is None, and its dtype
        g = tape.gradient(y, x, output_gradients=np.zeros(y.shape, y.dtype),
                          unconnected_gradients=unconnected)
        return None if g is None else np.zeros(shape, g.dtype)
    grads = [tape.gradient(y, x, output_gradients=s, unconnected_gradients=unconnected)
             for s in seeds]
    if any(g is None for g in grads):
        assert all(g is None for g in grads), "None for some rows only"
        return None
    return grads


def jacobian_by_rows(row: Row, monkeypatch):
    tape, x, y = _forward(row, persistent=True)
    n, shape = y.size, tuple(y.shape) + tuple(x.shape)
    seeds = [np.eye(1, n, k, dtype=y.dtype).reshape(y.shape) for k in range(n)]
    grads = _rows_of_gradients(tape, y, x, seeds, row.unconnected, shape)
    if grads is None or isinstance(grads, np.ndarray):
        return grads
    return np.stack([g.numpy() for g in grads]).reshape(shape)


def batch_jacobian_by_rows(row: Row, monkeypatch):
    tape, x, y = _forward(row, persistent=True)
    b, row_shape = y.shape[0], tuple(y.shape[1:])
    m, shape = int(np.prod(row_shape)), (y.shape[0],) + row_shape + tuple(x.shape[1:])
    seeds = [np.broadcast_to(np.eye(1, m, k, dtype=y.dtype).reshape((1,) + row_shape), y.shape)
             for k in range(m)]
    grads = _rows_of_gradients(tape, y, x, seeds, row.unconnected, shape)
    if grads is None or isinstance(grads, np.ndarray):
        return grads
    return np.stack([g.numpy() for g in grads], axis=1).reshape(shape)


def _functional_path(**options):
    """PyTorch's semantics: float inputs only; unconnected is zeros, or an error with strict=True."""
    def run(row: Row, monkeypatch):
        x = pj.constant(row.x())
        if not np.issubdtype(x.dtype, np.floating):
            return NOT_APPLICABLE
        if options.get("strategy") == "forward-mode" and not np.isfinite(x.numpy()).all():
            # a NaN input spoils J's columns in reverse mode (0 * NaN in each vjp) but its
            # rows in forward mode (each jvp): both right, not comparable entry by entry
            return NOT_APPLICABLE
        if row.unconnected == "none":
            try:
                pj.jacobian(row.f, x, strict=True)
            except RuntimeError:
                return None
        if options.get("vectorize"):
            options["parallel_iterations"] = row.parallel_iterations
        return pj.jacobian(row.f, x, **options)
    return run


NOT_APPLICABLE = object()


JACOBIAN_PATHS = {
    "pfor": _tape_path("jacobian", True),
    "while_loop": _tape_path("jacobian", False),
    "gradient_rows": jacobian_by_rows,
}
if callable(getattr(pj, "jacobian", None)):
    JACOBIAN_PATHS["functional_loop"] = _functional_path(vectorize=False)
    JACOBIAN_PATHS["functional_pfor"] = _functional_path(vectorize=True)
    JACOBIAN_PATHS["functional_forward_mode"] = _functional_path(vectorize=True,
                                                                 strategy="forward-mode")

BATCH_PATHS = {
    "pfor": _tape_path("batch_jacobian", True),
    "while_loop": _tape_path("batch_jacobian", False),
    "gradient_rows": batch_jacobian_by_rows,
}


# -- comparing ------------------------------------------------------------------------------
def _as_array(result):
    if result is None or isinstance(result, np.ndarray):
        return result
    assert isinstance(result, pj.Tensor) and not isinstance(result, pj.SymbolicTensor), \
        f"expected a Tensor, got {type(result).__name__}"
    return result.numpy()


def _expected(row: Row, x_dtype, shape):
    dtype = np.dtype(row.expect_dtype or x_dtype)
    return shape, dtype


def _compare(row: Row, results: dict, shape: tuple, x_dtype):
    results = {k: _as_array(v) for k, v in results.items()}
    nones = {k for k, v in results.items() if v is None}
    if row.expect_none:
        assert nones == set(results), f"expected None from every path, got values from " \
                                      f"{sorted(set(results) - nones)}"
        return None
    assert not nones, f"None from {sorted(nones)}"
    want_shape, want_dtype = _expected(row, x_dtype, shape)
    ref = results["gradient_rows"]
    for path, value in results.items():
        assert value.shape == want_shape, f"{path}: shape {value.shape}, expected {want_shape}"
        assert value.dtype == want_dtype, f"{path}: dtype {value.dtype}, expected {want_dtype}"
        tol = 1e-5 if want_dtype == np.float32 else 1e-12
        np.testing.assert_allclose(value, ref, rtol=tol, atol=tol, equal_nan=True,
                                   err_msg=f"path {path} disagrees with per-row gradients")
        np.testing.assert_array_equal(np.isnan(value), np.isnan(ref), err_msg=f"{path}: NaN")
        np.testing.assert_array_equal(np.isinf(value), np.isinf(ref), err_msg=f"{path}: Inf")
    if row.id.startswith(("unconnected", "int_source")):
        assert not np.any(ref), "an unconnected Jacobian must be all zeros"
    return ref


def _jacobian_shape(row: Row):
    x = np.asarray(row.x())
    _, _, y = _forward(row, persistent=False)
    return tuple(y.shape) + x.shape, x.dtype


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_jacobian_paths_agree(row: Row, monkeypatch):
    with np.errstate(all="ignore"):
        results = {name: path(row, monkeypatch) for name, path in JACOBIAN_PATHS.items()}
        results = {name: r for name, r in results.items() if r is not NOT_APPLICABLE}
        shape, x_dtype = _jacobian_shape(row)
    ref = _compare(row, results, shape, x_dtype)
    if row.check is not None:
        assert row.check(ref, row.x())


@pytest.mark.parametrize("row", [r for r in ROWS if r.batch], ids=[r.id for r in ROWS if r.batch])
def test_batch_jacobian_paths_agree(row: Row, monkeypatch):
    with np.errstate(all="ignore"):
        results = {name: path(row, monkeypatch) for name, path in BATCH_PATHS.items()}
        _, _, y = _forward(row, persistent=False)
    x = np.asarray(row.x())
    shape = (y.shape[0],) + tuple(y.shape[1:]) + x.shape[1:]
    ref = _compare(row, results, shape, x.dtype)
    if ref is not None and row.check is None and ref.size and y.shape[0] > 1:
        # batch_jacobian is the diagonal of the full Jacobian over the batch
        with np.errstate(all="ignore"):
            full = _as_array(JACOBIAN_PATHS["pfor"](row, monkeypatch))
        diag = np.stack([full[i, ..., i, :] if x.ndim == 2 else full[i][..., i, :, :]
                         for i in range(y.shape[0])])
        np.testing.assert_allclose(ref, diag.reshape(ref.shape), rtol=1e-5, equal_nan=True)


def test_parallel_iterations_do_not_change_results():
    """tensorflow#47785: the body is traced once; chunking only splits the work."""
    x = pj.constant(_rand(5, 3))
    results = []
    for k in (None, 1, 2, 3, 4, 5, 6, BIG):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = mixed(x)
        results.append(tape.jacobian(y, x, parallel_iterations=k).numpy())
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], rtol=1e-13, atol=1e-13)


@no_fallback
@pytest.mark.parametrize("f, shape, seed", [
    # structure kept a value transposed; summing its strided axis rounded differently
    (lambda v0: pj.sum(pj.einsum("i,j->ij", -pj.softmax(pj.concat([pj.reshape(v0, (-1,))] * 2, axis=0),
                                                         axis=0), C((2,), 0)), axis=0),
     (4, 1), 0),
    # a one-row weight against n stacked columns: gemv rounds by the column count
    (lambda v0: pj.sum(pj.matmul(pj.reshape(v0, (4, 1)), pj.sum(v0, axis=0)), axis=None) + v0,
     (4, 1, 1), 1)])
def test_parallel_iterations_of_one_is_bit_identical(f, shape, seed):
    # found by the long hypothesis profile: the sums of a chunk of one iteration differed
    # from the whole batch's in the last bit (numpy's summation order follows the layout)
    x = pj.constant(np.random.default_rng(seed).standard_normal(shape))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = f(x)
    whole = g.jacobian(y, x).numpy()
    np.testing.assert_array_equal(g.jacobian(y, x, parallel_iterations=1).numpy(), whole)
    np.testing.assert_array_equal(g.jacobian(y, x, experimental_use_pfor=False).numpy(), whole)


@no_fallback
def test_jacobian_of_dot_product_of_vectors():
    pfor_jac, loop_jac = pfor_and_loop_jacobians(lambda x: pj.matmul(pj.tanh(x), x) * x,
                                                 np.array([0.5, -1.0, 2.0]))
    np.testing.assert_allclose(pfor_jac, loop_jac, rtol=1e-12)


@no_fallback
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_seed_of_a_matrix_target_times_a_matrix_is_scattered_rows(dtype):
    """A jacobian's seed over a matrix target (each row one entry of it) times W^T fills one
    row of each iteration: a scatter of those rows into zeros, not a `where` over the whole
    result (attention's full Jacobian); the closed form is kron(I, W^T)."""
    rng = np.random.default_rng(2)
    x = pj.constant(rng.normal(size=(4, 5)).astype(dtype))
    w = pj.constant(rng.normal(size=(5, 3)).astype(dtype))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x @ w
    jac = tape.jacobian(y, x).numpy()
    want = np.einsum("ac,bd->abcd", np.eye(4), w.numpy().T).astype(dtype)   # dy[a,b]/dx[c,d]
    np.testing.assert_array_equal(jac, want)
    np.testing.assert_array_equal(tape.jacobian(y, x, experimental_use_pfor=False).numpy(), want)
    assert not np.signbit(jac[jac == 0]).any()                              # +0, as the gemm


# -- refused calls -------------------------------------------------------------------------
@pytest.mark.parametrize("what", ["jacobian", "batch_jacobian"])
def test_a_refused_jacobian_call_leaves_a_non_persistent_tape_usable(what):
    x = pj.constant(np.array([[1.0, 2.0]]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.sin(x)
    with pytest.raises(ValueError, match="parallel_iterations must be a positive int"):
        getattr(g, what)(y, x, parallel_iterations=0)
    np.testing.assert_allclose(getattr(g, what)(y, x).numpy().reshape(2, 2), np.diag(np.cos([1.0, 2.0])))


def test_a_jacobian_of_a_list_of_targets_is_refused_not_none():
    x = pj.constant([1.0, 2.0])
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
    with pytest.raises(TypeError, match=r"GradientTape.jacobian: target must be one Tensor, got a list of 2"):
        g.jacobian([y, y], x)
    with pytest.raises(TypeError, match="GradientTape.batch_jacobian: target must be one Tensor"):
        g.batch_jacobian((y,), x)
    with pytest.raises(ValueError, match=r"GradientTape.jacobian: a source .* never watched"):
        g.jacobian(y, pj.constant([1.0]))
    np.testing.assert_array_equal(g.jacobian(y, x).numpy(), np.diag([2.0, 4.0]))


# -- layouts of results --------------------------------------------------------------------
@pytest.mark.parametrize("use_pfor", [True, False])
@pytest.mark.parametrize("parallel_iterations", [None, 2])
def test_tape_jacobians_are_c_ordered_on_every_path(use_pfor, parallel_iterations):
    rng = np.random.default_rng(24)
    x, f = layout_case(rng)
    w = pj.constant(rng.normal(size=(4, 4)))
    for _ in range(3):                         # repeated calls run the loop cache's code
        with pj.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
            yb = pj.tanh(x @ w) * pj.broadcast_to(x[:, :1], (3, 4))
        kw = dict(experimental_use_pfor=use_pfor, parallel_iterations=parallel_iterations)
        full, batch = tape.jacobian(y, x, **kw), tape.batch_jacobian(yb, x, **kw)
        assert c_ordered(full) and c_ordered(batch)
    np.testing.assert_allclose(full.numpy(), tape.jacobian(y, x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.einsum("abad->abd", tape.jacobian(yb, x).numpy()), batch.numpy(),
                               rtol=1e-12)
    grads = []
    for kws in (kw, {}):                  # recorded by an outer tape: still C, and its
        with pj.GradientTape(persistent=True) as outer:          # derivative is the same
            outer.watch(x)
            with pj.GradientTape(persistent=True) as tape:
                tape.watch(x)
                yb = pj.tanh(x @ w) * x
            batch = tape.batch_jacobian(yb, x, **kws)
            total = pj.sum(batch * batch)
        assert c_ordered(batch)
        grads.append(outer.gradient(total, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)
