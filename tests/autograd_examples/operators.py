import numpy as onp

import pforjac.autograd.numpy as np
from pforjac.autograd import (grad_named, hessian, hessian_vector_product, holomorphic_grad,
                              jacobian, make_jvp, make_vjp, tensor_jacobian_product,
                              value_and_grad)


def f(x):
    return np.sum(np.sin(x) * x ** 2)


def g(x):
    return np.stack([np.sum(x ** 2), np.prod(x), np.sum(np.exp(x))])


def main():
    x = onp.array([0.5, -1.0, 2.0])
    v = onp.array([1.0, 0.5, -2.0])
    vjp, ans = make_vjp(g)(x)
    jvp_value, jvp_tangent = make_jvp(g)(x)(v)
    return {"hessian": hessian(f)(x), "hvp": hessian_vector_product(f)(x, v),
            "jacobian": jacobian(g)(x), "vjp": vjp(onp.array([1.0, 2.0, 3.0])), "ans": ans,
            "jvp": jvp_tangent, "jvp_value": jvp_value,
            "tjp": tensor_jacobian_product(g)(x, onp.array([1.0, 2.0, 3.0])),
            "named": grad_named(lambda a, b: np.sum(a * b ** 2), "b")(x, v),
            "holomorphic": onp.array([holomorphic_grad(lambda z: z ** 3 + 2 * z)(1.0 + 2.0j)]),
            "value_and_grad": value_and_grad(f)(x)[1]}
