"""Which outputs generated numpy code returns C-ordered (compiled/output_layouts.py): the
claim holds for inputs of any layout, a transposed or buffer-laid-out output is never
claimed, and a lean call hands every output out C-ordered and read-only, bit for bit the
general path's result."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.output_layouts import c_ordered_outputs

pnp = pj.numpy
RNG = np.random.default_rng(5)


def _mlp_loss(params, x, y):
    h = pnp.tanh(x @ params["w0"] + params["b0"])
    h = h @ params["w1"] + params["b1"]
    top = pnp.max(h)
    return pnp.log(pnp.sum(pnp.exp(h - top))) + top - pnp.sum(h * y)


def _mlp_args(order: str):
    params = {"w0": RNG.normal(size=(4, 32)), "b0": RNG.normal(size=32),
              "w1": RNG.normal(size=(32, 3)), "b1": RNG.normal(size=3)}
    x = np.asarray(RNG.normal(size=(64, 4)), order=order)
    y = np.eye(3)[RNG.integers(0, 3, 64)]
    return params, x, y


def _layouts(shape):
    """The same values as a C-ordered array, an F-ordered one and a transposed view."""
    a = RNG.normal(size=shape)
    return [a, np.asfortranarray(a), np.ascontiguousarray(a.T).T]


CASES = {   # name: (function, argument shapes, positions that must not be claimed)
    "transposed output": (lambda x: x.T * 1.0, [(40, 30)], set()),
    "transpose of a ufunc's result": (lambda x: (x * 2.0).T, [(40, 30)], {0}),
    "in place into a transposed buffer": (lambda x: pnp.exp(x.T * 2.0) + 1.0, [(40, 30)], set()),
    "an input handed back": (lambda x, y: (x, y + 1.0), [(40, 30), (40, 30)], set()),
    "outer product of inputs": (lambda a, b: a[:, :, None] * b[:, None, :],
                                [(64, 32), (64, 8)], set()),
    "an output and its transpose": (lambda x: (pnp.sin(x), pnp.sin(x).T), [(40, 30)], {1}),
    "per-example jacobian": (pj.vmap(pj.jacrev(lambda z: pnp.tanh(z) * z[:1])),
                             [(32, 5)], set()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_claimed_outputs_are_c_ordered_whatever_the_inputs(name):
    fn, shapes, unclaimed = CASES[name]
    f = pj.function(fn)
    variants = list(zip(*[_layouts(s) for s in shapes]))
    for args in variants:
        want = f(*args)                                   # (the general path)
        compiled, arrays, _, _ = f._compiled(args, {})
        claimed = c_ordered_outputs(compiled.program, compiled.exact)
        assert not claimed & unclaimed
        outs = compiled.code(*arrays, compiled._consts)
        for k in claimed:
            assert outs[k].flags.c_contiguous, (name, k, [a.strides for a in args])
        got = f(*args)                                    # (the lean entry)
        for g, w in zip(pj.tree_util.tree_leaves(got), pj.tree_util.tree_leaves(want)):
            assert g.flags.c_contiguous and not g.flags.writeable
            assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize("order", ["C", "F"])
def test_per_example_gradients_are_all_claimed(order):
    f = pj.function(pj.vmap(pj.grad(_mlp_loss), in_axes=(None, 0, 0)))
    args = _mlp_args(order)
    first = f(*args)
    compiled, arrays, _, _ = f._compiled(args, {})
    assert c_ordered_outputs(compiled.program, compiled.exact) == frozenset(range(4))
    outs = compiled.code(*arrays, compiled._consts)
    assert all(o.flags.c_contiguous for o in outs)
    again = f(*args)
    for k in first:
        assert again[k].tobytes() == first[k].tobytes() and not again[k].flags.writeable
        with pytest.raises(ValueError):
            again[k].flags.writeable = True


def _gram(x):
    return pnp.tanh(x @ x.T)        # (C-ordered: its outputs are claimed, made afresh)


ALIASING = {   # name: function of x (40, 30) whose outputs share memory or are borrowed
    "an output twice": lambda x: (lambda y: (y, y))(_gram(x)),
    "an output and its reshape": lambda x: (lambda y: (y, y.reshape(-1)))(_gram(x)),
    "an output and its transpose": lambda x: (lambda y: (y, y.T))(_gram(x)),
    "an input and a constant": lambda x: (x, pnp.ones(3), _gram(x)),
}


@pytest.mark.parametrize("name", list(ALIASING))
def test_lean_outputs_stay_read_only_when_they_share_memory(name):
    f = pj.function(ALIASING[name])
    x = RNG.normal(size=(40, 30))
    keep = x.copy()
    want = [np.array(o) for o in f(x)]
    compiled = f._compiled((x,), {})[0]
    assert len(c_ordered_outputs(compiled.program, compiled.exact)) >= 1
    for _ in range(2):
        got = f(x)
        assert f._lean
        for g, w in zip(got, want):
            assert g.tobytes() == w.tobytes() and not g.flags.writeable
            with pytest.raises(ValueError):
                g.flags.writeable = True
            with pytest.raises(ValueError):
                g[...] = 0.0
    assert x.flags.writeable and x.tobytes() == keep.tobytes()   # (the caller's array)


def test_fresh_outputs_are_views_of_read_only_owners():
    f = pj.function(pj.vmap(pj.grad(_mlp_loss), in_axes=(None, 0, 0)))
    args = _mlp_args("C")
    f(*args)
    for g in f(*args).values():
        assert type(g.base) is np.ndarray and g.base.flags.owndata and not g.base.flags.writeable
