"""The PyTorch-style functional API: jacobian, hessian, vjp, jvp, hvp.

Every allowed combination of `vectorize` and `strategy` must give the same
numbers, equal to central finite differences (float64), nested as PyTorch nests them.
"""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj
from pforjac.forward import jvp_program

from helpers import c_ordered, layout_case

MODES = [dict(vectorize=False, strategy="reverse-mode"),
         dict(vectorize=True, strategy="reverse-mode"),
         dict(vectorize=True, strategy="forward-mode")]
MODE_IDS = ["loop-reverse", "pfor-reverse", "pfor-forward"]
HESSIAN_MODES = [dict(vectorize=False, outer_jacobian_strategy="reverse-mode"),
                 dict(vectorize=True, outer_jacobian_strategy="reverse-mode"),
                 dict(vectorize=True, outer_jacobian_strategy="forward-mode")]


def numeric_jacobian(fn, arrays, eps=1e-6):
    """J[i][j] of shape out_i.shape + in_j.shape by central differences."""
    def outputs(xs):
        out = fn(*[pj.constant(x) for x in xs])
        return [np.asarray(o.numpy()) for o in (out if isinstance(out, tuple) else (out,))]
    base = outputs(arrays)
    J = [[np.zeros(o.shape + a.shape) for a in arrays] for o in base]
    for j, a in enumerate(arrays):
        for k in np.ndindex(*a.shape):
            plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
            plus[j][k] += eps
            minus[j][k] -= eps
            for i, (p, m) in enumerate(zip(outputs(plus), outputs(minus))):
                J[i][j][(Ellipsis,) + k] = (p - m) / (2 * eps)
    return J


# -- the seed: exp_reducer ---------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_exp_reducer_is_block_diagonal(mode):
    x = np.random.default_rng(0).random((2, 2))
    J = pj.jacobian(lambda x: x.exp().sum(axis=1), x, **mode)
    assert isinstance(J, np.ndarray) and J.shape == (2, 2, 2) and J.dtype == np.float64
    expected = np.zeros((2, 2, 2))
    expected[0, 0], expected[1, 1] = np.exp(x[0]), np.exp(x[1])
    np.testing.assert_allclose(np.asarray(J), expected, rtol=1e-12)
    assert not np.asarray(J)[0, 1].any() and not np.asarray(J)[1, 0].any()


def test_exp_reducer_float32_keeps_the_input_dtype():
    x = pj.constant([[0.1, 0.2], [0.3, 0.4]])
    for mode in MODES:
        assert pj.jacobian(lambda x: x.exp().sum(axis=1), x, **mode).dtype == np.float32


# -- a suite of functions with several inputs and outputs -----------------------------------
W = np.random.default_rng(1).standard_normal((4, 3))


def two_in_two_out(x, y):
    return pj.tanh(pj.constant(W) @ x) * y.sum(), pj.exp(y) * x[1] + pj.sin(y)


def one_in_three_out(x):
    return (x ** 3).sum(), pj.reshape(x, (3, 1)) * x, pj.softplus(x)[::2]


def three_in_one_out(a, b, c):
    return pj.logsumexp(a[:, None] * b + c, axis=0) / pj.sqrt(1.0 + a @ a)


def with_unused_input(x, y):
    return pj.sigmoid(x) * 2.0, pj.maximum(x, 0.1)


SUITE = [
    ("two_in_two_out", two_in_two_out, [(3,), (2, 2)]),
    ("one_in_three_out", one_in_three_out, [(3,)]),
    ("three_in_one_out", three_in_one_out, [(3,), (3, 2), (2,)]),
    ("with_unused_input", with_unused_input, [(3,), (2,)]),
]


