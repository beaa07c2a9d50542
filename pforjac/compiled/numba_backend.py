"""The numba backend: a simplified Program compiled to one native function, cached on disk.

`native_code(program, name)` returns a function with the signature of the numpy
backend's generated code (`fn(*input_arrays, consts) -> tuple of arrays`), or raises
`BackendFallback` with the reason the program must run on numpy instead (an op without a
lowering rule, numba refusing the source, a value numba types otherwise than the
Program declares). The caller warns once with that reason and keeps the numpy code:
the backend never changes a result beyond rounding, and never fails one.

Compile time is paid once per program and types: the source is written to
`<cache dir>/<hash>.py` (the hash covers the source, the argument types and the
versions of numba and of the kernels module) and compiled with numba's `cache=True`,
so a second process loads the machine code from the `__pycache__` next to it. The cache
directory is `$PFORJAC_CACHE_DIR/numba`, else `~/.cache/pforjac/numba`.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import pathlib
import sys
import threading
from typing import Callable

import numpy as np

from ..config import checked_backend, config  # noqa: F401  (checked_backend: re-exported)
from ..program import Program
from . import numba_blas, numba_index
from .codegen import compile_program
from .numba_codegen import (HEADER, bakeable, declined_equations, numba_source, numba_type,
                            parallel_helpers, variable_names)
from .numba_lowering import NonFiniteMatrix, NotLowered
from .numba_segments import segmented_runner, split_program
from .numba_threads import launch as _launch

__all__ = ["native_code", "BackendFallback", "cache_dir", "available", "warm_up", "started",
           "kernels"]

_lock = threading.RLock()


class BackendFallback(RuntimeError):
    """Why a program runs on the numpy backend instead of numba's."""


def available() -> bool:
    return missing() is None


@functools.lru_cache(maxsize=1)
def missing() -> str | None:
    """Why numba cannot run here (not installed; installed but failing to import, as a
    build for another numpy does), or None. Importing it is what choosing the backend
    does anyway."""
    if importlib.util.find_spec("numba") is None:
        return "numba is not installed (pip install 'pforjac[numba]')"
    try:
        import numba  # noqa: F401
    except Exception as e:          # (ImportError, or whatever its import raises)
        return f"numba cannot be imported ({type(e).__name__}: {str(e)[:200]})"
    return None


def cache_dir() -> pathlib.Path:
    root = os.environ.get("PFORJAC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pforjac")
    return pathlib.Path(root) / "numba"


def native_code(program: Program, name: str) -> Callable:
    """The program as a numba-compiled function of numpy arrays (see the module's doc); a
    program with equations numba cannot lower as numba segments joined by the numpy
    backend's code for those (`numba_segments.py`; the runner's `declined` names them)."""
    if not available():
        raise BackendFallback(missing())
    numba_blas.found()              # (its library loaded before any code naming it is)
    indexed = _from_index(program, name)
    if indexed is not None:
        return indexed
    declined = declined_equations(program)
    if not declined:
        return _native_whole(program, name)
    ops = ", ".join(dict.fromkeys(declined.values()))
    segments = split_program(program, set(declined))
    native = [s for s in segments if s.native]
    if not native or len(native) > MAX_SEGMENTS:
        raise BackendFallback(f"no numba lowering for op(s) {ops}"
                              + (f" (between {len(native)} numba segments)" if native else ""))
    for k, segment in enumerate(segments):
        segment.code = (_native_whole if segment.native else compile_program)(
            segment.program, f"{name}_{k}")
    runner = segmented_runner(program, segments, name)
    runner.declined = ops
    return runner


MAX_SEGMENTS = 6    # numba segments of one program, each a compile of its own; past it: numpy


def _baked_consts(program: Program) -> dict:
    """{id(const): value} of the constants written into the source (small, not Variables;
    a number is written as its literal, which for NaN is numpy's own: a NaN of another
    sign or payload, which numpy's arithmetic carries into its results, is passed)."""
    from ..tensor import Variable
    return {id(var): value.numpy() for var, value in zip(program.consts, program.const_values)
            if not isinstance(value, Variable) and bakeable(value.numpy())
            and not _other_nan(value.numpy())}


def _other_nan(value: np.ndarray) -> bool:
    return value.ndim == 0 and value.dtype.kind == "f" and bool(np.isnan(value)) and \
        value.tobytes() != np.array(np.nan, value.dtype).tobytes()


