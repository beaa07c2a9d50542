"""The compiled layer: whole Jacobian computations traced once, simplified and run as
generated numpy code. It builds on the eager core and the core never imports it.

- `function` (`pforjac.function`): a user function traced per input signature into one
  Program (forward, tape, jacobian, pfor), simplified and compiled.
- `loopcache`: eager Jacobians compiled on their second sighting; switched off with
  `pforjac.compiled.loopcache.caching(False)`.
- `passes`: the simplification passes every compiled path runs (`passes.PASSES`);
  `codegen`: Programs as numpy source.
- The numba backend (`pforjac.function(f, backend="numba")`, docs/numba.md):
  `numba_lowering` (the table keyed by primitive), `numba_codegen` (a Program as one
  njit function's source), `numba_backend` (disk cache, checks, fallback to numpy),
  `numba_kernels` (the few loops numba's numpy lacks).
"""
from . import loopcache  # noqa: F401  (installs the loop cache into pforjac.hooks)
from .function import Function, function

__all__ = ["Function", "function", "loopcache"]