@pytest.mark.parametrize("name, fn, shapes", SUITE, ids=[s[0] for s in SUITE])
def test_modes_agree_with_each_other_and_finite_differences(name, fn, shapes):
    rng = np.random.default_rng(sum(map(ord, name)))
    arrays = [rng.uniform(0.2, 1.5, s) for s in shapes]
    expected = numeric_jacobian(fn, arrays)
    results = [pj.jacobian(fn, tuple(arrays), **mode) for mode in MODES]
    if len(expected) == 1:                        # a single output: J[j], no output level
        results = [(J,) for J in results]
    for mode_id, J in zip(MODE_IDS, results):
        assert isinstance(J, tuple) and len(J) == len(expected)
        for i, row in enumerate(J):
            assert isinstance(row, tuple) and len(row) == len(arrays)
            for j, block in enumerate(row):
                assert block.shape == expected[i][j].shape, (mode_id, i, j)
                np.testing.assert_allclose(np.asarray(block), expected[i][j], rtol=1e-6, atol=1e-8,
                                           err_msg=f"{name} {mode_id} J[{i}][{j}]")
                np.testing.assert_allclose(np.asarray(block), np.asarray(results[0][i][j]), rtol=1e-12,
                                           atol=1e-14)


def test_result_nesting_follows_pytorch():
    x, y = np.ones(3), np.ones(2)
    single = pj.jacobian(lambda x: x * 2.0, x)
    assert isinstance(single, np.ndarray) and single.shape == (3, 3)     # numpy in, numpy out
    by_output = pj.jacobian(lambda x: (x * 2.0, x.sum()), x)
    assert [b.shape for b in by_output] == [(3, 3), (3,)]
    by_input = pj.jacobian(lambda x, y: x.sum() * y, (x, y))
    assert [b.shape for b in by_input] == [(2, 3), (2, 2)]
    one_tuple = pj.jacobian(lambda x: (x,), (x,))
    assert isinstance(one_tuple[0], tuple) and one_tuple[0][0].shape == (3, 3)


def test_unconnected_blocks_are_zeros_and_strict_raises():
    x, y = np.ones(3), np.ones(2)
    for mode in MODES:
        J = pj.jacobian(with_unused_input, (x, y), **mode)
        assert J[0][1].shape == (3, 2) and not np.asarray(J[0][1]).any()
    with pytest.raises(RuntimeError, match="independent of input 1"):
        pj.jacobian(with_unused_input, (x, y), strict=True)
    J = pj.jacobian(lambda x: x * x, x, strict=True)
    np.testing.assert_allclose(np.asarray(J), np.diag(2 * x))


def test_closures_over_the_input_are_constants():
    """As in PyTorch, func receives fresh views: a closure over the same array is a constant."""
    x = pj.constant(np.array([1.0, 2.0]))
    for mode in MODES:
        np.testing.assert_allclose(pj.jacobian(lambda z: z * x, x, **mode).numpy(), np.diag([1.0, 2.0]))
        J = pj.jacobian(lambda a, b: a * b, (x, x), **mode)
        np.testing.assert_allclose(J[0].numpy(), np.diag([1.0, 2.0]))


# -- create_graph ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_create_graph_lets_an_outer_tape_differentiate(mode):
    x = pj.constant(np.array([0.5, -1.0, 2.0]))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        J = pj.jacobian(lambda x: x ** 3, x, create_graph=True, **mode)
        s = pj.sum(J)
        J_detached = pj.jacobian(lambda x: x ** 3, x, **mode)
        s_detached = pj.sum(J_detached)
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), 6 * x.numpy())
    assert tape.gradient(s_detached, x) is None


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_jacobian_of_jacobian_is_the_hessian(mode):
    x = np.array([0.3, -0.7, 1.1])
    f = lambda x: pj.sum(pj.sin(x) * x[::-1])  # noqa: E731
    H = pj.jacobian(lambda x: pj.jacobian(f, x, create_graph=True), x, **mode)
    np.testing.assert_allclose(np.asarray(H), np.asarray(pj.hessian(f, x)), rtol=1e-12, atol=1e-14)
    inner_detached = pj.jacobian(lambda x: pj.jacobian(f, x), x, **mode)
    assert not np.asarray(inner_detached).any()


# -- hessian ------------------------------------------------------------------------------------
def _logistic_problem():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((20, 4))
    y = np.sign(rng.standard_normal(20))
    w, b = rng.standard_normal(4) * 0.5, np.array(0.3)
    return X, y, w, b


def logistic_loss(X, y):
    def loss(w, b):
        return pj.mean(pj.softplus(-pj.constant(y) * (pj.constant(X) @ w + b)))
    return loss


