"""Importing and using pforjac changes nothing outside pforjac.

A library must leave the program it is imported into as it found it: no glibc `mallopt`,
no environment variables, no raw memory through `ctypes`, `mmap` or `/proc/self/pagemap`.
Two checks: a fresh interpreter that spies on every `ctypes` library and symbol lookup,
every `mmap` and every open of a pagemap while it imports pforjac and computes Jacobians
(eager, while-loop, compiled, with results of 32 MiB, the size pforjac once served from
its own mappings), and a static scan of every module of the package.
"""
from __future__ import annotations

import ast
import json
import os
import pathlib
import platform
import subprocess
import sys

import pytest

import pforjac

PACKAGE = pathlib.Path(pforjac.__file__).resolve().parent

# Runs in a fresh interpreter: argv[1] is the package directory, argv[2] "pforjac" (import
# it and compute) or "self-tune" (the same, then call mallopt itself: the checks must see it).
_SPY = r'''
import builtins, ctypes, json, mmap, os, sys

PKG, MODE = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL("libc.so.6")                      # the probe's own handle, before any spy


class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                "usmblks", "fsmblks", "uordblks", "fordblks",
                                                "keepcost")]


libc.mallinfo2.restype = MallInfo2
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]


def mapped(nbytes):
    """Whether glibc gives an allocation of `nbytes` a mapping of its own (its default above
    128 KiB, until a freed mapping raises the threshold to that size) or heap memory (what
    mallopt(M_MMAP_THRESHOLD, 32 MiB) makes it do up to 32 MiB)."""
    before = libc.mallinfo2().hblks
    p = libc.malloc(nbytes)
    own = libc.mallinfo2().hblks - before == 1
    libc.free(p)
    return own


def from_pforjac():
    f = sys._getframe(2)
    while f is not None:
        if os.path.realpath(f.f_code.co_filename).startswith(PKG + os.sep):
            return True
        f = f.f_back
    return False


seen = {"symbols": [], "libraries": [], "mappings": 0, "pagemap": []}
cdll_getattr, cdll_getitem = ctypes.CDLL.__getattr__, ctypes.CDLL.__getitem__
cdll_init = ctypes.CDLL.__init__


def spy_getattr(self, name):
    seen["symbols"].append([name, from_pforjac()])
    return cdll_getattr(self, name)


def spy_getitem(self, name):
    seen["symbols"].append([str(name), from_pforjac()])
    return cdll_getitem(self, name)


def spy_init(self, name, *args, **kwargs):
    if from_pforjac():
        seen["libraries"].append(str(name))
    cdll_init(self, name, *args, **kwargs)


class SpyMmap(mmap.mmap):
    def __new__(cls, *args, **kwargs):
        seen["mappings"] += from_pforjac()
        return super().__new__(cls, *args, **kwargs)


def spy_open(opener):
    def open_(path, *args, **kwargs):
        if "pagemap" in str(path):
            seen["pagemap"].append(str(path))
        return opener(path, *args, **kwargs)
    return open_


import numpy as np                                   # numpy's own setup is not pforjac's
mapped_before = mapped(1 << 20)                      # raises the threshold to 1 MiB, no more
environ_before = dict(os.environ)
ctypes.CDLL.__getattr__, ctypes.CDLL.__getitem__ = spy_getattr, spy_getitem
ctypes.CDLL.__init__ = spy_init
ctypes.pythonapi = ctypes.PyDLL(None)                # no symbols resolved yet
mmap.mmap, os.open, builtins.open = SpyMmap, spy_open(os.open), spy_open(builtins.open)

import pforjac as pj

if MODE == "self-tune":
    ctypes.CDLL("libc.so.6").mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD, as pforjac once did
environ_after_import = dict(os.environ)
mapped_after = mapped(4 << 20)                       # before any large array is freed


def workload():
    x = pj.constant(np.linspace(0.0, 1.0, 1 << 15, dtype=np.float32))
    idx = pj.constant(np.arange(0, 1 << 15, 128))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        ys = [pj.sin(x)[:256], pj.gather(x, idx) * 2.0]   # jacobians of (256, 32768): 32 MiB
    for y in ys:
        for use_pfor in (True, False):
            g.jacobian(y, x, experimental_use_pfor=use_pfor, parallel_iterations=100)
    compiled = pj.function(lambda v: pj.jacobian(lambda u: pj.exp(u)[:256], v))
    for _ in range(3):
        compiled(x)
    pj.hessian(lambda u: pj.sum(pj.sin(u) ** 3), x[:64])
    rows = pj.reshape(x, (256, 128))
    with pj.GradientTape() as b:
        b.watch(rows)
        z = pj.tanh(rows)
    b.batch_jacobian(z, rows)


workload()
print(json.dumps(dict(
    seen, mapped_before=mapped_before, mapped_after=mapped_after,
    environ_import=sorted(set(environ_after_import.items()) ^ set(environ_before.items())),
    environ_use=sorted(set(dict(os.environ).items()) ^ set(environ_before.items())))))
'''


