"""`pforjac.autograd.numpy.linalg`: pforjac.numpy.linalg."""
import pforjac.numpy.linalg as _linalg

from ._wrap import wrapped as _wrapped


def __getattr__(name: str):
    return _wrapped(getattr(_linalg, name))
