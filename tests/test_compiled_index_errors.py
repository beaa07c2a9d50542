"""An index out of bounds in compiled code gets numpy's error, with the index and the axis,
and a note naming the op, on either backend and on every call path (the first call, the
lean path of a call that ran before, a specialized callable); a good call afterwards still
runs the compiled code."""
import re

import numpy as np
import pytest

import pforjac as pj
import pforjac.numpy as pnp

BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not pj.compiled.numba_backend.available(), reason="numba is not installed"))]


def _read(x, i):
    return pnp.sin(x[i]) * 2.0


def _read_along(x, i):
    return pnp.take_along_axis(x, i, axis=1) + 1.0


def _gradient_of_read(x, i):          # the backward pass scatters into the read positions
    return pj.grad(lambda y: pnp.sum(y[i] ** 2))(x)


CASES = [
    (_read, np.arange(5.0), np.array([0, 4, -5]), np.array([1, 7, 2]),
     r"^index 7 is out of bounds for axis 0 with size 5$", "gather"),
    (_read, np.arange(5.0), np.array([0, 4, -5]), np.array([1, -6]),
     r"^index -6 is out of bounds for axis 0 with size 5$", "gather"),
    (_read_along, np.arange(6.0).reshape(2, 3), np.array([[0, 2], [1, 0]]),
     np.array([[0, 2], [3, 0]]), r"^index 3 is out of bounds for axis 1 with size 3$",
     "take_along_axis"),
    (_gradient_of_read, np.arange(5.0), np.array([0, 4, 4]), np.array([0, 9, 4]),
     r"^index 9 is out of bounds for axis 0 with size 5$", "gather"),
]


def _check(caught, pattern, op):
    assert re.search(pattern, str(caught.value))
    (note,) = caught.value.__notes__
    assert re.fullmatch(rf"in compiled code .*line \d+ of its source\(\): pforjac\.{op} of "
                        r"inputs of shapes .*", note)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, x, good, bad, pattern, op", CASES,
                         ids=["gather", "gather_negative", "take_along", "grad_scatter"])
def test_an_index_out_of_bounds_is_named_on_every_call_path(backend, fn, x, good, bad,
                                                            pattern, op):
    expected = np.asarray(pj.function(fn, backend="numpy")(x, good))
    first = pj.function(fn, backend=backend)
    with pytest.raises(IndexError) as caught:          # the first call (the general path)
        first(x, bad)
    _check(caught, pattern, op)

    f = pj.function(fn, backend=backend)
    np.testing.assert_array_equal(f(x, good), expected)
    np.testing.assert_array_equal(f(x, good), expected)   # (now the lean entry's)
    with pytest.raises(IndexError) as caught:
        f(x, bad)
    _check(caught, pattern, op)
    np.testing.assert_array_equal(f(x, good), expected)

    fast = f.specialize(x, good)
    with pytest.raises(IndexError) as caught:
        fast(x, bad)
    _check(caught, pattern, op)
    np.testing.assert_array_equal(fast(x, good), expected)
