"""`pforjac.autograd.scipy.stats`: pforjac.scipy.stats under autograd's names. Each of
autograd's distribution modules (`import ....stats.multivariate_normal as mvn`) forwards
its functions (`mvn.logpdf`) to pforjac.scipy.stats's distribution of the same name."""
import importlib as _importlib

from ...numpy._wrap import wrapped as _wrapped


def _stats():
    try:
        return _importlib.import_module("pforjac.scipy.stats")
    except ImportError as e:
        raise AttributeError(f"pforjac.scipy.stats is not available in this version of "
                             f"pforjac ({e})") from None


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    module = _submodule(name)
    if module is not None:       # `from ...stats import norm`: the wrapping module
        return module
    return _wrapped(getattr(_stats(), name))


def _submodule(name: str):
    """This package's module `name` (its functions return numpy for numpy), or None."""
    full = f"{__name__}.{name}"
    try:
        return _importlib.import_module(full)
    except ModuleNotFoundError as e:
        if e.name != full:
            raise
        return None