def _signature(program: Program, baked: dict) -> tuple:
    params = [v for v in list(program.inputs) + list(program.consts) if id(v) not in baked]
    try:
        return tuple(numba_type(v.shape, v.dtype) for v in params)
    except Exception as e:       # a dtype numba has no type for (float16 arrays' ops, '>f8')
        raise BackendFallback(f"numba has no type for an input: {_cause(e)}") from None


def _from_index(program: Program, name: str) -> Callable | None:
    """The program's code straight from the disk caches, where a process recorded it
    (numba_index.py), else None."""
    baked = _baked_consts(program)
    directory = cache_dir()
    entry = numba_index.lookup(directory, numba_index.program_key(program, baked, _parallel_min_size()))
    if entry is None or not (directory / f"pj_{entry[0]}.py").exists():
        return None
    try:
        signature = _signature(program, baked)
    except BackendFallback:
        return None
    try:           # (a damaged or vanished file: the usual way, which writes it again)
        dispatcher = _module(entry[0], directory / f"pj_{entry[0]}.py").program
        stacks = "_stack(" in (directory / f"pj_{entry[0]}.py").read_text()
    except Exception:
        return None
    with _lock:
        if signature not in dispatcher.overloads and not numba_index.load_cached(dispatcher, signature):
            return None
        dispatcher.disable_compile()
    run = _runner(dispatcher, program, name, baked, entry[1])
    if stacks:                                                          # (as _native_whole)
        run.direct = None
    return run


def kernels():
    """The kernels module, which generated code calls as `K`; where it was not imported
    yet, imported lazily: its numba functions are made when the first one is read, which
    compiling does and loading machine code from the cache does not (making them is a
    good part of a cached load). (An import statement would read the module, and so load it.)"""
    name = __package__ + ".numba_kernels"
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.find_spec(name)
            spec.loader = importlib.util.LazyLoader(spec.loader)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    return module


def started(backend: str | None, where: str) -> str | None:
    """`backend` (None: `config.backend` when a function traces), checked (an error names
    `where`), with numba started if it (or the configured default) is "numba": numba's
    start is paid when the backend is chosen, not by a function's first call."""
    if backend is not None:
        checked_backend(backend, where)
    if (backend or config.backend) == "numba":
        warm_up()
    return backend


def warm_up() -> None:
    """Starts numba (its import, runtime, the modules cached code names, the kernels), as
    choosing the numba backend does, so that a function's first call loads its cached code
    without paying for that."""
    if not available():
        return
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys
    from numba.core.compiler_lock import global_compiler_lock
    from numba import typeof
    with global_compiler_lock:
        rtsys.initialize(cpu_target.target_context)
    numba_blas.found()
    typeof(np.zeros(1))           # (numba's first typeof of an array imports numpy.ma)
    import numba.np.npyimpl       # noqa: F401  (named by the environments of cached array code)
    importlib.import_module(__package__ + ".numba_kernels")    # (and the kernels' module)


def _native_whole(program: Program, name: str) -> Callable:
    """The program, every equation of which lowers, as one numba function."""
    baked, min_size, calls = _baked_consts(program), _parallel_min_size(), []
    try:
        source = numba_source(program, "program", baked, min_size, calls)
    except NotLowered as e:
        raise BackendFallback(f"no numba lowering for op(s) {e}") from None
    signature = _signature(program, baked)
    dispatcher, path = _load(source, signature)
    with _lock:
        if signature not in dispatcher.overloads:     # (the same program seen before: ready)
            if not numba_index.load_cached(dispatcher, signature):
                kernels().merged_axes    # (the kernels made before typing reads one: numba
                _compile(dispatcher, signature, path)   # types an intrinsic of a module
                # loading then as unknown)
                _check_types(program, dispatcher, signature, path, calls)
            dispatcher.disable_compile()   # a writable array converts to the read-only signature
    parallel = parallel_helpers(source) > 0
    numba_index.record(path.parent, numba_index.program_key(program, baked, min_size),
                       path.stem[len("pj_"):], parallel)
    run = _runner(dispatcher, program, name, baked, parallel)
    if "_stack(" in source:     # (LAPACK kernels may refuse NaN: calls go through `run`, which
        run.direct = None       # runs the numpy code then, not straight to the dispatcher)
    return run


