"""Custom derivatives (pforjac.custom_jvp / custom_vjp / custom_gradient) against JAX.

The functions are JAX's documented custom-derivative examples written with numpy on
Tensors; tests/data/custom_derivatives_jax.json holds JAX's float64 values for them
(tests/data/make_custom_derivatives_jax.py). Besides: Hessians through the rules, pfor
with no fallback, pforjac.function, forward mode, sparsity, error messages.
"""
import json
import pathlib
from functools import partial

import numpy as np
import pytest

import pforjac as pj
import pforjac.sparse as pjs

JAX = json.loads((pathlib.Path(__file__).parent / "data" / "custom_derivatives_jax.json").read_text())


def close(got, want, rtol=1e-12, atol=1e-14):
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                               rtol=rtol, atol=atol)


@pj.custom_jvp
def log1pexp(x):
    return np.log(1. + np.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return log1pexp(x), x_dot * (1. - 1. / (1. + np.exp(x)))


@pj.custom_jvp
def stable(x):
    return x / (1 + np.sqrt(x))


@stable.defjvp
def stable_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return stable(x), (x + 2) / (2 * (1 + np.sqrt(x)) ** 2) * x_dot


@pj.custom_jvp
def safe_norm(x):
    return np.sqrt(np.sum(x ** 2))


@safe_norm.defjvp
def safe_norm_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    n = safe_norm(x)
    return n, np.where(n == 0, 0.0, np.dot(x, t) / np.where(n == 0, 1.0, n))


@pj.custom_jvp
def f_jvp(x, y):
    return np.sin(x) * y


@f_jvp.defjvp
def f_jvp_rule(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    return f_jvp(x, y), np.cos(x) * x_dot * y + np.sin(x) * y_dot


@pj.custom_jvp
def f_jvps(x, y):
    return np.sin(x) * y


f_jvps.defjvps(lambda x_dot, primal_out, x, y: np.cos(x) * x_dot * y,
               lambda y_dot, primal_out, x, y: np.sin(x) * y_dot)


@pj.custom_vjp
def f_vjp(x, y):
    return np.sin(x) * y


def f_fwd(x, y):
    return f_vjp(x, y), (np.cos(x), np.sin(x), y)


def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)


f_vjp.defvjp(f_fwd, f_bwd)


@pj.custom_vjp
def clip_gradient(lo, hi, x):
    return x


clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                     lambda res, g: (None, None, np.clip(g, res[0], res[1])))


@partial(pj.custom_vjp, nondiff_argnums=(0,))
def app_vjp(f, x):
    return f(x)


app_vjp.defvjp(lambda f, x: (app_vjp(f, x), x), lambda f, x, g: (5 * g,))


@partial(pj.custom_jvp, nondiff_argnums=(0,))
def app_jvp(f, x):
    return f(x)


@app_jvp.defjvp
def app_jvp_rule(f, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return f(x), 2. * x_dot


@partial(pj.custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
    x_prev, x = x_guess, f(a, x_guess)
    while float(np.abs(x_prev - x)) > 1e-6:        # eager: the primal runs on values
        x_prev, x = x, f(a, x)
    return x


def fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    u = fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar)
    a_bar = _vjp(lambda a: f(a, x_star), a, u)
    return a_bar, np.zeros_like(x_star)


def _vjp(fun, primal, ct):
    """jax.vjp's pullback of `fun` at `primal` (a tuple: a pytree of several inputs)."""
    if isinstance(primal, tuple):
        return pj.vjp(lambda *p: fun(p), primal, ct, create_graph=True)[1]
    return pj.vjp(fun, primal, ct, create_graph=True)[1]


def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    return x_star_bar + _vjp(partial(f, a), x_star, u)


fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)


def newton_sqrt(a):
    return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)


# -- JAX's values ---------------------------------------------------------------------------
def test_log1pexp_values_gradients_and_hessian_match_jax():
    case, x = JAX["log1pexp"], np.array(JAX["log1pexp"]["x"])
    with np.errstate(over="ignore"):
        close(log1pexp(x), case["value"])
        close(pj.grad(lambda x: np.sum(log1pexp(x)))(x), case["grad"])
        close(np.diag(pj.hessian(lambda x: pj.sum(log1pexp(x)), pj.constant(x[:3])).numpy()),
              case["hessian_diag"])
        close(np.diag(pj.jacfwd(log1pexp)(x)), case["grad"])


def test_stable_and_safe_norm_gradients_at_the_singular_points_match_jax():
    close([pj.grad(stable)(np.float64(v)) for v in JAX["stable"]["x"]], JAX["stable"]["grad"])
    for x, want in zip(JAX["safe_norm"]["x"], JAX["safe_norm"]["grad"]):
        close(pj.grad(safe_norm)(np.array(x)), want)


