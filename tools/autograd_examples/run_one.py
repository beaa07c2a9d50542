"""Runs one of autograd's examples (its imports rewritten to pforjac.autograd) with its
iteration counts capped: `python run_one.py EXAMPLE.py ITERS LINES [--autograd]`. With
`--autograd`, `pforjac.autograd.X` is HIPS autograd's `autograd.X` (aliased at import),
so that both run the very same file (some examples train on their own source text).

Caps, the same under both: `scipy.optimize.minimize` at ITERS iterations, the `adam`,
`sgd` and `rmsprop` optimizers at ITERS steps, and the run stops after LINES lines of
output. The time the example itself took (imports of autograd/pforjac excluded) is
printed last on stderr, as `##elapsed SECONDS`: the modules the example imports are
imported before the clock starts. numpy's global generator is seeded with 0.
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import time
import types


class _Stop(BaseException):
    """Raised by the output counter at the line cap (no `except Exception` catches it)."""


class _Lines:
    def __init__(self, stream, cap: int):
        self.stream, self.cap, self.count = stream, cap, 0

    def write(self, text: str) -> int:
        self.stream.write(text)
        self.count += text.count("\n")
        if self.count >= self.cap:
            self.stream.flush()
            raise _Stop
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


class _AliasAutograd(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports `pforjac.autograd.X` as `autograd.X`."""

    def find_spec(self, name, path, target=None):
        if name == "pforjac" or name.startswith("pforjac."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        if spec.name == "pforjac":
            module = types.ModuleType("pforjac")
            module.__path__ = []
            return module
        return importlib.import_module("autograd" + spec.name[len("pforjac.autograd"):])

    def exec_module(self, module) -> None:
        pass


def _cap_minimize(iters: int) -> None:
    import scipy.optimize
    original = scipy.optimize.minimize

    @functools.wraps(original)
    def minimize(*args, **kwargs):
        options = dict(kwargs.get("options") or {})
        options["maxiter"] = min(options.get("maxiter", iters), iters)
        kwargs["options"] = options
        return original(*args, **kwargs)
    scipy.optimize.minimize = minimize


def _cap_optimizers(iters: int) -> None:
    for name in ("autograd.misc.optimizers", "pforjac.autograd.misc.optimizers"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for opt in ("adam", "sgd", "rmsprop"):
            setattr(module, opt, _capped(getattr(module, opt), iters))


def _capped(optimizer, iters: int):
    @functools.wraps(optimizer)
    def capped(*args, num_iters=100, **kwargs):
        return optimizer(*args, num_iters=min(num_iters, iters), **kwargs)
    return capped


def _import_first(path: str) -> None:
    """Imports the modules the example imports (and what they import: scipy's, ...), so
    that the time measured is the example's work, not the loading of either library."""
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
        for name in names:
            try:
                importlib.import_module(name)
            except Exception:          # (the example's own run reports it)
                pass


def main(path: str, iters: int, lines: int) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    os.chdir(folder)
    _import_first(path)
    _cap_minimize(iters)
    _cap_optimizers(iters)
    sys.argv = [path]
    sys.stdout = _Lines(sys.stdout, lines)
    import numpy
    numpy.random.seed(0)          # (examples that seed nothing draw the same numbers)
    start = time.perf_counter()
    names = None
    try:
        names = runpy.run_path(path, run_name="__main__")
    except _Stop:
        pass
    finally:
        sys.stdout.flush()
        print(f"##elapsed {time.perf_counter() - start:.3f}", file=sys.stderr)
    for name, summary in _summaries(names or {}):
        print(f"##value {name} {summary}", file=sys.stderr)


def _summaries(names: dict):
    """(name, sum and sum of squares) of every float array or number the example left in
    its globals (lists and tuples of them summed together): its results."""
    import numpy as np
    for name in sorted(names):
        value = names[name]
        parts = value if isinstance(value, (list, tuple)) else [value]
        try:
            arrays = [np.asarray(p, dtype=float) for p in parts
                      if isinstance(p, (float, np.ndarray, np.floating))]
        except (TypeError, ValueError):
            continue
        if arrays and len(arrays) == len(parts) and not name.startswith("_"):
            total = sum(float(np.sum(a)) for a in arrays)
            squares = sum(float(np.sum(a * a)) for a in arrays)
            yield name, f"{total!r} {squares!r}"


if __name__ == "__main__":
    if "--autograd" in sys.argv:
        sys.meta_path.insert(0, _AliasAutograd())
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
