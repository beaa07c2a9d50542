"""`pforjac.autograd.scipy.special`: pforjac.scipy.special."""
import pforjac.scipy.special as _special

from ..numpy._wrap import wrapped as _wrapped


def __getattr__(name: str):
    return _wrapped(getattr(_special, name))
