"""Adversarial checks of the numba backend's arrays of zeros (`K.zeros`, numba_alloc.py):
what numba's disk cache keeps of them when their code changes."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import pforjac

pytest.importorskip("numba")

_MESSAGE = textwrap.dedent("""
    import numpy as np
    from pforjac.compiled.numba_backend import kernels
    try:
        kernels().zeros((-1, 2), np.float64)
    except ValueError as e:
        print(e)
""")


def test_an_edit_of_the_zeros_code_is_not_hidden_by_numbas_cache_of_the_kernel(tmp_path):
    """numba keys a function's disk cache by the file defining it: `K.zeros`, whose code is
    numba_alloc.py's, must be compiled again when that file changes, not loaded as it was."""
    package = os.path.dirname(pforjac.__file__)
    shutil.copytree(package, tmp_path / "pforjac", ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PFORJAC_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_CACHE_DIR", None)

    def message():
        return subprocess.run([sys.executable, "-c", _MESSAGE], cwd=tmp_path, env=env,
                              capture_output=True, text=True, check=True).stdout.strip()

    assert message().startswith("zeros: a negative dimension")          # compiled, cached
    source = tmp_path / "pforjac" / "compiled" / "numba_alloc.py"
    text = source.read_text()
    assert text.count("zeros: a negative dimension") == 1
    source.write_text(text.replace("zeros: a negative dimension", "zeros: a dimension below zero"))
    assert message().startswith("zeros: a dimension below zero")
