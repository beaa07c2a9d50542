"""`pforjac.autograd.numpy.linalg`: pforjac.numpy.linalg."""
import pforjac.numpy.linalg as _linalg


def __getattr__(name: str):
    return getattr(_linalg, name)