@pytest.mark.parametrize("fn", [f_jvp, f_jvps, f_vjp], ids=["defjvp", "defjvps", "defvjp"])
def test_sin_times_y_gradients_match_jax(fn):
    x, y = np.array(JAX["f_jvp"]["x"]), np.array(JAX["f_jvp"]["y"])
    got = pj.grad(lambda x, y: np.sum(fn(x, y)), argnums=(0, 1))(x, y)
    close([np.asarray(g) for g in got], JAX["f_jvp"]["grad"])


def test_jacobians_and_hessians_through_both_kinds_of_rules_match_jax():
    x, y = np.array(JAX["f_jvp"]["x"]), np.array(JAX["f_jvp"]["y"])
    for fn, case in [(f_jvp, "f_jvp"), (f_vjp, "f_vjp")]:
        for jac in (pj.jacfwd, pj.jacrev):
            close(jac(fn)(x, y), JAX["f_jvp"]["jacfwd"])
        hess = JAX[case]["hessian"]
        close(pj.hessian(lambda x: pj.sum(fn(x, pj.constant(y))), pj.constant(x)), hess)
        close(pj.jacfwd(pj.jacrev(lambda x: np.sum(fn(x, y))))(x), hess)
        close(pj.jacrev(pj.jacfwd(lambda x: np.sum(fn(x, y))))(x), hess)


def test_clip_gradient_and_nondiff_argnums_match_jax():
    grads = [pj.grad(lambda x: np.sin(clip_gradient(-0.75, 0.75, x)))(np.float64(t))
             for t in JAX["clip_gradient"]["t"]]
    close(grads, JAX["clip_gradient"]["grad"])
    close(pj.grad(app_vjp, 1)(lambda x: x ** 3, np.float64(3.)), JAX["app_vjp"]["grad"])
    out, tangent = pj.jvp(lambda x: app_jvp(lambda y: y ** 2, x), pj.constant(np.float64(4.)),
                          pj.constant(np.float64(1.)))
    close([out, tangent], JAX["app_jvp"]["jvp"])


def test_fixed_point_first_and_second_derivatives_match_jax():
    case = JAX["newton_sqrt"]
    a = np.float64(case["a"])
    close(newton_sqrt(a), case["value"], rtol=1e-9)
    close(pj.grad(newton_sqrt)(a), case["grad"], rtol=1e-9)
    close(pj.grad(pj.grad(newton_sqrt))(a), case["grad2"], rtol=1e-8)


# -- the paths ------------------------------------------------------------------------------
def test_per_example_jacobians_through_both_kinds_vectorize_without_fallback():
    X = np.random.default_rng(0).normal(size=(4, 3))
    y = np.array([2.0, 3.0, -1.0])
    for fn in (f_jvp, f_vjp):
        with pj.fallback_report() as report:
            per = pj.vectorized_map(lambda r: pj.jacrev(lambda z: fn(z, y))(r), pj.constant(X))
            batch = pj.vectorized_map(lambda r: pj.hessian(lambda z: pj.sum(fn(z, y)), r),
                                      pj.constant(X))
        assert len(report) == 0, str(report)
        close(per, np.stack([np.diag(np.cos(r) * y) for r in X]))
        close(batch, np.stack([np.diag(-np.sin(r) * y) for r in X]))


def test_a_custom_call_inside_pfor_with_stacked_and_unstacked_inputs():
    X = pj.constant(np.random.default_rng(1).normal(size=(5, 3)))
    y = pj.constant(np.array([2.0, 3.0, -1.0]))
    for fn in (f_jvp, f_vjp):
        with pj.fallback_report() as report:
            out = pj.pfor(lambda i: fn(X[i], y), 5)
        assert len(report) == 0
        close(out, np.sin(X.numpy()) * y.numpy())


def test_compiled_functions_give_the_eager_values():
    x, y = np.array([0.5, 1.0, 2.0]), np.array([2.0, 3.0, -1.0])
    for fn in (f_jvp, f_vjp, log1pexp):
        g = pj.function(lambda x: pj.grad(lambda z: np.sum(fn(z, y) if fn is not log1pexp
                                                            else log1pexp(z)))(x))
        eager = pj.grad(lambda z: np.sum(fn(z, y) if fn is not log1pexp else log1pexp(z)))(x)
        close(g(x), eager)
        close(g(x + 1.0), pj.grad(lambda z: np.sum(fn(z, y) if fn is not log1pexp
                                                    else log1pexp(z)))(x + 1.0))


