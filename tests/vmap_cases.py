"""Cases for tests/test_vmap.py, written once for JAX and for pforjac.

`cases(xp, T, data)` returns `{name: thunk}`; each thunk returns a pytree of arrays.
`xp` is the array namespace (jax.numpy, or numpy, which dispatches to pforjac), `T` the
transforms (`vmap`, `grad`, `jacrev`, `jacfwd`, `vjp` in JAX's form, `linearize`,
`ravel_pytree`), `data` the inputs (`make_data`). tests/data/make_vmap_reference.py runs
them with JAX and stores the values in tests/data/vmap_jax.npz.
"""
from __future__ import annotations

import collections

import numpy as np

Params = collections.namedtuple("Params", "w b")


def make_data(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    n = lambda *s: rng.standard_normal(s)  # noqa: E731
    return {"A": n(3, 4), "B": n(5, 4), "v": n(4), "xs": n(5, 3), "ys": n(5, 3, 2), "zs": n(5, 2),
            "w0": n(3, 6) / 2, "b0": n(6) / 4, "w1": n(6, 2) / 2, "b1": n(2) / 4,
            "X": n(7, 3), "Y": np.eye(2)[rng.integers(0, 2, 7)], "M": n(4, 3, 5), "t": n(6)}


def mlp_loss(xp):
    def loss(params, x, y):
        h = xp.tanh(x @ params["w0"] + params["b0"])
        z = h @ params["w1"] + params["b1"]
        top = xp.max(z)
        return xp.log(xp.sum(xp.exp(z - top))) + top - xp.sum(z * y)
    return loss


def cases(xp, T, d: dict) -> dict:
    params = {"w0": d["w0"], "b0": d["b0"], "w1": d["w1"], "b1": d["b1"]}
    loss = mlp_loss(xp)
    f = lambda x: xp.sin(x) * xp.sum(x ** 2)  # noqa: E731
    return {
        # jax.vmap's documented examples, on numpy code
        "dot_batched": lambda: T.vmap(xp.dot)(d["B"], d["B"]),
        "matvec": lambda: T.vmap(xp.dot, in_axes=(0, None))(d["B"], d["v"]),
        "in_axes_1": lambda: T.vmap(lambda a, b: a * b, in_axes=(1, None))(d["A"], d["v"][:3]),
        "out_axes_1": lambda: T.vmap(lambda a: a * 2.0, out_axes=1)(d["B"]),
        "negative_axes": lambda: T.vmap(lambda m: m.sum(axis=0), in_axes=-1, out_axes=-1)(d["M"]),
        "tree_in_axes": lambda: T.vmap(
            lambda t: xp.dot(t[0], xp.dot(t[1][0], t[1][1])),
            in_axes=((0, (0, 0)),))((d["xs"], (d["ys"], d["zs"]))),
        "tree_in_axes_none": lambda: T.vmap(
            lambda t: xp.dot(t[0], xp.dot(t[1][0], t[1][1])),
            in_axes=((0, (None, 0)),))((d["xs"], (d["ys"][0], d["zs"]))),
        "dict_in_axes": lambda: T.vmap(lambda p, x: x @ p["w0"] + p["b0"],
                                       in_axes=({"w0": None, "b0": 0}, 0))(
            {"w0": d["w0"], "b0": np.stack([d["b0"]] * 7)}, d["X"]),
        "out_axes_none": lambda: T.vmap(lambda a, b: (a * b, b * 2.0), in_axes=(0, None),
                                        out_axes=(0, None))(d["B"], d["v"]),
        "nested_vmap": lambda: T.vmap(T.vmap(lambda a, b: a * b, in_axes=(0, None)),
                                      in_axes=(None, 0))(d["v"], d["A"]),
        # per-example derivatives
        "per_example_grads": lambda: T.vmap(T.grad(loss), in_axes=(None, 0, 0))(
            params, d["X"], d["Y"]),
        "per_example_jacobians": lambda: T.vmap(T.jacrev(f))(d["xs"]),
        "per_example_hessians": lambda: T.vmap(T.jacfwd(T.jacrev(f)))(d["xs"]),
        "jacrev_of_vmap": lambda: T.jacrev(T.vmap(f))(d["xs"]),
        "grad_of_vmap": lambda: T.grad(lambda p: xp.mean(T.vmap(loss, in_axes=(None, 0, 0))(
            p, d["X"], d["Y"])))(params),
        "hessian_of_dict": lambda: T.jacfwd(T.jacrev(loss))(params, d["X"][0], d["Y"][0]),
        # torch.func's tutorials: model ensembling (stacked parameters mapped, data shared)
        "ensemble": lambda: T.vmap(lambda p: T.vmap(loss, in_axes=(None, 0, 0))(
            p, d["X"], d["Y"]))({k: xp.stack([v, 2.0 * v]) for k, v in params.items()}),
        "ensemble_grads": lambda: T.vmap(T.grad(loss), in_axes=(0, None, None))(
            {k: xp.stack([v, -v, 0.5 * v]) for k, v in params.items()}, d["X"][0], d["Y"][0]),
        "namedtuple_grad": lambda: T.grad(lambda p: xp.sum(xp.tanh(d["X"] @ p.w + p.b)))(
            Params(d["w0"], d["b0"])),
        # JAX's vjp and linearize
        "vjp_twice": lambda: _vjp_twice(T, f, d),
        "linearize_twice": lambda: _linearize_twice(T, f, d),
        # ravel_pytree and a Gauss-Newton matrix through unravel
        "ravel": lambda: T.ravel_pytree(params)[0],
        "gauss_newton": lambda: _gauss_newton(xp, T, params, d),
    }


def _vjp_twice(T, f, d):
    out, vjp_fun = T.vjp(f, d["t"])
    return out, vjp_fun(d["t"])[0], vjp_fun(d["t"] ** 2)[0]


def _linearize_twice(T, f, d):
    out, jvp_fun = T.linearize(f, d["t"])
    return out, jvp_fun(d["t"]), jvp_fun(d["t"] ** 2)


def _gauss_newton(xp, T, params, d):
    flat, unravel = T.ravel_pytree(params)

    def residuals(theta):
        p = unravel(theta)
        return (xp.tanh(d["X"] @ p["w0"] + p["b0"]) @ p["w1"] + p["b1"] - d["Y"]).ravel()
    J = T.jacrev(residuals)(flat)
    return J.T @ J
