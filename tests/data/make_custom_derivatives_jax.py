"""Computes tests/data/custom_derivatives_jax.json with JAX (float64), the values that
tests/test_custom_derivatives.py compares pforjac's custom derivatives with. Run with an
interpreter that has jax: `python tests/data/make_custom_derivatives_jax.py`.

The functions are JAX's documented custom_jvp / custom_vjp examples (the custom
derivatives tutorial), written again here."""
import json
import pathlib
from functools import partial

import jax
import jax.numpy as jnp
from jax import custom_jvp, custom_vjp, grad, jacfwd, jacrev, jvp, vjp

jax.config.update("jax_enable_x64", True)


@custom_jvp
def log1pexp(x):
    return jnp.log(1. + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    return log1pexp(x), x_dot * (1. - 1. / (1. + jnp.exp(x)))


@custom_jvp
def stable(x):
    return x / (1 + jnp.sqrt(x))


@stable.defjvp
def stable_jvp(primals, tangents):
    x, = primals
    x_dot, = tangents
    ans = stable(x)
    return ans, (x + 2) / (2 * (1 + jnp.sqrt(x)) ** 2) * x_dot


@custom_jvp
def safe_norm(x):
    return jnp.sqrt(jnp.sum(x ** 2))


@safe_norm.defjvp
def safe_norm_jvp(primals, tangents):
    x, = primals
    t, = tangents
    n = safe_norm(x)
    return n, jnp.where(n == 0, 0.0, jnp.dot(x, t) / jnp.where(n == 0, 1.0, n))


@custom_jvp
def f_jvp(x, y):
    return jnp.sin(x) * y


@f_jvp.defjvp
def f_jvp_rule(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    return f_jvp(x, y), jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot


@custom_jvp
def f_jvps(x, y):
    return jnp.sin(x) * y


f_jvps.defjvps(lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
               lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot)


@custom_vjp
def f_vjp(x, y):
    return jnp.sin(x) * y


def f_fwd(x, y):
    return f_vjp(x, y), (jnp.cos(x), jnp.sin(x), y)


def f_bwd(res, g):
    cos_x, sin_x, y = res
    return (cos_x * g * y, sin_x * g)


f_vjp.defvjp(f_fwd, f_bwd)


@custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@partial(custom_vjp, nondiff_argnums=(0,))
def app_vjp(f, x):
    return f(x)


app_vjp.defvjp(lambda f, x: (app_vjp(f, x), x), lambda f, x, g: (5 * g,))


@partial(custom_jvp, nondiff_argnums=(0,))
def app_jvp(f, x):
    return f(x)


@app_jvp.defjvp
def app_jvp_rule(f, primals, tangents):
    x, = primals
    x_dot, = tangents
    return f(x), 2. * x_dot


@partial(custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
    def cond_fun(carry):
        x_prev, x = carry
        return jnp.abs(x_prev - x) > 1e-6

    def body_fun(carry):
        _, x = carry
        return x, f(a, x)
    _, x_star = jax.lax.while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
    return x_star


def fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def fixed_point_rev(f, res, x_star_bar):
    a, x_star = res
    _, vjp_a = vjp(lambda a: f(a, x_star), a)
    a_bar, = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
    return a_bar, jnp.zeros_like(x_star)


def rev_iter(f, packed, u):
    a, x_star, x_star_bar = packed
    _, vjp_x = vjp(partial(f, a), x_star)
    return x_star_bar + vjp_x(u)[0]


fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)


def newton_sqrt(a):
    return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)


def L(v):
    return jnp.asarray(v).tolist()


def main():
    X = jnp.array([-3.0, 0.0, 10.0, 100.0, 1000.0])
    T = jnp.linspace(0.0, 10.0, 7)
    XS, YS = jnp.array([0.5, 1.0, 2.0]), jnp.array([2.0, 3.0, -1.0])
    values = {
        "log1pexp": {"x": L(X), "value": L(log1pexp(X)),
                     "grad": L(jax.vmap(grad(log1pexp))(X)),
                     "hessian_diag": L(jax.vmap(grad(grad(log1pexp)))(X[:3]))},
        "stable": {"x": [0.0, 1.0, 4.0], "grad": L(jax.vmap(grad(stable))(jnp.array([0.0, 1.0, 4.0])))},
        "safe_norm": {"x": [[0.0, 0.0], [3.0, 4.0]],
                      "grad": [L(grad(safe_norm)(jnp.zeros(2))), L(grad(safe_norm)(jnp.array([3.0, 4.0])))]},
        "f_jvp": {"x": L(XS), "y": L(YS),
                  "grad": L(grad(lambda x, y: jnp.sum(f_jvp(x, y)), argnums=(0, 1))(XS, YS)),
                  "jacfwd": L(jacfwd(f_jvp)(XS, YS)),
                  "hessian": L(jax.hessian(lambda x: jnp.sum(f_jvp(x, YS)))(XS))},
        "f_jvps": {"grad": L(grad(lambda x, y: jnp.sum(f_jvps(x, y)), argnums=(0, 1))(XS, YS))},
        "f_vjp": {"grad": L(grad(lambda x, y: jnp.sum(f_vjp(x, y)), argnums=(0, 1))(XS, YS)),
                  "jacrev": L(jacrev(f_vjp)(XS, YS)),
                  "hessian": L(jacrev(jacrev(lambda x: jnp.sum(f_vjp(x, YS))))(XS))},
        "clip_gradient": {"t": L(T), "grad": L(jax.vmap(grad(lambda x: jnp.sin(clip_gradient(-0.75, 0.75, x))))(T))},
        "app_vjp": {"grad": float(grad(app_vjp, 1)(lambda x: x ** 3, 3.))},
        "app_jvp": {"jvp": [float(v) for v in jvp(lambda x: app_jvp(lambda y: y ** 2, x), (4.,), (1.,))]},
        "newton_sqrt": {"a": 2.0, "value": float(newton_sqrt(2.)), "grad": float(grad(newton_sqrt)(2.)),
                        "grad2": float(grad(grad(newton_sqrt))(2.))},
    }
    out = pathlib.Path(__file__).with_name("custom_derivatives_jax.json")
    out.write_text(json.dumps(values, indent=1) + "\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
