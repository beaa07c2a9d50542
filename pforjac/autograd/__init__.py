"""autograd's public API on pforjac: code written for HIPS autograd ports by changing its
imports alone (`import pforjac.autograd.numpy as np`, `from pforjac.autograd import grad`).

The differential operators take autograd's arguments (`argnum=` an int or a tuple) and,
called at top level on numpy values, return numpy values; nested (`grad(grad(f))`) they
return Tensors to the operator outside. `primitive` + `defvjp` declare a function with its
own vjp, on the same mechanism as `pforjac.custom_vjp`.

Example:
    >>> import pforjac.autograd.numpy as np
    >>> from pforjac.autograd import grad, elementwise_grad
    >>> grad(lambda x: np.sum(np.tanh(x)))(np.zeros(2)).tolist()
    [1.0, 1.0]
    >>> elementwise_grad(np.tanh)(np.zeros(2)).tolist()
    [1.0, 1.0]
"""
from .differential_operators import (elementwise_grad, grad, grad_and_aux, grad_named,
                                     hessian, hessian_tensor_product, hessian_vector_product,
                                     holomorphic_grad, jacobian, make_hvp, make_jvp, make_vjp,
                                     tensor_jacobian_product, value_and_grad,
                                     vector_jacobian_product, deriv)
from .extend import defjvp, defvjp, primitive

__all__ = ["grad", "elementwise_grad", "value_and_grad", "grad_and_aux", "jacobian", "hessian",
           "hessian_vector_product", "hessian_tensor_product", "make_hvp", "make_vjp",
           "make_jvp", "holomorphic_grad", "grad_named", "tensor_jacobian_product",
           "vector_jacobian_product", "deriv", "primitive", "defvjp", "defjvp"]
