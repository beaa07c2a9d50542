"""The "compiled (numba)" columns of zoo.py and compare.py: what lowered, and the compile
and cached-load times of each workload in fresh processes.

- `first_call(fn)`: the first call of a `pj.function(..., backend="numba")`, with the
  backend's fallback warning (an op without a numba rule) turned into a table note,
  "numpy fallback: ...", so a workload that does not lower completely says so.
- `cold_times(argv)`: runs `argv` (a script's child mode, which calls `child_measure`)
  twice in fresh processes on one new, empty cache directory: the first compiles, the
  second loads numba's machine code from the disk cache. Each child imports numba before
  its clock starts and reports the whole first call (trace, simplify, lower, compile or
  load, run) and the part spent making native code (`numba_backend.native_code`).
- `numba_start()`: numba's own start in a fresh process (import; first compile of a
  one-line function), which the first program of a process pays once.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

__all__ = ["available", "first_call", "lowering", "child_measure", "cold_times", "numba_start",
           "fmt_s", "cold_cells", "COLD_HEADER"]


def available() -> bool:
    return importlib.util.find_spec("numba") is not None


def _note(messages) -> str:
    """The backend's warnings (numba did not take a program, or part of it) as one note:
    the ops it names, else the cause it gives."""
    notes = []
    for m in messages:
        text = str(m.message)
        if "numba" not in text:
            continue
        found = re.search(r"op\(s\) ([^;]*?)(?:;|\. |\.$| \(|$)", text) or \
            re.search(r"not numba: (.*?)(?:\. Its results|$)", text)
        notes.append(("op(s) " if "op(s)" in text else "") + (found.group(1) if found else text)[:120])
    return "; ".join(dict.fromkeys(notes))


def first_call(call):
    """(`call()`'s result, the fallback note or "") for a numba-backed function's first call."""
    with warnings.catch_warnings(record=True) as messages:
        warnings.simplefilter("always")
        out = call()
    return out, _note(messages)


def lowering(function, note: str) -> str:
    """"numba" when every trace of `function` runs wholly as native code; else "numba
    segments + numpy: <ops>" or "numpy fallback: <cause>"."""
    traced = list(getattr(function, "_cache", {}).values())
    backends = {getattr(c, "backend", "numpy") for c in traced}
    if not note and backends != {"numba"}:          # (warned once already, for another)
        note = _unlowered(traced)
    if backends == {"numba"} and not note:
        return "numba"
    if "numpy" not in backends and backends:
        return "numba segments + numpy: " + (note or "(no warning)")
    return "numpy fallback: " + (note or "(no warning)")


def _unlowered(traced) -> str:
    """The ops numba's lowering declines in these traces' programs (no compile)."""
    from pforjac.compiled.numba_codegen import numba_source
    from pforjac.compiled.numba_lowering import NotLowered
    ops = []
    for c in traced:
        try:
            numba_source(c.program, "program", {})
        except NotLowered as e:
            ops.append(f"op(s) {e}")
        except Exception as e:  # noqa: BLE001  (a lowering bug: say what)
            ops.append(f"{type(e).__name__}: {str(e)[:80]}")
    return "; ".join(dict.fromkeys(ops)) or "numba could not compile it (see the warning)"


def child_measure(call) -> None:
    """In a child process: times the first `call()` and its native-code part; prints JSON."""
    import numba  # noqa: F401  (its import is not the program's compile: before the clock)
    from pforjac.compiled import numba_backend
    spent: list[float] = []
    cpu: list[float] = []
    original = getattr(numba_backend, "native_code", None)
    if original is not None:
        def timed(*args, **kwargs):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
        numba_backend.native_code = timed
    t0 = time.perf_counter()
    _, note = first_call(call)
    total = time.perf_counter() - t0
    fell_back = _fell_back(call)
    print(json.dumps({"total": total, "native": sum(spent) if original else None,
                      "native_cpu": sum(cpu) if original else None,
                      "programs": len(spent), "note": note, "fell_back": fell_back}))


def _fell_back(call) -> bool:
    """Whether the numba function `call` calls (`call.function`, or the one its closure
    holds) runs wholly on numpy."""
    functions = [getattr(call, "function", None)] + [
        c.cell_contents for c in (getattr(call, "__closure__", None) or ())
        if hasattr(c.cell_contents, "_cache")]
    for f in functions:
        if f is not None and hasattr(f, "_cache"):
            return all(getattr(c, "backend", "numpy") == "numpy" for c in f._cache.values())
    return False


def _child(argv, env) -> dict:
    run = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True,
                         timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode or not lines:
        return {"error": (run.stderr.strip().splitlines() or ["no output"])[-1][:120]}
    return json.loads(lines[-1])


def cold_times(argv) -> dict:
    """{"compile": child 1's measurement, "load": child 2's}, both on one fresh cache."""
    with tempfile.TemporaryDirectory(prefix="pforjac_numba_cold_") as cache:
        env = dict(os.environ, PFORJAC_CACHE_DIR=cache, PFORJAC_BACKEND="numpy")
        return {"compile": _child(argv, env), "load": _child(argv, env)}


_START = """
import time
t0 = time.perf_counter()
import numba
t1 = time.perf_counter()
@numba.njit(cache=False)
def f(x):
    return x + 1.0
f(1.0)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def numba_start() -> str:
    """numba's import and first compile (a one-line function) in a fresh process."""
    run = subprocess.run([sys.executable, "-c", _START], capture_output=True, text=True,
                         timeout=300)
    try:
        imp, first = (float(v) for v in run.stdout.split())
    except ValueError:
        return "numba start not measured"
    return f"numba's own start in a fresh process: import {imp:.2f} s, first compile of a " \
           f"one-line function {first:.2f} s"


def fmt_s(seconds) -> str:
    return "-" if seconds is None else f"{seconds:.2f}" if seconds >= 0.1 else f"{seconds:.3f}"


def cold_cells(measured: dict) -> list[str]:
    """Table cells: native compile s, cached load s (wall, and CPU: the machine may be
    shared), first call s (empty cache / cached)."""
    a, b = measured["compile"], measured["load"]
    if "error" in a or "error" in b:
        return [a.get("error") or b.get("error"), "", "", ""]

    def native(m):
        if m["native"] is None:
            return "-"
        fell_back = m.get("fell_back")
        return f"{fmt_s(m['native'])} (cpu {fmt_s(m['native_cpu'])})" + \
            (" (numpy fallback: nothing compiled)" if fell_back else "")
    return [native(a), native(b), fmt_s(a["total"]), fmt_s(b["total"])]


COLD_HEADER = ["numba compile s (fresh process, empty cache)", "cached load s (fresh process)",
               "first call s, empty cache", "first call s, cached"]
