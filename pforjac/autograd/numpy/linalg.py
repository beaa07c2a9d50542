"""`pforjac.autograd.numpy.linalg`: pforjac.numpy.linalg."""
import numpy.linalg as _np_linalg

import pforjac.numpy.linalg as _linalg

from ._wrap import wrapped as _wrapped


def __getattr__(name: str):
    value = _wrapped(getattr(_linalg, name), getattr(_np_linalg, name, None))
    globals()[name] = value          # (found once: later reads are plain module attributes)
    return value