@pytest.mark.parametrize("mode", HESSIAN_MODES, ids=MODE_IDS)
def test_hessian_of_logistic_regression_matches_the_analytic_one(mode):
    X, y, w, b = _logistic_problem()
    z = X @ w + b
    s = 1.0 / (1.0 + np.exp(-z))
    d = s * (1 - s) / len(y)
    Xb = np.hstack([X, np.ones((len(y), 1))])
    analytic = Xb.T @ (d[:, None] * Xb)
    H = pj.hessian(logistic_loss(X, y), (w, b), **mode)
    assert [[blk.shape for blk in row] for row in H] == [[(4, 4), (4,)], [(4,), ()]]
    full = np.block([[np.asarray(H[0][0]), np.asarray(H[0][1])[:, None]],
                     [np.asarray(H[1][0])[None, :], np.asarray(H[1][1]).reshape(1, 1)]])
    np.testing.assert_allclose(full, analytic, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(full, full.T, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mode", HESSIAN_MODES, ids=MODE_IDS)
def test_hessian_of_sum_of_cubes(mode):
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    H = pj.hessian(lambda x: pj.sum(x ** 3), x, **mode)
    assert H.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(np.asarray(H).reshape(4, 4), np.diag(6 * x.ravel()), atol=1e-12)


def test_hessian_strict_and_errors():
    x = np.ones(3)
    with pytest.raises(RuntimeError, match="strict"):
        pj.hessian(lambda x: pj.sum(x * 2.0), x, strict=True)   # linear: the gradient is constant
    with pytest.raises(ValueError, match="single element"):
        pj.hessian(lambda x: x * x, x)
    with pytest.raises(ValueError, match="outer_jacobian_strategy"):
        pj.hessian(lambda x: x.sum(), x, outer_jacobian_strategy="sideways")
    with pytest.raises(ValueError, match="vectorize=True"):
        pj.hessian(lambda x: x.sum(), x, outer_jacobian_strategy="forward-mode", vectorize=False)


# -- vjp, jvp, hvp ---------------------------------------------------------------------------------
def test_vjp_jvp_hvp_agree_with_the_jacobian():
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0.2, 1.5, 3), rng.uniform(0.2, 1.5, (2, 2))
    J = pj.jacobian(two_in_two_out, (x, y))
    u = (rng.standard_normal(4), rng.standard_normal((2, 2)))
    outs, (gx, gy) = pj.vjp(two_in_two_out, (x, y), u)
    np.testing.assert_allclose(np.asarray(outs[0]), np.asarray(two_in_two_out(pj.constant(x), pj.constant(y))[0]))
    for j, g in enumerate((gx, gy)):
        expected = sum(np.tensordot(u[i], np.asarray(J[i][j]), axes=u[i].ndim) for i in range(2))
        np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-12)
    v = (rng.standard_normal(3), rng.standard_normal((2, 2)))
    outs, (tx, ty) = pj.jvp(two_in_two_out, (x, y), v)
    for i, t in enumerate((tx, ty)):
        expected = sum(np.tensordot(np.asarray(J[i][j]), v[j], axes=v[j].ndim) for j in range(2))
        np.testing.assert_allclose(np.asarray(t), expected, rtol=1e-12)
    f = lambda x: pj.sum(pj.exp(x) * x[::-1])  # noqa: E731
    out, hv = pj.hvp(f, x, v[0])
    np.testing.assert_allclose(np.asarray(hv), np.asarray(pj.hessian(f, x)) @ v[0], rtol=1e-12)
    np.testing.assert_allclose(float(out), float(f(pj.constant(x))))