def _run_spy(tmp_path_factory, mode: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(PACKAGE.parent))
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                 "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES"):
        env.pop(name, None)
    out = subprocess.run([sys.executable, "-c", _SPY, str(PACKAGE), mode], capture_output=True,
                         text=True, env=env, cwd=tmp_path_factory.mktemp("fresh"), timeout=600)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                                reason="the spy probes glibc's malloc (mallinfo2)")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> dict:
    return _run_spy(tmp_path_factory, "pforjac")


def test_import_and_use_leave_the_environment_alone(fresh):
    assert fresh["environ_import"] == [], "import pforjac changed os.environ"
    assert fresh["environ_use"] == [], "computing Jacobians changed os.environ"


def test_pforjac_never_resolves_mallopt_nor_any_c_symbol(fresh):
    assert not [s for s, _ in fresh["symbols"] if s in ("mallopt", "malloc_trim")], fresh["symbols"]
    assert [s for s, by_pforjac in fresh["symbols"] if by_pforjac] == []
    assert fresh["libraries"] == []


def test_pforjac_maps_no_memory_and_reads_no_page_map(fresh):
    assert fresh["mappings"] == 0
    assert fresh["pagemap"] == []


def test_import_leaves_glibcs_mmap_threshold_alone(fresh):
    if not fresh["mapped_before"]:
        pytest.skip("glibc's mmap threshold was above 1 MiB before pforjac was imported")
    assert fresh["mapped_after"], \
        "after import pforjac, a 4 MiB malloc came from the heap: the mmap threshold was changed"


def test_the_spy_sees_a_mallopt(tmp_path_factory):
    """The same run, but the script calls mallopt itself after the import: both checks fire
    (so they are not vacuous)."""
    tuned = _run_spy(tmp_path_factory, "self-tune")
    assert "mallopt" in [s for s, _ in tuned["symbols"]]
    if tuned["mapped_before"]:
        assert not tuned["mapped_after"]


# -- static: no module of the package reaches for the process's memory or environment ----------
_FORBIDDEN_MODULES = {"ctypes", "_ctypes", "mmap", "cffi"}
_FORBIDDEN_NAMES = {"mallopt", "malloc_trim", "pythonapi", "PyTraceMalloc_Track",
                    "PyTraceMalloc_Untrack", "madvise", "putenv", "unsetenv"}
_FORBIDDEN_TEXT = ("/proc/self/pagemap", "libc.so")
_ENVIRON_WRITES = {"update", "setdefault", "pop", "popitem", "clear"}


def _is_environ(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _import_offence(node) -> str | None:
    if isinstance(node, ast.Import):
        bad = [a.name for a in node.names if a.name.split(".")[0] in _FORBIDDEN_MODULES]
        return f"import {bad[0]}" if bad else None
    if isinstance(node, ast.ImportFrom) and not node.level \
            and (node.module or "").split(".")[0] in _FORBIDDEN_MODULES:
        return f"from {node.module} import"
    called = getattr(node.func, "attr", getattr(node.func, "id", "")) \
        if isinstance(node, ast.Call) else None
    if called in ("__import__", "import_module") and node.args \
            and isinstance(node.args[0], ast.Constant) \
            and str(node.args[0].value).split(".")[0] in _FORBIDDEN_MODULES:
        return f"imports {node.args[0].value}"
    return None


def _use_offence(node) -> str | None:
    name = getattr(node, "attr", None) if isinstance(node, ast.Attribute) else \
        getattr(node, "id", None)
    if name in _FORBIDDEN_NAMES:
        return f"uses {name}"
    if isinstance(node, ast.Subscript) and _is_environ(node.value) \
            and isinstance(node.ctx, (ast.Store, ast.Del)):
        return "writes os.environ"
    if isinstance(node, ast.Attribute) and node.attr in _ENVIRON_WRITES and _is_environ(node.value):
        return f"os.environ.{node.attr}"
    return None


def _offences(source: str) -> list[str]:
    found = [f"mentions {t}" for t in _FORBIDDEN_TEXT if t in source]
    for node in ast.walk(ast.parse(source)):
        offence = _import_offence(node) or _use_offence(node)
        if offence:
            found.append(f"line {getattr(node, 'lineno', '?')}: {offence}")
    return found


def test_no_module_touches_process_memory_or_environment():
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 20, f"found only {len(modules)} modules under {PACKAGE}"
    found = {str(m.relative_to(PACKAGE)): _offences(m.read_text()) for m in modules}
    assert {m: o for m, o in found.items() if o} == {}


@pytest.mark.parametrize("source", [
    "import ctypes", "import mmap as m", "from ctypes import CDLL", "import ctypes.util",
    "importlib.import_module('mmap')", "__import__('ctypes')", "lib.mallopt(-3, 1)",
    "x = something.pythonapi", "os.environ['MALLOC_ARENA_MAX'] = '2'",
    "os.environ.setdefault('OMP_NUM_THREADS', '1')", "del os.environ['X']", "os.putenv('A', 'b')",
    "open('/proc/self/pagemap', 'rb')", "# reads /proc/self/pagemap\nx = 1",
])
def test_the_scan_catches(source):
    assert _offences(source), f"the scan missed: {source}"


def test_the_scan_passes_plain_code():
    assert _offences("import os\nimport numpy as np\nx = os.environ.get('HOME')\n"
                     "y = np.zeros((3, 4))\n") == []
