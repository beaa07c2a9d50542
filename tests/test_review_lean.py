"""A compiled function's lean entries (compiled/lean_call.py, lean_source.py) and
`Function.specialize` against the function's own values, over arguments an entry must not
take as its own: each call gives numpy's values, as numpy arrays, whichever way it runs."""
import copy
import pickle

import numpy as np
import pytest

import pforjac as pj

pnp = pj.numpy


def _body(params, xs, t):
    return {"y": params["w"] * xs[0] + t * pnp.sum(xs[1], axis=0), "s": pnp.sum(xs[0]) * t}


def _numpy(params, xs, t):
    t = float(np.asarray(t))
    return {"y": params["w"] * xs[0] + t * np.sum(xs[1], axis=0), "s": np.sum(xs[0]) * t}


def _args(w=None):
    rng = np.random.default_rng(0)
    return {"w": rng.normal(size=3) if w is None else w}, [rng.normal(size=3),
                                                           rng.normal(size=(2, 3))], 0.5


def _check(got, args):
    want = _numpy(*args)
    assert type(got) is dict and set(got) == set(want)
    for k in want:
        assert isinstance(got[k], (np.ndarray, np.generic)), (k, type(got[k]))
        np.testing.assert_allclose(got[k], want[k], rtol=1e-15, err_msg=k)


_EQUAL_DTYPES = {"unpickled": pickle.loads(pickle.dumps(np.dtype(np.float64))),
                 "deep copy": copy.deepcopy(np.dtype(np.float64)),
                 "metadata": np.dtype(np.float64, metadata={"unit": "m"}),
                 "native order": np.dtype(np.float64).newbyteorder("=")}


@pytest.mark.parametrize("name", sorted(_EQUAL_DTYPES))
@pytest.mark.parametrize("first", ["canonical", "other"])
def test_an_array_whose_dtype_equals_but_is_not_the_entrys(name, first):
    """Arrays unpickled (from a process pool, a dask worker) have a float64 dtype equal to
    np.dtype(np.float64) but not that object: the entry's `dtype is D` check refuses them,
    and the call must take the general path, not hand back the entry's MISS."""
    other = _args(np.arange(3.0).astype(_EQUAL_DTYPES[name]))
    assert other[0]["w"].dtype is not np.dtype(np.float64)
    canonical = _args(np.arange(3.0))
    f = pj.function(_body)
    calls = [canonical, other] if first == "canonical" else [other, canonical]
    for args in calls * 2:
        _check(f(*args), args)


def test_unpickled_arguments_in_a_specialized_call():
    f = pj.function(_body)
    fast = f.specialize(*_args(np.arange(3.0)))
    args = pickle.loads(pickle.dumps(_args(np.arange(3.0))))
    _check(fast(*args), args)
    _check(f(*args), args)
