"""The linear maps `pj.vjp_fn` and `pj.linearize` return pickle as the call that made them
(pforjac.pickling.Remade): the map remade from the pickle is the map at the primals it
was made at, even when the caller changes those primals in place afterwards (an
optimizer's step), as the map in this process stays."""
import pickle

import numpy as np
import pytest

import pforjac as pj
import pickling_workers as w

X = np.linspace(-0.7, 0.9, 6)


def _maps(x):
    return {"vjp_fn": pj.vjp_fn(w.heat, x)[1], "linearize": pj.linearize(w.heat, x)[1]}


def _product(name, fn, v):
    out = fn(v)
    return np.asarray(out[0] if name == "vjp_fn" else out)     # (vjp_fun: one per primal)


@pytest.mark.parametrize("name", ["vjp_fn", "linearize"])
def test_a_primal_changed_in_place_after_the_map_was_made(name):
    x = X.copy()
    fn = _maps(x)[name]
    v = np.cos(np.arange(6.0))
    here = _product(name, fn, v)
    x += 0.5                                          # numpy: the step, in place
    remade = pickle.loads(pickle.dumps(fn))
    np.testing.assert_array_equal(_product(name, fn, v), here)
    np.testing.assert_array_equal(_product(name, remade, v), here)
    assert not np.array_equal(_product(name, _maps(x)[name], v), here)   # (the step matters)


def test_a_tensor_primal_assigned_into_after_the_map_was_made():
    t = pj.constant(X)
    _, fn = pj.vjp_fn(w.heat, t)
    v = pj.constant(np.cos(np.arange(6.0)))
    here = fn(v)[0].numpy()
    t[...] = 2.0                                       # rebinds t to another value
    np.testing.assert_array_equal(fn(v)[0].numpy(), here)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(fn))(v)[0].numpy(), here)
