"""`import pforjac.numpy as pnp`: numpy's names, signatures and defaults on pforjac Tensors.

Each `_*.py` module here holds functions written with numpy's signature and registers them
with `numpy_dispatch.implements(np.<name>)`, so that the same function serves `np.<name>(t)`
(numpy's dispatch protocols) and `pnp.<name>(t)` (this namespace). Importing this package
imports them all.

`pnp.<name>` is found in the dispatch tables when it is read (`_namespace`): whatever is
registered, now or later, is here; a numpy name pforjac lacks raises AttributeError saying so.
Defined here directly, for what the protocols can't reach: `array`/`asarray` (lists holding
Tensors are stacked, differentiably), the creation functions (numpy's float64 defaults), the
dtypes and constants, and `ndarray`, which is `pforjac.Tensor` (`isinstance(x, pnp.ndarray)`).
See docs/numpy.md.
"""
from __future__ import annotations

import importlib as _importlib
import pkgutil as _pkgutil

import numpy as _np

from ..tensor import Tensor as ndarray
from . import _namespace
from ._creation import *  # noqa: F401,F403
from ._dtypes import *  # noqa: F401,F403
from ._index_tricks import c_, r_  # noqa: F401

for _module in _pkgutil.iter_modules(__path__):
    if _module.name.startswith("_"):
        _importlib.import_module(f"{__name__}.{_module.name}")

from . import linalg  # noqa: E402,F401  (pnp.linalg.<name>, found the same way)

__array_api_version__ = "2024.12"


def __getattr__(name: str):
    if name == "special":   # the array API's anticipated extension, which scipy's array-API
        # mode looks for: scipy.special.erf(t) then runs pforjac.scipy.special.erf
        return _importlib.import_module("pforjac.scipy.special")
    return _namespace.lookup(_np, __name__, name)


def __dir__():
    return sorted(set(globals()) | set(_namespace.names(_np)))


def _array_namespace(self, /, *, api_version=None):
    """The array API namespace of pforjac Tensors: `pforjac.numpy`."""
    if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(f"__array_namespace__: api_version {api_version!r} is not one pforjac "
                         f"knows; pass None or one of 2021.12 .. 2024.12")
    return _importlib.import_module(__name__)


ndarray.__array_namespace__ = _array_namespace
ndarray.device = property(lambda self: "cpu", doc="Where the data lives: always 'cpu'.")


def _to_device(self, device, /, *, stream=None):
    """The array API's `to_device`: the tensor itself, for the one device, 'cpu'."""
    if device != "cpu" or stream is not None:
        raise ValueError(f"to_device: pforjac tensors live on 'cpu' only, got {device!r}")
    return self


ndarray.to_device = _to_device
