"""`pforjac.numpy.linalg`: numpy.linalg's names on Tensors, found in the dispatch tables when
read (see pforjac/numpy/_namespace.py)."""
from __future__ import annotations

import numpy as _np

from . import _namespace


def __getattr__(name: str):
    return _namespace.lookup(_np.linalg, __name__, name)


def __dir__():
    return sorted(_namespace.names(_np.linalg))
