"""The quick way to a program's cached machine code in a new process.

numba's disk cache is keyed by the generated source, and generating the source needs
the lowering table, which reads numba's ufunc database (a good part of numba's start-up).
The index maps a key of the Program itself (its equations, shapes, dtypes, parameters,
the bytes of its baked constants, the backend's own modules and the versions) to that
source's digest, so a process that finds a program there goes straight to numba's cache.

`load_cached(dispatcher, signature)` loads numba's cached machine code as
`Dispatcher.compile` does, without its first step: refreshing the target context, which
imports every typing and lowering registry numba has (most of a first cached load in a
fresh process) and which cached machine code does not need; a compile refreshes it
itself. It reaches into numba's dispatcher, so anything unexpected there just misses.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import threading

import numpy as np

from ..program import Program

__all__ = ["program_key", "lookup", "record", "load_cached", "code_files", "code_digest"]


def code_files() -> list[pathlib.Path]:
    """The modules the generated source depends on: the backend's own (`numba_*.py`: rules,
    kernels, code generation) and the other pforjac modules they import (`_OTHERS`)."""
    here = pathlib.Path(__file__).parent
    return sorted(here.glob("numba_*.py")) + [here.parent / name for name in _OTHERS]


_OTHERS = ("compiled/codegen.py", "ops/_einsum_plan.py", "ops/convolution.py")


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """`code_files()`, the versions (numba's, numpy's, pforjac's) and the BLAS the kernels'
    products call (numba_blas.py): a change of any makes new keys, so an upgraded pforjac
    never loads code an older one generated, nor a process code naming functions it lacks."""
    import numba
    from .. import __version__
    from .numba_blas import identity
    h = hashlib.sha256(f"{numba.__version__} {np.__version__} {__version__} {identity()}".encode())
    for path in code_files():
        h.update(path.read_bytes())
    return h.hexdigest()


def _text(value) -> str:
    """A parameter as text that changes with its value (arrays by their bytes)."""
    if isinstance(value, np.ndarray):
        return f"array({value.dtype.str}, {value.shape}, " \
               f"{hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()})"
    if isinstance(value, (tuple, list)):
        return type(value).__name__ + "(" + ", ".join(_text(v) for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_text(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


def _ufunc(prim) -> str:
    """The ufunc an op's forward is (the elementwise family's rule lowers it as that
    ufunc: two primitives of one name, in two processes, may be two ufuncs), else ''."""
    from .. import core
    impl = core.impl_rules.get(prim)
    return f"[{impl.__name__}]" if isinstance(impl, np.ufunc) else ""


def program_key(program: Program, baked: dict, parallel_min_size) -> str:
    """A digest of everything the generated source of `program` depends on."""
    def aval(v) -> str:
        return f"{v.name}:{np.dtype(v.dtype).str}{tuple(v.shape)}"
    lines = [code_digest(), f"parallel {parallel_min_size}"]
    lines += ["in " + aval(v) for v in program.inputs]
    lines += [f"const {aval(c)} " + (_text(np.asarray(baked[id(c)])) if id(c) in baked else "passed")
              for c in program.consts]
    lines += [f"{' '.join(aval(v) for v in e.outputs)} = {e.prim.name}{_ufunc(e.prim)} "
              f"{_text(e.params)} {' '.join(v.name for v in e.inputs)}" for e in program.equations]
    lines.append("out " + " ".join(v.name for v in program.outputs))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:32]


def lookup(directory: pathlib.Path, key: str) -> tuple[str, bool] | None:
    """(source digest, whether it has parallel loops) recorded for `key`, if any."""
    try:
        digest, parallel = (directory / "index" / key).read_text().split()
    except (OSError, ValueError):
        return None
    return digest, parallel == "parallel"


def record(directory: pathlib.Path, key: str, digest: str, parallel: bool) -> None:
    """Records `key`'s digest, where the directory can be written (the index is a shortcut:
    without it, a process generates the source and finds numba's cache that way)."""
    index = directory / "index"
    temporary = index / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        index.mkdir(parents=True, exist_ok=True)
        temporary.write_text(f"{digest} {'parallel' if parallel else 'serial'}\n")
        os.replace(temporary, index / key)
    except OSError:
        pass


def load_cached(dispatcher, signature) -> bool:
    """Whether numba's cached machine code for `signature` is now `dispatcher`'s."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.runtime import rtsys
    try:
        with global_compiler_lock:
            rtsys.initialize(dispatcher.targetctx)      # (numba's runtime: what the code calls)
            cres = dispatcher._cache._load_overload(signature, dispatcher.targetctx)
            if cres is None or cres.objectmode:
                return False
            dispatcher.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            dispatcher.add_overload(cres)
            dispatcher._cache_hits[signature] += 1
    except Exception:       # numba's internals moved, or an unreadable cache: the usual way
        return False
    return True
