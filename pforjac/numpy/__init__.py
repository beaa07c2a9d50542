"""`import pforjac.numpy as pnp`: numpy's names, signatures and defaults on pforjac Tensors.

Each `_*.py` module here holds functions written with numpy's signature and registers them
with `numpy_dispatch.implements(np.<name>)`, so that the same function serves `np.<name>(t)`
(numpy's dispatch protocols) and `pnp.<name>(t)` (this namespace). Importing this package
imports them all.
"""
from __future__ import annotations

import importlib as _importlib
import pkgutil as _pkgutil

for _module in _pkgutil.iter_modules(__path__):
    if _module.name.startswith("_"):
        _importlib.import_module(f"{__name__}.{_module.name}")
