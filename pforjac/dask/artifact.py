"""A compiled chunk program as data: what every task of a distributed Jacobian reads.

`ChunkProgram.of(compiled)` takes a traced, simplified, compiled chunk (compiled_trace.py)
apart into plain data: the generated numpy source, the primitives' forwards it calls, its
captured constants (Variables read now), and its dense twin where the code has structure
guards. It pickles as that data, so a scheduler ships it to a worker once (one key of the
graph that every chunk task depends on), and it compiles its source once per process, on
first use, however many tasks then run it.

On the numba backend it also holds the client's native function, which the tasks of
the client's own process run (the threaded and synchronous schedulers). The native
function is not shipped: a process that receives a pickled chunk program (a
`distributed` worker) runs its generated numpy code, whose results agree to a few ulps.
"""
from __future__ import annotations

import re
import threading

import numpy as np

from ..compiled.codegen import namespace_of, program_to_source
from .memory import peak_bytes

__all__ = ["ChunkProgram", "compile_count"]

_compiles = 0                   # sources compiled in this process (tests read it on workers)
_compiles_lock = threading.Lock()


def compile_count() -> int:
    """How many chunk programs this process has compiled (once per program it received)."""
    return _compiles


class ChunkProgram:
    """Generated code of one chunk shape: `program(*arrays) -> tuple of numpy arrays`."""

    def __init__(self, source: str, namespace: dict, consts: list, n_guards: int,
                 dense: "ChunkProgram | None", peak: int, native=None):
        self.source, self.namespace, self.consts = source, namespace, consts
        self.n_guards, self.dense = n_guards, dense
        self.peak = peak            # bytes of live values at most while it runs (consts apart)
        self.name = re.match(r"def (\w+)\(", source).group(1)
        self._code = None
        self._native = native       # the numba backend's function: this process only
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        """What runs it in this process: "numba" (native code) or "numpy"."""
        return "numpy" if self._native is None else "numba"

    @classmethod
    def of(cls, compiled) -> "ChunkProgram":
        """The data of a `_Compiled` (compiled_trace.py), its dense twin made now if it
        has guards (a worker cannot trace)."""
        program = compiled.program
        namespace = {k: v for k, v in namespace_of(program).items()
                     if k not in ("np", "__warningregistry__")}
        consts = [v.numpy() for v in program.const_values]
        dense = cls.of(compiled.dense_twin()) if compiled.n_guards else None
        peak = max(peak_bytes(program), dense.peak if dense is not None else 0)
        native = compiled.code if compiled.backend != "numpy" else None
        return cls(program_to_source(program, compiled.name), namespace, consts,
                   compiled.n_guards, dense, peak, native)

    @property
    def nbytes(self) -> int:
        """The constants' bytes (the dense twin's too): what a worker holds for it."""
        own = sum(a.nbytes for a in self.consts)
        return own + (self.dense.nbytes if self.dense is not None else 0)

    def __call__(self, *arrays) -> tuple:
        outs = (self._native or self._compiled())(*arrays, self.consts)
        if self.n_guards:
            outs, guards = outs[:-self.n_guards], outs[-self.n_guards:]
            if not all(bool(g) for g in guards):    # NaN, Inf or a zero divisor met:
                return self.dense(*arrays)          # the dense code, as pforjac.function
        return tuple(np.ascontiguousarray(o) for o in outs)

    def _compiled(self):
        global _compiles
        if self._code is None:
            with self._lock:
                if self._code is None:
                    namespace = {"np": np, "__warningregistry__": {}, **self.namespace}
                    exec(compile(self.source, f"<pforjac.dask {self.name}>", "exec"), namespace)
                    self._code = namespace[self.name]
                    with _compiles_lock:
                        _compiles += 1
        return self._code

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_code"] = state["_lock"] = state["_native"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        for a in self.consts:             # shared by the worker's threads: never written
            a.flags.writeable = False