def test_vjp_jvp_nesting_and_default_v():
    x = np.array([2.0])
    out, g = pj.vjp(lambda x: x * x, x)            # a single element: v defaults to ones
    assert isinstance(out, np.ndarray) and g.tolist() == [4.0]
    out, t = pj.jvp(lambda x: (x * x, x + 1.0), x)
    assert isinstance(t, tuple) and [np.asarray(v).tolist() for v in t] == [[4.0], [1.0]]
    out, (g1, g2) = pj.vjp(lambda a, b: a * b, (np.array(3.0), np.array(4.0)))
    assert (float(g1), float(g2)) == (4.0, 3.0)
    _, t = pj.jvp(lambda x: pj.constant(1.0) + 0.0 * 0.0, np.ones(2), np.ones(2))
    assert float(t) == 0.0
    with pytest.raises(RuntimeError, match="strict"):
        pj.jvp(lambda x: pj.constant(np.ones(2)), np.ones(2), np.ones(2), strict=True)
    with pytest.raises(RuntimeError, match="strict"):
        pj.vjp(lambda x, y: x * 2.0, (np.ones(2), np.ones(2)), np.ones(2), strict=True)


def test_create_graph_in_vjp_jvp_hvp():
    x = pj.constant(np.array([0.5, 1.5]))
    f = lambda x: pj.sum(x ** 4)  # noqa: E731
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        _, g = pj.vjp(f, x, create_graph=True)
        _, t = pj.jvp(f, x, pj.ones_like(x), create_graph=True)
        _, hv = pj.hvp(f, x, pj.ones_like(x), create_graph=True)
        _, hv_detached = pj.hvp(f, x, pj.ones_like(x))
        sums = [pj.sum(g), t, pj.sum(hv), pj.sum(hv_detached)]
    xs = x.numpy()
    np.testing.assert_allclose(tape.gradient(sums[0], x).numpy(), 12 * xs ** 2)
    np.testing.assert_allclose(tape.gradient(sums[1], x).numpy(), 12 * xs ** 2)
    np.testing.assert_allclose(tape.gradient(sums[2], x).numpy(), 24 * xs)
    assert tape.gradient(sums[3], x) is None


# -- errors ----------------------------------------------------------------------------------
def test_bad_arguments_name_the_argument():
    x = np.ones(2)
    with pytest.raises(TypeError, match="func must be callable"):
        pj.jacobian("not a function", x)
    assert pj.jacobian(lambda x: x, [1.0, 2.0]).tolist() == [[1.0, 0.0], [0.0, 1.0]]  # an array
    with pytest.raises(TypeError, match="inputs"):
        pj.jacobian(lambda x: x, "x")
    with pytest.raises(TypeError, match=r"inputs\[0\] has dtype int"):
        pj.jacobian(lambda x: x, np.arange(3))
    with pytest.raises(TypeError, match="outputs of the user-provided function"):
        pj.jacobian(lambda x: (x, 1.0), x)
    with pytest.raises(ValueError, match="strategy"):
        pj.jacobian(lambda x: x, x, strategy="backward-mode")
    with pytest.raises(ValueError, match="v has shape"):
        pj.vjp(lambda x: x * 2.0, x, np.ones(3))
    with pytest.raises(ValueError, match=r"v\[1\] has shape"):
        pj.jvp(lambda a, b: a * b, (x, x), (np.ones(2), np.ones(3)))
    with pytest.raises(ValueError, match="v can only be None"):
        pj.jvp(lambda x: x * 2.0, x)
    with pytest.raises(ValueError, match="v holds 1 tensors"):
        pj.hvp(lambda a, b: pj.sum(a * b), (x, x), x)
    with pytest.raises(TypeError, match="v must be"):
        pj.hvp(lambda x: pj.sum(x * x), x, "v")
    with pytest.raises(TypeError, match="func must be callable"):
        pj.hvp(None, x, x)


