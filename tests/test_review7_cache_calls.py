"""An adversarial review of the numba backend's disk cache and of the lean call path: a
damaged, unwritable or concurrently written cache never fails a call nor loads another
program's code, the index key changes with every module the generated source depends on,
and lean entries and specialize() give the general path's results for arguments that share
a key but differ (byte order, read-only, aliasing, 0-d values, bool against int), and from
several threads at once."""
import ast
import pathlib
import sys
import threading
import warnings

import numpy as np
import pytest

import pforjac as pj

numba = pytest.importorskip("numba")

from pforjac.compiled import numba_backend, numba_index  # noqa: E402


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PFORJAC_CACHE_DIR", str(tmp_path))
    return tmp_path / "numba"


def _fresh_process_view():
    """Forgets the generated modules this process imported, as a new process would not
    have them: the next compile finds only what is on disk."""
    for name in [n for n in sys.modules if n.startswith("pforjac_numba_")]:
        del sys.modules[name]


def _backend(f) -> str:
    return next(iter(f._cache.values())).backend


_C = np.array([1.5, -0.0, 3.0])


def _scaled(x):
    return x * _C + 0.25


def _numba_run(fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # a fallback to numpy warns: fail
        f = pj.function(fn, backend="numba")
        out = f(x)
    return f, out


def test_a_source_file_cut_short_in_the_cache_is_written_again(cache):
    x = np.array([1.0, 2.0, 4.0])
    _numba_run(_scaled, x)
    source, = cache.glob("pj_*.py")
    source.write_text(source.read_text()[:len(numba_backend.HEADER)])   # the header alone
    _fresh_process_view()
    f, out = _numba_run(_scaled, x)
    np.testing.assert_array_equal(out, _scaled(x))
    assert _backend(f) == "numba" and "def program(" in source.read_text()


def test_a_damaged_numba_cache_file_is_compiled_again_not_left_to_numpy(cache):
    x = np.array([1.0, 2.0, 4.0])
    _numba_run(_scaled, x)
    for data in cache.glob("__pycache__/pj_*.nbc"):
        data.write_bytes(data.read_bytes()[:40])
    _fresh_process_view()
    f, out = _numba_run(_scaled, x)                  # (a warning would fail here)
    np.testing.assert_array_equal(out, _scaled(x))
    assert _backend(f) == "numba"
    _fresh_process_view()                            # and the cache is whole again
    f, out = _numba_run(_scaled, x)
    np.testing.assert_array_equal(out, _scaled(x))
    assert sum(f._cache[next(iter(f._cache))].code.dispatcher.stats.cache_hits.values()) == 1


def test_an_unwritable_cache_directory_runs_numpy_with_a_warning_naming_it(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("PFORJAC_CACHE_DIR", str(blocker))      # (mkdir under a file fails,
    x = np.array([1.0, 2.0, 5.0])                              # even for root)
    f = pj.function(lambda x: x * _C - 0.5, backend="numba")
    with pytest.warns(RuntimeWarning, match="cache directory") as caught:
        out = f(x)
    assert str(blocker) in str(caught[0].message)
    np.testing.assert_array_equal(out, x * _C - 0.5)
    assert _backend(f) == "numpy"


def test_index_records_from_threads_at_once_all_succeed(tmp_path):
    errors = []

    def write():
        for _ in range(100):
            try:
                numba_index.record(tmp_path, "k" * 32, "d" * 24, False)
            except Exception as e:       # (a shared temporary file: FileNotFoundError)
                errors.append(e)
    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert numba_index.lookup(tmp_path, "k" * 32) == ("d" * 24, False)


def test_an_index_record_in_an_unwritable_directory_is_skipped(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    numba_index.record(blocker, "k" * 32, "d" * 24, False)      # no error: a shortcut only
    assert numba_index.lookup(blocker, "k" * 32) is None


def _imported_pforjac_modules(path: pathlib.Path) -> set[str]:
    """The pforjac modules (as paths under pforjac/) a compiled/ module imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = ["compiled"] if node.level == 1 else []
            parts = base + (node.module.split(".") if node.module else [])
            names = [a.name for a in node.names] if not node.module else [None]
            for name in names:
                found.add("/".join(parts + ([name] if name else [])) + ".py")
    return found


# pforjac modules the numba_* modules import that do not shape the generated source: the
# Program's data (its equations are the key itself), configuration (in the key), errors
_NOT_SOURCE = {"program.py", "config.py", "core.py", "tensor.py", "warn.py"}


def test_the_index_key_covers_every_module_the_generated_source_depends_on():
    root = pathlib.Path(numba_index.__file__).parent.parent
    hashed = {p.relative_to(root).as_posix() for p in numba_index.code_files()}
    imported = set().union(*[_imported_pforjac_modules(p)
                             for p in root.glob("compiled/numba_*.py")])
    missing = {m for m in imported if (root / m).exists()} - hashed - _NOT_SOURCE
    assert missing == set()


def test_the_index_key_changes_with_pforjac_version(monkeypatch):
    numba_index.code_digest.cache_clear()
    before = numba_index.code_digest()
    monkeypatch.setattr(pj, "__version__", pj.__version__ + ".post1")
    numba_index.code_digest.cache_clear()
    try:
        assert numba_index.code_digest() != before
    finally:
        monkeypatch.undo()
        numba_index.code_digest.cache_clear()


@pytest.mark.parametrize("first, second", [
    (np.array([0.0, 1.0]), np.array([-0.0, 1.0])),
    (np.array([0.1 + 0.2, 1.0]), np.array([0.3, 1.0])),
    (np.array([0.5, 1.0]), np.array([0.5, 1.0], np.float32)),
    (np.array([2, 3]), np.array([2.0, 3.0])),
])
def test_constants_that_look_alike_never_share_cached_code(cache, first, second):
    x = np.array([-1.0, 3.0])
    for c in (first, second, first):
        f, out = _numba_run(lambda x, c=c: x * c, x)
        want = x * c
        np.testing.assert_array_equal(out, want)
        assert out.dtype == want.dtype and (np.signbit(out) == np.signbit(want)).all()
        _fresh_process_view()


def test_two_primitives_of_one_name_and_two_ufuncs_never_share_cached_code(cache):
    # two processes (or an override) may give one op name two forwards: the elementwise
    # family lowers each as its ufunc, so the index key names the ufunc
    from pforjac import core
    from pforjac.extend import same_shape
    from pforjac.testing import isolated_registries
    x = np.array([0.5, 1.0])
    with isolated_registries():
        for ufunc in (np.sin, np.cos, np.sin):
            prim = core.new_primitive("review7_act", ufunc, same_shape, override=True,
                                      elementwise=True)
            f, out = _numba_run(lambda x: core.bind(prim, x) * 2.0, x)
            np.testing.assert_array_equal(out, ufunc(x) * 2.0)
            assert _backend(f) == "numba"


_THREADS_ON_WORKQUEUE = """
import threading, warnings
import numpy as np, pforjac as pj
warnings.simplefilter("error")
pj.config.parallel_min_size = 1000
f = pj.function(lambda x: pj.numpy.tanh(x) * 2.0 + x, backend="numba")
x = np.linspace(-1.0, 1.0, 20000)
want = np.tanh(x) * 2.0 + x
assert np.allclose(f(x), want, rtol=1e-15, atol=1e-15)
assert next(iter(f._cache.values())).code.parallel
bad = []
def work():
    for _ in range(40):
        if not np.allclose(f(x), want, rtol=1e-15, atol=1e-15):
            bad.append(1)
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
import numba
print(numba.threading_layer(), len(bad))
"""


def test_parallel_code_called_from_threads_on_numbas_workqueue_layer(tmp_path):
    # the workqueue layer (no TBB, no OpenMP) ends the process at a concurrent launch
    import os
    import subprocess
    env = dict(os.environ, PFORJAC_CACHE_DIR=str(tmp_path), NUMBA_THREADING_LAYER="workqueue",
               NUMBA_NUM_THREADS="2", PYTHONPATH=str(pathlib.Path(pj.__file__).parent.parent))
    run = subprocess.run([sys.executable, "-c", _THREADS_ON_WORKQUEUE], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-600:]
    assert run.stdout.split() == ["workqueue", "0"]


def _nan(bits: int, dtype) -> np.ndarray:
    unsigned = np.uint64 if np.dtype(dtype).itemsize == 8 else np.uint32
    return np.array(bits, unsigned).view(dtype)


@pytest.mark.parametrize("c", [_nan(0xfff8000000000000, np.float64),
                               _nan(0x7ff8000000000123, np.float64),
                               _nan(0xffc00000, np.float32)], ids=["-nan", "payload", "-nan32"])
def test_a_nan_constant_keeps_its_sign_and_payload_as_on_numpy(cache, c):
    x = np.array([1.0, 2.0], c.dtype)
    want = x + c                    # (numpy carries the NaN operand's bits into the result)
    for backend in ("numpy", "numba"):
        f = pj.function(lambda x: x + c, backend=backend)
        for _ in range(2):          # (the general path, then the lean one)
            out = f(x)
            assert out.dtype == want.dtype and out.tobytes() == want.tobytes(), backend


def _body(x, y):
    return pj.numpy.sum(pj.numpy.tanh(x) * y, axis=-1) * 2.0


def _eager(x, y):
    return np.asarray(_body(x, y))


@pytest.mark.filterwarnings("ignore:.*numba has no type for an input")    # ('>f8': numpy runs)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_arguments_of_one_lean_key_that_differ_get_the_general_paths_results(backend, cache):
    f = pj.function(_body, backend=backend)
    x, y = np.linspace(-1.0, 1.0, 6).reshape(2, 3), np.linspace(0.5, 2.0, 6).reshape(2, 3)
    read_only = x.copy()
    read_only.setflags(write=False)
    for args in [(x, y), (x.astype(">f8"), y), (read_only, y), (x, x), (np.asfortranarray(x), y),
                 (x[:, ::-1], y), (np.ma.masked_array(x), y), (x.astype(np.float32), y),
                 (x, y)]:
        for call in (f, f.specialize(x, y)):
            for _ in range(2):                  # (the general path, then the lean one)
                got = call(*args)
                assert type(got) is np.ndarray and not got.flags.writeable
                np.testing.assert_allclose(got, _eager(*args), rtol=1e-14, atol=1e-14)
    assert not np.shares_memory(f(x, y), x)


def test_threads_calling_one_function_with_different_shapes(cache):
    f, g = pj.function(_body), pj.function(_body, backend="numba")
    bad = []

    def work(t):
        rng = np.random.default_rng(t)
        for i in range(200):
            rows = 1 + (i + t) % 2
            x, y = rng.standard_normal((rows, 3)), rng.standard_normal((rows, 3))
            want = _eager(x, y)
            for h in (f, g):
                try:
                    if not np.allclose(h(x, y), want, rtol=1e-14, atol=1e-14):
                        bad.append((t, i))
                except Exception as e:
                    bad.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


def test_code_that_failed_the_type_check_is_not_found_ready_by_the_next_function(cache, monkeypatch):
    # (numba typing every value otherwise than the Program declares, simulated)
    monkeypatch.setattr(numba_backend, "_same_type", lambda numba_type, var: False)
    x = np.array([1.0, 2.0])
    for _ in range(2):
        f = pj.function(lambda x: x * 3.0 - 2.0, backend="numba")
        with pytest.warns(RuntimeWarning, match="numba types"):
            np.testing.assert_array_equal(f(x), x * 3.0 - 2.0)
        assert _backend(f) == "numpy"


def test_the_cache_directory_deleted_while_the_process_runs(cache):
    import shutil
    x = np.array([1.0, 2.0, 4.0])
    _numba_run(_scaled, x)
    shutil.rmtree(cache)
    for fn in (_scaled, lambda x: x * _C - 3.0):      # the same program, and a new one
        f, out = _numba_run(fn, x)
        np.testing.assert_array_equal(out, fn(x))
        assert _backend(f) == "numba"
    assert len(list(cache.glob("pj_*.py"))) == 2


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_nan_argument_keeps_its_sign_and_payload_through_traces_and_lean_entries(backend, cache):
    x = np.array([1.0, 2.0])
    nans = [float(_nan(b, np.float64)) for b in (0x7ff8000000000000, 0xfff8000000000000,
                                                0x7ff8000000000123, 0x7ff8000000000000)]
    f = pj.function(lambda x, s: x + s, backend=backend)
    for s in nans + nans:
        want = x + s
        assert f(x, s).tobytes() == want.tobytes()
    assert f.trace_count == 3


def test_a_changed_source_file_in_the_cache_is_never_run(cache):
    x = np.array([1.0, 2.0, 4.0])
    _numba_run(_scaled, x)
    source, = cache.glob("pj_*.py")
    source.write_text(source.read_text().replace("0.25", "7.5"))     # valid, and wrong
    _fresh_process_view()
    f, out = _numba_run(_scaled, x)
    np.testing.assert_array_equal(out, _scaled(x))
    assert _backend(f) == "numba" and "7.5" not in source.read_text()
