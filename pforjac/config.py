"""Process-wide settings: `pforjac.config`.

`pforjac.config.backend` is the backend `pforjac.function` compiles with when it is not
given one: "numpy" (generated numpy code, the default) or "numba" (one native function
per program, `pforjac[numba]`). Its first value comes from the environment variable
`PFORJAC_BACKEND`, so a program can be switched without editing it.
"""
from __future__ import annotations

import os

__all__ = ["config", "BACKENDS"]

BACKENDS = ("numpy", "numba")


def checked_backend(name, where: str) -> str:
    """`name` if it is a backend, else a ValueError naming `where` it came from."""
    if name not in BACKENDS:
        raise ValueError(f"{where}: unknown backend {name!r}; choose one of {BACKENDS}")
    return name


class _Config:
    """pforjac's settings (attributes are checked when set)."""

    def __init__(self):
        self._backend = checked_backend(os.environ.get("PFORJAC_BACKEND", "numpy").strip() or "numpy",
                                        "the environment variable PFORJAC_BACKEND")

    @property
    def backend(self) -> str:
        """The default backend of `pforjac.function`: "numpy" or "numba"."""
        return self._backend

    @backend.setter
    def backend(self, name: str) -> None:
        self._backend = checked_backend(name, "pforjac.config.backend")

    def __repr__(self) -> str:
        return f"pforjac.config(backend={self._backend!r})"


config = _Config()
