"""`import pforjac.autograd.numpy as np`, as `import autograd.numpy as np`: pforjac.numpy's
functions (on Tensors and arrays alike; numpy values out for numpy values in, outside
derivatives), numpy's random module and pforjac.numpy.linalg."""
import numpy as _np

import pforjac.numpy as _pnp
from . import linalg  # noqa: F401
from numpy import random  # noqa: F401  (autograd.numpy.random: numpy's, on plain arrays)
from ._wrap import wrapped as _wrapped


def __getattr__(name: str):
    try:
        value = _wrapped(getattr(_pnp, name), getattr(_np, name, None))
    except AttributeError:
        if name.startswith("__") or not hasattr(_np, name):
            raise
        # numpy's own (seterr, iinfo, ...): on Tensors it dispatches to pforjac, which
        # refuses by name what it does not implement
        value = getattr(_np, name)
    globals()[name] = value          # (found once: later reads are plain module attributes)
    return value


def __dir__():
    return sorted(set(dir(_pnp)) | {"random", "linalg"})

