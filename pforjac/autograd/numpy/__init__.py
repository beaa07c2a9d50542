"""`import pforjac.autograd.numpy as np`, as `import autograd.numpy as np`: pforjac.numpy's
functions (on Tensors and arrays alike), numpy's random module and pforjac.numpy.linalg."""
import numpy as _np

import pforjac.numpy as _pnp
from pforjac.numpy import linalg  # noqa: F401
from numpy import random  # noqa: F401  (autograd.numpy.random: numpy's, on plain arrays)


def __getattr__(name: str):
    return getattr(_pnp, name)


def __dir__():
    return sorted(set(dir(_pnp)) | {"random", "linalg"})


del _np
