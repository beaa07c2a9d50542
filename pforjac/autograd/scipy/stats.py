"""`pforjac.autograd.scipy.stats`: pforjac.scipy.stats (its distributions' logpdf, pdf, ...)."""
import importlib as _importlib


def __getattr__(name: str):
    try:
        stats = _importlib.import_module("pforjac.scipy.stats")
    except ImportError as e:
        raise AttributeError(f"pforjac.autograd.scipy.stats.{name}: pforjac.scipy.stats is not "
                             f"available in this version of pforjac ({e})") from None
    return getattr(stats, name)
