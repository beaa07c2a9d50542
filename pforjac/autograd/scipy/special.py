"""`pforjac.autograd.scipy.special`: pforjac.scipy.special."""
import pforjac.scipy.special as _special


def __getattr__(name: str):
    return getattr(_special, name)