def test_the_rules_are_what_derivatives_follow_in_both_modes():
    @pj.custom_jvp
    def ste(x):                       # a straight-through estimator: round, identity rule
        return np.round(x)

    ste.defjvp(lambda p, t: (ste(p[0]), t[0]))
    x = np.array([0.2, 1.7, -2.4])
    close(ste(x), np.round(x))
    for jac in (pj.jacfwd, pj.jacrev):
        close(jac(ste)(x), np.eye(3))
    close(pj.jacrev(lambda x: clip_gradient(-0.5, 0.5, 3.0 * x))(np.ones(2)), 1.5 * np.eye(2))
    pattern = pjs.jacobian_sparsity(lambda u: ste(u[1:] * u[:-1]), np.zeros(4)).toarray()
    close(pattern, np.eye(3, 4) + np.eye(3, 4, k=1))


def test_sparse_jacobian_through_a_custom_vjp():
    f = lambda u: f_vjp(u[1:], u[:-1])             # noqa: E731
    x = np.arange(1.0, 6.0)
    close(pjs.jacobian_sparsity(f, x).toarray(), np.eye(4, 5) + np.eye(4, 5, k=1))
    close(pjs.jacobian(f, x).toarray(), pj.jacrev(f)(x))


def test_custom_gradient_as_tensorflow():
    @pj.custom_gradient
    def log1pexp_tf(x):
        e = np.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return np.log(1 + e), grad

    x = np.array([0.0, 100.0])
    close(pj.grad(lambda x: np.sum(log1pexp_tf(x)))(x), [0.5, 1.0])
    with pj.GradientTape() as tape:
        xt = pj.constant(x)
        tape.watch(xt)
        y = log1pexp_tf(xt)
    close(tape.gradient(y, xt), [0.5, 1.0])
    close(np.diag(pj.hessian(lambda x: pj.sum(log1pexp_tf(x)), pj.constant(x)).numpy()),
          [0.25, 0.0])


def test_errors_name_the_function_and_the_fix():
    @pj.custom_vjp
    def bad(x):
        return x * 2

    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function bad"):
        pj.grad(bad)(np.float64(1.0))
    bad.defvjp(lambda x: (bad(x), None), lambda res, g: (np.ones((3, 1)) * g,))
    with pytest.raises(ValueError, match="bwd rule of custom_vjp function 'bad'.*shape"):
        pj.grad(lambda x: np.sum(bad(x)))(np.ones(2))
    with pytest.raises(TypeError, match="must be hashable"):
        pj.grad(lambda x: app_vjp([1], x))(np.float64(1.0))


def test_second_derivative_with_one_tensor_passed_as_two_arguments():
    @pj.custom_vjp
    def cube(x, x0):
        return x ** 3

    cube.defvjp(lambda x, x0: (cube(x, x0), (x ** 2,)), lambda r, g: (3 * r[0] * g, 0.0 * g))
    close(pj.grad(pj.grad(lambda a: cube(a, a)))(np.float64(2.0)), 12.0)


def test_a_primal_on_numpy_values_works_under_tapes_and_says_why_it_cannot_be_traced():
    @pj.custom_vjp
    def cube_root(a):
        return np.cbrt(np.asarray(a))              # numpy values: never traced

    cube_root.defvjp(lambda a: (cube_root(a), cube_root(a)),
                     lambda r, g: (g / (3 * r ** 2),))
    x = np.array([1.0, 8.0])
    with pytest.raises(TypeError, match="custom_vjp function 'cube_root' could not be traced"):
        pj.jacfwd(cube_root)(x)                    # no eager call yet: shapes unknown
    close(pj.jacrev(cube_root)(x), np.diag([1 / 3, 1 / 12]))
    close(pj.jacfwd(cube_root)(x), np.diag([1 / 3, 1 / 12]))    # shapes from that call


def test_custom_gradient_with_variables_as_tensorflow():
    v = pj.Variable(np.array([2.0, 3.0]))

    @pj.custom_gradient
    def scale(x):
        def grad(upstream, variables=None):
            return upstream * v, [upstream * x * 10.0]     # a deliberately custom rule
        return x * v, grad

    x = pj.constant(np.array([1.0, -1.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.sum(scale(x))
    gx, gv = tape.gradient(y, [x, v])
    close(gx, [2.0, 3.0])
    close(gv, [10.0, -10.0])
    close(scale(x), [2.0, -3.0])


def test_vmap_of_jacobians_and_hessians_through_custom_rules_has_no_fallback():
    X = np.random.default_rng(2).normal(size=(5, 3))
    with pj.fallback_report() as report:
        jac = pj.vmap(pj.jacrev(lambda z: f_jvp(z, z)))(X)
        hess = pj.vmap(pj.hessian(lambda z: np.sum(f_vjp(z, z))))(X)
    assert len(report) == 0, str(report)
    close(jac, np.stack([np.diag(np.cos(r) * r + np.sin(r)) for r in X]))
    close(hess, np.stack([np.diag(2 * np.cos(r) - np.sin(r) * r) for r in X]), rtol=1e-10)
