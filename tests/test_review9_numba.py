"""Adversarial checks of the numba backend's arrays of zeros (`K.zeros`, numba_alloc.py):
what numba's disk cache keeps of them when their code changes."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
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


def _stored(x):
    from pforjac.ops.indexing import scatter_add_p
    return scatter_add_p.bind(x * 1.0, np.array([3, 0, 2]), axis=1, size=4, unique=True)


@pytest.mark.parametrize("dtype", [np.complex128, np.float32])
def test_a_stored_scatter_gives_numpys_bits_for_signed_zeros_nan_payloads_and_infinities(dtype):
    """(A guard, true before and after: the store of `g + 0` is the addition into +0 bit for
    bit, NaN payloads and signs included, in the real and imaginary parts.)"""
    import pforjac as pj
    if dtype == np.complex128:
        x = np.array([[complex(-0.0, -0.0), complex(np.inf, -0.0), complex(-0.0, np.nan)]])
    else:
        x = np.array([[-0.0, -np.inf, 0.0]], dtype)
        x.view(np.uint32)[0, 2] = 0xFFC00005            # a negative NaN with a payload
    got = pj.function(_stored, backend="numba")(x)
    want = pj.function(_stored, backend="numpy")(x)
    assert got.dtype == want.dtype == dtype
    bits = np.uint32 if dtype == np.float32 else np.uint64
    np.testing.assert_array_equal(got.view(bits), want.view(bits))
    if dtype == np.float32:     # x's -0.0 stored at 3 as +0.0; the NaN kept, payload and sign
        assert not np.signbit(got[0, 3]) and got.view(bits)[0, 2] == 0xFFC00005
    else:                       # x's (-0, -0) at 3, (inf, -0) at 0: every zero part is +0.0
        assert not np.signbit([got[0, 3].real, got[0, 3].imag, got[0, 0].imag]).any()