def test_refused_option_combinations_are_clear():
    x = np.ones(2)
    with pytest.raises(NotImplementedError, match="strict=True is not supported with strategy"):
        pj.jacobian(lambda x: x, x, strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(ValueError, match="forward-mode.*vectorize=True"):
        pj.jacobian(lambda x: x, x, strategy="forward-mode", vectorize=False)
    with pytest.raises(NotImplementedError):
        pj.jacobian(lambda x: x, x, strategy="forward-mode", vectorize=False)


# -- the forward interpreter on its own -------------------------------------------------------------
def test_jvp_program_skips_dead_code_and_reports_zero_tangents():
    calls = []
    prog = pj.make_program(lambda x, y: (pj.exp(x), pj.sin(y) * 0.0 + 1.0, x * 2.0),
                           [((2,), np.float64), ((2,), np.float64)])
    prog.outputs = prog.outputs[:2]               # the third output is now dead code
    x = pj.constant(np.array([0.0, 1.0]))
    outs, tans = jvp_program(prog, [x, x], [pj.ones((2,), np.float64), None])
    calls.append(len(outs))
    np.testing.assert_allclose(tans[0].numpy(), np.exp([0.0, 1.0]))
    assert tans[1] is None and len(outs) == 2
    with pytest.raises(ValueError, match="tangent of shape"):
        jvp_program(prog, [x, x], [pj.ones((3,), np.float64), None])


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_parallel_iterations_chunks_without_changing_results(strategy):
    x, y = np.linspace(0.2, 1.0, 3), np.linspace(0.5, 1.5, 4).reshape(2, 2)
    full = pj.jacobian(two_in_two_out, (x, y), vectorize=True, strategy=strategy)
    for k in (1, 2, 5):
        chunked = pj.jacobian(two_in_two_out, (x, y), vectorize=True, strategy=strategy,
                              parallel_iterations=k)
        for row_f, row_c in zip(full, chunked):
            for f, c in zip(row_f, row_c):
                np.testing.assert_allclose(np.asarray(c), np.asarray(f), rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError, match="parallel_iterations"):
        pj.jacobian(two_in_two_out, (x, y), vectorize=True, strategy=strategy, parallel_iterations=0)


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
def test_a_boolean_output_has_a_zero_jacobian(mode):
    # As torch: zeros; the tape's jacobian of a bool target is None (as TensorFlow's).
    x = np.array([1.0, 2.0, 3.0])
    jac = pj.jacobian(lambda a: (a > 1.5, a * 2.0), x, **mode)
    np.testing.assert_array_equal(np.asarray(jac[0]), np.zeros((3, 3)))
    np.testing.assert_array_equal(np.asarray(jac[1]), 2.0 * np.eye(3))


@pytest.mark.parametrize("use_pfor", [True, False])
def test_tape_jacobians_of_a_boolean_target_are_none(use_pfor):
    x = pj.constant(np.ones((2, 3)))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x > 0.5
    assert tape.jacobian(y, x, experimental_use_pfor=use_pfor) is None
    assert tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor) is None
    zeros = tape.batch_jacobian(y, x, unconnected_gradients="zero", experimental_use_pfor=use_pfor)
    np.testing.assert_array_equal(zeros.numpy(), np.zeros((2, 3, 3)))


def test_hessian_strict_names_the_gradient_that_is_constant():
    with pytest.raises(RuntimeError, match="hessian: the gradient of the user-provided function "
                                           "with respect to input 0 is independent of input 0"):
        pj.hessian(lambda a: 3.0 * a.sum(), np.array([1.0, 2.0]), strict=True)
    with pytest.raises(pj.functional.UnsupportedOptionsError, match="hessian: strict=True"):
        pj.hessian(lambda a: (a ** 3).sum(), np.array([1.0]), strict=True,
                   outer_jacobian_strategy="forward-mode")
    with pytest.raises(RuntimeError, match="hessian: the gradient .* independent of input 0"):
        pj.hessian(lambda a: 3.0 * a.sum(), np.array([1.0, 2.0]), strict=True, vectorize=True)


@pytest.mark.parametrize("strategy, vectorize", [("reverse-mode", True), ("reverse-mode", False),
                                                 ("forward-mode", True)])
def test_functional_jacobians_and_hessians_are_c_ordered(strategy, vectorize):
    x, f = layout_case(np.random.default_rng(24))
    jac = pj.jacobian(f, x, strategy=strategy, vectorize=vectorize)
    chunked = pj.jacobian(f, x, strategy=strategy, vectorize=True, parallel_iterations=5)
    hess = pj.hessian(lambda a: pj.sum(f(a) ** 2), x, vectorize=vectorize,
                      outer_jacobian_strategy=strategy)
    assert c_ordered(jac) and c_ordered(chunked) and c_ordered(hess)
    np.testing.assert_allclose(jac.numpy(), pj.jacobian(f, x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(hess.numpy(), pj.hessian(lambda a: pj.sum(f(a) ** 2), x).numpy(),
                               rtol=1e-10)
