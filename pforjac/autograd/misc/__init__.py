"""autograd's `misc`: `flatten` and the optimizers of `misc.optimizers`."""
from .flatten import flatten, flatten_func  # noqa: F401
from . import optimizers  # noqa: F401