def _compile(dispatcher, signature, path: pathlib.Path) -> None:
    """numba's compilation of `signature` (numba first tries its disk cache: a damaged
    cache file is removed and the compilation run once more, without it), else
    `BackendFallback` with numba's error (numpy runs)."""
    for attempt in (0, 1):
        try:
            dispatcher.compile(signature)
            return
        except Exception as e:   # numba's typing and lowering errors (and LLVM's, a cache's)
            cached = list(path.parent.glob(f"__pycache__/{path.stem}.*"))
            if attempt or not cached:
                raise BackendFallback(f"numba could not compile it: {_cause(e)}") from None
            _forget(path, source=False)


def _parallel_min_size() -> int | None:
    """`config.parallel_min_size`, or None (no parallel loops) where one thread runs them."""
    import numba
    threads = config.num_threads or numba.config.NUMBA_NUM_THREADS
    return None if threads == 1 else config.parallel_min_size


def _cause(e: Exception) -> str:
    """numba's error in a line or two: its type, what failed, and the generated line."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    what = [line for line in lines if not line.startswith(("Failed in", "During:", "File", "^"))
            and "pipeline" not in line]
    code = [line for k, line in enumerate(lines[:-1]) if lines[k].startswith("File ")
            and ".py\", line" in line]
    where = f" (generated code, {code[0]})" if code else ""
    return f"{type(e).__name__}: {(what or lines or [''])[0][:240]}{where}"


def _load(source: str, signature):
    """The dispatcher of `source`, written to (or found in) the cache directory under its
    hash and imported from there: numba's on-disk cache needs a real file, unchanged. The
    hash covers the kernels its code calls (numba links their machine code into it) through
    `numba_index.code_digest`: every module the generated code depends on, and the
    versions."""
    text = HEADER + source
    key = "\n".join([text, str(signature), numba_index.code_digest()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    directory = cache_dir()
    path = directory / f"pj_{digest}.py"
    with _lock:
        try:
            if not path.exists() or path.read_text() != text:     # (none, or a damaged one)
                directory.mkdir(parents=True, exist_ok=True)
                temporary = directory / f".pj_{digest}.{os.getpid()}.{threading.get_ident()}.tmp"
                temporary.write_text(text)
                os.replace(temporary, path)      # another process may write the same bytes
                sys.modules.pop(f"pforjac_numba_{digest}", None)   # (imported from the old)
        except OSError as e:
            raise BackendFallback(f"its code cannot be written to the cache directory {directory} "
                                  f"({type(e).__name__}: {e}); set PFORJAC_CACHE_DIR to a writable "
                                  f"directory") from None
        try:
            return _module(digest, path).program, path
        except RuntimeError as e:     # (numba finds no cache directory it can write: this
            # one is read-only, and so is its fallback under the home directory)
            raise BackendFallback(f"numba cannot cache its code under {directory} ({e}); set "
                                  f"PFORJAC_CACHE_DIR to a writable directory") from None


def _module(digest: str, path: pathlib.Path):
    """The generated module at `path`, imported once per process."""
    module_name = f"pforjac_numba_{digest}"
    with _lock:
        module = sys.modules.get(module_name)
        if module is None:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if not hasattr(module, "program"):     # (a file cut short: kept out of sys.modules)
                raise ImportError(f"{path} defines no program")
            sys.modules[module_name] = module
    return module


def _check_types(program: Program, dispatcher, signature, path, calls=()) -> None:
    """Every named value typed as the Program declares it (dtype; scalar for shape (),
    else an array of its rank), where numba kept the typing (a fresh compile: a cache load
    was checked when it was compiled, and a failed check removes the cached code): in the
    function, and in the helpers its repeated loop nests became (`calls`: (helper, {its
    name: the function's name}) per call, from numba_outline), under the helper's
    compilation for the types that call passes."""
    typemap = getattr(dispatcher.overloads[signature].type_annotation, "typemap", None)
    if typemap is None:        # (loaded from the cache: numba keeps a text summary only)
        return
    declared = {name: var for var, name in _named(program).items()}
    for name, var in declared.items():
        _check_one(typemap.get(name), var, path)
    module = sys.modules[dispatcher.py_func.__module__]
    for helper, names in calls:
        mine = _compilations(getattr(module, helper), names, typemap)
        known = {own: declared[body] for own, body in names.items() if body in declared}
        if not any(all(_same_type(t[own], var) for own, var in known.items() if own in t) for t in mine):
            _forget(path)
            raise BackendFallback(f"numba types the values of {helper} otherwise than the "
                                  f"program declares them")


def _compilations(helper, names: dict, typemap) -> list:
    """The typemaps of the compilations of `helper` a call (`names`: its name -> the
    caller's) may have run: those for the types the caller's typemap gives its arguments
    (a helper is compiled once per types: the same nest over arrays of other ranks)."""
    passed = [typemap.get(names.get(f"a_{k}")) for k in range(len(names))]
    passed = passed[:passed.index(None)] if None in passed else passed
    return [getattr(c.type_annotation, "typemap", None) or {} for c in helper.overloads.values()
            if tuple(c.signature.args[:len(passed)]) == tuple(passed)]


def _check_one(got, var, path) -> None:
    if got is not None and not _same_type(got, var):
        _forget(path)
        raise BackendFallback(f"numba types {var.name} as {got}, the program declares "
                              f"{np.dtype(var.dtype).name}{list(var.shape)}")


def _named(program: Program) -> dict:
    names = variable_names(program)
    values = {id(v): v for v in list(program.inputs) + list(program.consts)}
    values.update((id(v), v) for e in program.equations for v in e.outputs)
    return {values[k]: name for k, name in names.items()}


def _same_type(numba_type_, var) -> bool:
    from numba import types
    numba_type_ = types.unliteral(numba_type_)      # (a helper's constant: Literal[bool](True))
    if isinstance(numba_type_, types.Array):
        return numba_type_.ndim == var.ndim and np.dtype(str(numba_type_.dtype)) == var.dtype
    if var.ndim or not isinstance(numba_type_, (types.Number, types.Boolean)):
        return False
    return np.dtype(str(numba_type_)) == var.dtype


def _forget(path: pathlib.Path, source: bool = True) -> None:
    """Removes a program's cached machine code, and its source unless `source` is False;
    with its source, the module this process imported from it, whose dispatcher holds the
    code (code that failed a check: the next function of that program compiles and checks
    it again, instead of finding it ready)."""
    for p in [path] * source + list(path.parent.glob(f"__pycache__/{path.stem}.*")):
        try:
            p.unlink()
        except OSError:
            pass
    if source:
        with _lock:
            sys.modules.pop(f"pforjac_numba_{path.stem[len('pj_'):]}", None)


def _runner(dispatcher, program: Program, name: str, baked: dict, parallel: bool) -> Callable:
    """`fn(*arrays, consts) -> tuple of arrays`: the constants not baked into the code
    passed after the inputs, 0-d values as scalars, arrays C-contiguous; scalar results
    made 0-d arrays of their declared dtype; numba's thread count set first where the
    code has parallel loops."""
    passed = [k for k, v in enumerate(program.consts) if id(v) not in baked]
    scalar_in = [v.ndim == 0 for v in list(program.inputs) + [program.consts[k] for k in passed]]
    scalar_out = [(k, np.dtype(v.dtype)) for k, v in enumerate(program.outputs) if v.ndim == 0]

    def run(*arrays_and_consts):
        consts = arrays_and_consts[-1]
        args = [*arrays_and_consts[:-1], *[consts[k] for k in passed]]
        for k, a in enumerate(args):
            if scalar_in[k]:
                args[k] = a[()]
            elif not a.flags.c_contiguous:
                args[k] = np.ascontiguousarray(a)
        try:
            outs = _launch(dispatcher, args) if parallel else dispatcher(*args)
        except NonFiniteMatrix:     # numba's LAPACK bindings refuse NaN and inf: numpy's take them
            if run.fallback is None:
                run.fallback = run.make_fallback()
            return run.fallback(*arrays_and_consts)
        if scalar_out:
            outs = list(outs)
            for k, dtype in scalar_out:
                outs[k] = np.asarray(outs[k], dtype)
        return tuple(outs)

    run.__name__ = run.__qualname__ = name
    run.dispatcher, run.passed = dispatcher, passed      # (which constants are passed)
    run.fallback = None       # (the numpy code, made when needed; use_backend says how)
    run.make_fallback = lambda: compile_program(program, name)
    run.parallel = parallel
    # (the dispatcher itself, for the lean path; not where the runner sets the threads)
    run.direct = None if parallel else lambda consts: _direct(dispatcher, program, passed, consts)
    return run


def _direct(dispatcher, program: Program, passed: list, consts) -> tuple[Callable, bool]:
    """(`fn(*C-ordered input arrays) -> outputs` with these constants fixed, whether numba
    types every array output C-contiguous), for callers that give every call the argument
    types of the compiled signature (pforjac.function's lean path keys its entries by exact
    shape, strides and dtype): numba's compiled entry point itself, without the
    dispatcher's type resolution (a fifth of a small call), else the dispatcher. A 0-d
    input may be a 0-d array or a Python number; 0-d outputs come back as Python scalars."""
    fixed = [consts[k] for k in passed]
    fixed = [a[()] if a.ndim == 0 else np.ascontiguousarray(a) for a in fixed]
    # (numba reads a real, integer or boolean number through float(), int() or bool(),
    # which take a 0-d array or a Python number alike: only complex ones are converted)
    native, c_ordered = _entry_point(dispatcher)
    scalars = [k for k, v in enumerate(program.inputs) if v.ndim == 0 and (
        np.dtype(v.dtype).kind == "c" or native is dispatcher)]
    if scalars:
        kinds = [(k, np.dtype(program.inputs[k].dtype).type) for k in scalars]

        def call(*arrays):
            arrays = list(arrays)
            for k, number in kinds:      # (a 0-d array or a Python number)
                arrays[k] = number(arrays[k])
            return native(*arrays, *fixed)
        return call, c_ordered
    return (native if not fixed else lambda *arrays: native(*arrays, *fixed)), c_ordered


def _entry_point(dispatcher) -> tuple[Callable, bool]:
    """(the compiled entry point of the dispatcher's one signature, or the dispatcher
    itself; whether numba types every array in its results C-contiguous)."""
    from numba import types
    signatures = dispatcher.signatures
    compiled = dispatcher.overloads.get(signatures[0]) if len(signatures) == 1 else None
    native = getattr(compiled, "entry_point", None)
    if native is None:
        return dispatcher, False
    result = compiled.signature.return_type
    parts = result.types if isinstance(result, types.BaseTuple) else (result,)
    return native, all(p.layout == "C" for p in parts if isinstance(p, types.Array))


def use_backend(compiled, backend: str | None, function_name: str,
                what: str = "pforjac.function", owner=None) -> None:
    """Makes `compiled` (a `_Compiled`) run its program through `backend`'s code (None:
    `pforjac.config.backend`'s) where that backend can: wholly ("numba"), or in numba
    segments joined by numpy code for the ops numba cannot lower ("numba+numpy"); otherwise
    it keeps its numpy code. One warning per cause and `owner` (the Function; without
    one, per function name) names the op(s) or the error (`what` says which compiled code
    it is: a function, the loop cache's, a sparse pass)."""
    backend = backend or config.backend
    if backend == "numpy":
        return
    try:
        code = native_code(compiled.program, compiled.name)
    except BackendFallback as e:
        _warn(owner, (what, function_name), str(e), f"{what} '{function_name}' runs on the "
              f"numpy backend, not numba: {e}. Its results are the numpy backend's")
        return
    if getattr(code, "fallback", False) is None:      # (a whole program's runner: its
        code.make_fallback = compiled.numpy_code      # numpy code, made when it is needed)
    compiled.code = code
    compiled.backend = backend
    declined = getattr(code, "declined", None)
    if declined is not None:
        compiled.backend = "numba+numpy"
        _warn(owner, (what, function_name), declined, f"{what} '{function_name}': no numba "
              f"lowering for op(s) {declined}; they run on the numpy backend, between numba "
              f"segments")


def _warn(owner, name: tuple, cause: str, message: str) -> None:
    """Once per cause: per `owner` (its own record of what it warned about), or per name."""
    from ..warn import warn_at_user_line, warn_once
    if owner is None:
        warn_once(("numba backend", *name, cause), message)
        return
    warned = owner.__dict__.setdefault("_backend_warnings", set())
    if cause not in warned:
        warn_at_user_line(message)      # (raising under an "error" filter: not marked warned)
        warned.add(cause)
