"""pforjac: Jacobians of numpy-style code, vectorized by a pfor compiler.

Example:
    >>> import pforjac as pj
    >>> x = pj.constant([[1., 2.], [3., 4.]])
    >>> with pj.GradientTape() as g:
    ...     g.watch(x)
    ...     y = x * x
    >>> g.batch_jacobian(y, x).numpy().tolist()
    [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]]
"""
from .tensor import Tensor, SymbolicTensor, Variable, constant, as_tensor, ConcretizationError
from .ops import *  # noqa: F401,F403
from .tape import GradientTape, UnconnectedGradients
from .program import Program, make_program, run_program
from .pfor import pfor, register_converter, ConversionError
from . import converters as _converters  # noqa: F401  (registers the built-in converters)
from . import jacobians as _jacobians  # noqa: F401  (adds GradientTape.jacobian/batch_jacobian)
from .functional import vjp, jvp, hvp
from .matrix_function import sym_matrix_function
from .transforms import grad, value_and_grad, jacrev, jacfwd, jacobian, hessian, float0
from .linearize import vjp_fn, linearize
from .vmap import vectorized_map, vmap
from . import tree_util, flatten_util  # noqa: F401  (public: pytrees, ravel_pytree)
from .diagnostics import fallback_report
from .custom_derivatives import custom_jvp, custom_vjp, custom_gradient
from . import custom_examples as _custom_examples  # noqa: F401  (the calls' generated checks)
from .compiled import function, Function
from .config import config
from . import extend, testing  # noqa: F401  (public: adding ops, checking them)
from . import numpy_dispatch as _numpy_dispatch  # noqa: F401  (np.sin(t) runs pforjac.sin)
from . import numpy  # noqa: F401  (pforjac.numpy; registers numpy-signature functions)
from .scipy import special as _special  # noqa: F401  (pforjac.scipy.special; no scipy import)
from . import mutation as _mutation  # noqa: F401  (t[i] = v and t += v, with value semantics)
from . import mutation_numpy as _mutation_numpy  # noqa: F401  (np.copyto, np.put, out=, ...)

__version__ = "0.1.0"

from .ops import __all__ as _ops_names  # noqa: E402

# `from pforjac import *`: the API, not the submodules (pj.memory, pj.compiled, ... stay
# reachable as attributes)
__all__ = ["Tensor", "SymbolicTensor", "Variable", "constant", "as_tensor", "ConcretizationError",
           "GradientTape",
           "UnconnectedGradients", "Program", "make_program", "run_program", "pfor",
           "vectorized_map", "register_converter", "ConversionError", "jacobian", "hessian", "vjp",
           "jvp", "hvp", "fallback_report", "function", "Function", "extend", "testing",
           *_ops_names, "grad", "value_and_grad", "jacrev", "jacfwd", "vmap",
           "float0", "vjp_fn", "linearize", "sym_matrix_function", "custom_jvp", "custom_vjp",
           "custom_gradient"]
