"""An adversarial sweep of numpy code on Tensors: every call in CALLS, on Tensors of every
dtype in DTYPES and shape in SHAPES (0-d, empty, size-1, broadcastable), either raises
(TypeError, ValueError, IndexError: pforjac says what it can't do) or gives numpy's own
result on the arrays: shape, dtype and value (float16 within an ulp: pforjac accumulates
in float32 where numpy stays in float16). Then the float64 Jacobians of the
differentiable calls by every path (pfor, while-loop, chunked, loop cache, forward mode,
pforjac.function) against central differences.

A call that neither raises nor matches numpy is a silent wrong result; the few divergences
kept on purpose are in KNOWN, each with its reason (docs/reliability.md).
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import pforjac as pj

DTYPES = (np.float64, np.float32, np.float16, np.int64, np.bool_)
SHAPES = ((), (1,), (3,), (2, 3), (0,), (3, 0), (1, 3))
ONES = np.ones(3)

CALLS = {
    "sin": np.sin, "abs": np.abs, "sqrt": np.sqrt, "sign": np.sign, "rint": np.rint,
    "reciprocal": np.reciprocal, "sum": np.sum, "mean": np.mean, "prod": np.prod,
    "max": np.max, "var": np.var, "std_ddof": lambda a: np.std(a, ddof=1),
    "var_ddof3": lambda a: np.var(a, ddof=3), "cumsum": np.cumsum, "argmax": np.argmax,
    "round": np.round, "around": np.around, "sum_last": lambda a: np.sum(a, axis=-1),
    "mean_keep": lambda a: np.mean(a, axis=0, keepdims=True), "sum_int8": lambda a: np.sum(a, dtype=np.int8),
    "cumsum_f32": lambda a: np.cumsum(a, dtype=np.float32), "trace": np.trace,
    "trace_off": lambda a: np.trace(a, 1), "tril": np.tril, "triu_m1": lambda a: np.triu(a, -1),
    "diag": np.diag, "diag1": lambda a: np.diag(a, 1), "diagonal": np.diagonal,
    "atleast_3d": np.atleast_3d, "fliplr": np.fliplr, "flipud": np.flipud, "rot90": np.rot90,
    "ptp": np.ptp, "count_nonzero": np.count_nonzero, "average": np.average,
    "cov": lambda a: np.cov(a.astype(np.float64)), "repeat": lambda a: np.repeat(a, 2, axis=-1),
    "delete": lambda a: np.delete(a, 0), "resize": lambda a: np.resize(a, (2, 4)),
    "clip": lambda a: np.clip(a, -1, 1), "clip_f": lambda a: np.clip(a, -1.5, 0.5),
    "add_int": lambda a: a + 1, "mul_float": lambda a: a * 2.5, "div": lambda a: a / 2,
    "rdiv": lambda a: 2 / a, "rsub": lambda a: 1 - a, "add_f32_array": lambda a: a + np.ones(1, np.float32),
    "add_int_array": lambda a: a + np.arange(1), "maximum": lambda a: np.maximum(a, 0.5),
    "where": lambda a: np.where(a > 0, a, 0), "where_int": lambda a: np.where(a > 0, 1, a),
    "outer": lambda a: np.outer(a, a), "kron": lambda a: np.kron(a, a), "inner": lambda a: np.inner(a, a),
    "vdot": lambda a: np.vdot(a, a), "dot": lambda a: np.dot(a, a.T), "tensordot": lambda a: np.tensordot(a, a, a.ndim),
    "cross": lambda a: np.cross(a, a[::-1]), "select": lambda a: np.select([a > 0], [a], 7),
    "roll": lambda a: np.roll(a, 1), "tile": lambda a: np.tile(a, 2), "take": lambda a: np.take(a, [0, -1]),
    "pad": lambda a: np.pad(a, 1), "pad_value": lambda a: np.pad(a, 1, constant_values=2.5),
    "concatenate": lambda a: np.concatenate([a, a], axis=None), "stack": lambda a: np.stack([a, a], -1),
    "hstack": lambda a: np.hstack([a, a]), "vstack": lambda a: np.vstack([a, a]),
    "column_stack": lambda a: np.column_stack([a, a]), "meshgrid": lambda a: np.meshgrid(a, a),
    "broadcast_arrays": lambda a: np.broadcast_arrays(a, np.ones((2, 1, 1))),
    "array_split": lambda a: np.array_split(a, 2), "expand_dims": lambda a: np.expand_dims(a, -1),
    "reshape": lambda a: np.reshape(a, (-1, 1)), "einsum": lambda a: np.einsum("...,...->", a, a),
    "and": lambda a: a & a, "or": lambda a: a | a, "invert": lambda a: ~a,
    "zeros_like": lambda a: np.zeros_like(a, dtype=np.float32), "logaddexp": lambda a: np.logaddexp(a, a),
    "append_float": lambda a: np.append(a, 1.5), "cov_as_given": np.cov, "square_int": lambda a: a ** 2,
    "where_python": lambda a: np.where(a > 0, 1.0, 2), "conjugate": np.conjugate,
}

# (call, dtype name or None for all) -> why pforjac's result differs from numpy's on purpose
_WEAK = "Python numbers are weak (NEP 50): they take the tensor's dtype"
KNOWN = {
    ("append_float", "float32"): _WEAK + "; numpy's asarray(1.5) is float64",
    ("append_float", "float16"): _WEAK, ("append_float", "int64"): _WEAK,
    ("append_float", "bool"): _WEAK,
    ("where_python", None): "branches all Python numbers take pforjac's defaults (float32), "
                            "as constant() does; numpy's are float64",
    ("square_int", "bool"): "numpy squares bools to int8, pforjac's power to int64",
    ("conjugate", "bool"): "numpy's conjugate of bools is int8; pforjac's returns them",
}


def _numpy(call, arrays):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*arrays)


def _values(result):
    if isinstance(result, (list, tuple)):
        return [_values(r) for r in result]
    return result.numpy() if isinstance(result, pj.Tensor) else np.asarray(result)


def _first_difference(want, got) -> str | None:
    if isinstance(want, (list, tuple)):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{len(want)} results, got {got!r:.60}"
        return next(filter(None, map(_first_difference, want, got)), None)
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"{want.dtype}{list(want.shape)} wanted, got {got.dtype}{list(got.shape)}"
    rtol = 2 * 2.0 ** -10 if want.dtype == np.float16 else 1e-12 if want.dtype.kind == "f" else 0
    if not np.allclose(want, got, rtol=rtol, atol=0, equal_nan=True):
        return f"values {want.ravel()[:4]} wanted, got {got.ravel()[:4]}"
    return None


def _known(name, dtype) -> bool:
    return (name, None) in KNOWN or (name, np.dtype(dtype).name) in KNOWN


@pytest.mark.parametrize("name", sorted(CALLS))
def test_numpy_calls_on_tensors_raise_or_give_numpys_result(name):
    call, problems = CALLS[name], []
    for dtype, shape in itertools.product(DTYPES, SHAPES):
        a = (np.random.default_rng(0).normal(size=shape) * 3).astype(dtype)
        try:
            want = _numpy(call, [a])
        except Exception:       # noqa: BLE001  (numpy refuses: pforjac may do anything but lie)
            continue
        try:
            got = _values(_numpy(call, [pj.constant(a)]))
        except (TypeError, ValueError, IndexError):
            continue
        problem = _first_difference(want, got)
        if problem and not _known(name, dtype):
            problems.append(f"{np.dtype(dtype).name}{list(shape)}: {problem}")
    assert not problems, f"np.{name} on Tensors, silently not numpy's: " + "; ".join(problems[:4])


X = np.random.default_rng(1).normal(size=(2, 3))
W = np.random.default_rng(2).normal(size=(3, 4))
DIFFERENTIABLE = {
    "kron": lambda a: np.kron(a, W[:2, :2]), "cross": lambda a: np.cross(a, a[::-1] ** 2),
    "trace": lambda a: np.trace(a, -1) * a, "tril": lambda a: np.tril(a @ W, 1),
    "diag": lambda a: np.diag(np.diagonal(a @ a.T)), "outer": lambda a: np.outer(a, a[0]),
    "tensordot": lambda a: np.tensordot(a, W, axes=([1], [0])), "vdot": lambda a: np.vdot(a, a),
    "meshgrid": lambda a: np.stack(np.meshgrid(a[0], a[1] ** 2)),
    "repeat": lambda a: np.repeat(a, [2, 0, 1], axis=1), "rot90": lambda a: np.rot90(a, -1),
    "delete": lambda a: np.delete(a, [0, -1], axis=1), "resize": lambda a: np.resize(a, (4, 2)),
    "block": lambda a: np.block([[a, a[:, :1]], [a[:1], a[:1, :1] ** 2]]),
    "select": lambda a: np.select([a > 0, a < -1], [a ** 2, a * 3], 0.1),
    "average": lambda a: np.average(a, axis=1, weights=[0.1, 0.2, 0.7]),
    "average_self": lambda a: np.average(a, weights=a ** 2), "cov": lambda a: np.cov(a, aweights=[0.5, 2.0, 1.0]),
    "corrcoef": lambda a: np.corrcoef(a, a ** 3), "ptp": lambda a: np.ptp(a, axis=0),
    "std": lambda a: np.std(a, axis=1, ddof=1), "einsum": lambda a: np.einsum("ij,ij,j->i", a, a, a[0]),
    "pad": lambda a: np.pad(a, ((1, 0), (0, 2)), constant_values=0.3), "vecdot": lambda a: np.vecdot(a, a ** 2),
}


def _jacobian_paths(f):
    def tape(**options):
        def jacobian(x):
            with pj.GradientTape(persistent=True) as g:
                g.watch(x)
                y = f(x)
            return g.jacobian(y, x, unconnected_gradients="zero", **options)
        return jacobian
    return {"pfor": tape(), "while_loop": tape(experimental_use_pfor=False),
            "parallel_iterations=2": tape(parallel_iterations=2), "loopcache#2": tape(),
            "loopcache#3": tape(), "function": pj.function(tape()),
            "forward_mode": lambda x: pj.jacobian(f, x, strategy="forward-mode", vectorize=True)}


def _central_differences(f, x, eps=1e-6):
    columns = []
    for k in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[k] += eps
        down[k] -= eps
        columns.append((np.asarray(f(up)) - np.asarray(f(down))) / (2 * eps))
    return np.moveaxis(np.array(columns), 0, -1).reshape(np.shape(f(x)) + x.shape)


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_numpy_written_jacobians_by_every_path_match_central_differences(name):
    f = DIFFERENTIABLE[name]
    want = _central_differences(f, X)
    for path, jacobian in _jacobian_paths(f).items():
        got = jacobian(pj.constant(X)).numpy()
        assert got.shape == want.shape, (name, path)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=f"{name}: {path}")
