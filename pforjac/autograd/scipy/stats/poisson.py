"""`pforjac.autograd.scipy.stats.poisson`: pforjac.scipy.stats.poisson's functions."""
from . import _stats
from ...numpy._wrap import wrapped as _wrapped


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    return _wrapped(getattr(_stats().poisson, name))
