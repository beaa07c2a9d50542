"""pforjac.function's lean call path for pytree arguments (compiled/lean_call.py): plain
dicts (str keys), lists and tuples of numpy arrays and floats, nested, run straight into
the compiled code after the first call, with the general path's results bit for bit, and
never take an entry made for another structure, key order, dtype, shape, layout, backend
or set of rules; Tensor leaves, tapes and traces keep the general path's behaviour."""
import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.compiled import lean_call
from pforjac.compiled.numba_backend import available as numba_available
from pforjac.tree_util import tree_flatten

pnp = pj.numpy
RNG = np.random.default_rng(5)
BACKENDS = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not numba_available(), reason="numba is not installed"))]


def _loss(params, x, y):
    h = pnp.tanh(x @ params["w0"] + params["b0"])
    out = h @ params["w1"] + params["b1"]
    return pnp.sum((out - y) ** 2) * params["scale"][0]


def _forward(params, x, y):
    return {"out": x @ params["w0"] + params["b0"] * params["scale"][0], "y": y * 2.0}


def _params(dtype=np.float64):
    return {"w0": RNG.normal(size=(3, 5)).astype(dtype), "b0": RNG.normal(size=5).astype(dtype),
            "w1": RNG.normal(size=(5, 2)).astype(dtype), "b1": RNG.normal(size=2).astype(dtype),
            "scale": [np.array(0.5, dtype)]}


def _per_example(backend):
    return pj.function(pj.vmap(pj.grad(_loss), in_axes=(None, 0, 0)), backend=backend)


def _data(dtype=np.float64, batch=4):
    return RNG.normal(size=(batch, 3)).astype(dtype), RNG.normal(size=(batch, 2)).astype(dtype)


def _fresh_general(f, args):
    """What the general path gives for `args` (a new Function: its first call is general)."""
    return pj.function(f._fn, backend=f._backend)(*args)


def _same(got, want):
    """The same tree, the same leaf types, dtypes, shapes and bits, read-only arrays."""
    g_leaves, g_tree = tree_flatten(got)
    w_leaves, w_tree = tree_flatten(want)
    assert g_tree == w_tree and repr(g_tree) == repr(w_tree)
    assert [type(v) for v in _walk_types(got)] == [type(v) for v in _walk_types(want)]
    for g, w in zip(g_leaves, w_leaves):
        assert type(g) is type(w) and g.dtype == w.dtype and np.shape(g) == np.shape(w)
        assert np.asarray(g).tobytes() == np.asarray(w).tobytes()
        if type(g) is np.ndarray:
            assert not g.flags.writeable and not w.flags.writeable
            with pytest.raises(ValueError):
                g.flags.writeable = True


def _walk_types(tree):
    """Every node and leaf of `tree`, depth first (dicts in their own order)."""
    yield tree
    if type(tree) is dict:
        yield tuple(tree)                     # (the keys in order, as a tuple to compare)
        for v in tree.values():
            yield from _walk_types(v)
    elif type(tree) in (list, tuple):
        for v in tree:
            yield from _walk_types(v)


def _lean_hit(f, *args):
    """The result of a call that must run through the lean entry its key names (the
    general path is made to fail for it)."""
    before = f.trace_count
    assert f._lean.get(lean_call.lean_key(args)) is not None

    def general(*_):
        raise AssertionError("the general path ran")
    f._general_call = general
    try:
        out = f(*args)
    finally:
        del f._general_call
    assert f.trace_count == before
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_dict_of_parameters_runs_lean_with_the_general_results(backend):
    f = _per_example(backend)
    params, (x, y) = _params(), _data()
    first = f(params, x, y)
    got = _lean_hit(f, params, x, y)
    _same(got, first)
    _same(got, _fresh_general(f, (params, x, y)))
    assert list(got) == sorted(params)              # the general path's order: sorted keys
    assert type(got["scale"]) is list and got["w0"].shape == (4, 3, 5)
    # the values: the gradient of example 0 by central differences, float64
    h = 1e-6
    for name in ("w0", "b1"):
        flat = params[name].reshape(-1)
        for i in (0, flat.size - 1):
            up, down = params[name].copy(), params[name].copy()
            up.reshape(-1)[i] += h
            down.reshape(-1)[i] -= h
            loss = [_loss({**params, name: p}, pj.constant(x[0]), pj.constant(y[0])).numpy()
                    for p in (up, down)]
            np.testing.assert_allclose(got[name][0].reshape(-1)[i], (loss[0] - loss[1]) / (2 * h),
                                       rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_lists_tuples_none_and_floats(backend):
    def fn(tree, s):
        (a, [b, c]), d, _ = tree
        return {"z": [a * s, (b + c["k"],)], "a": pnp.sum(d * c["j"]), "n": None}
    f = pj.function(fn, backend=backend)
    tree = ((np.arange(3.0), [np.ones(3), {"k": np.full(3, 2.0), "j": 3.0}]), np.ones((2, 3)),
            None)
    first = f(tree, 2.5)
    got = _lean_hit(f, tree, 2.5)
    _same(got, first)
    _same(got, _fresh_general(f, (tree, 2.5)))
    assert list(got) == ["a", "n", "z"] and got["n"] is None and type(got["a"]) is np.float64
    np.testing.assert_array_equal(got["z"][0], np.arange(3.0) * 2.5)
    assert got["a"] == 18.0
    f(tree, -0.0)                                  # another float value: another entry
    assert len(f._lean) == 2
    np.testing.assert_array_equal(_lean_hit(f, tree, -0.0)["z"][0],
                                  np.arange(3.0) * -0.0)
    assert np.signbit(f(tree, -0.0)["z"][0][1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_another_structure_order_dtype_shape_or_layout_is_another_entry(backend):
    # (on numba a small function: each new signature compiles there)
    f = _per_example(backend) if backend == "numpy" else pj.function(_forward, backend=backend)
    params, (x, y) = _params(), _data()
    f(params, x, y), f(params, x, y)
    reordered = dict(reversed(list(params.items())))
    added = {**params, "unused": np.ones(2)}
    as_f32 = {**params, "scale": [np.array(0.5, np.float32)]}
    longer = {**params, "b1": np.ones(3)[:2].copy(), "w1": np.ones((5, 3))[:, :2]}  # strided
    fortran = {**params, "w0": np.asfortranarray(params["w0"])}
    as_tuple = {**params, "scale": (params["scale"][0],)}
    variants = [(reordered, x, y), (added, x, y), (as_f32, x, y), (longer, x, y),
                (fortran, x, y), (as_tuple, x, y), (params, x[:3], y[:3]),
                (params, np.asfortranarray(x), y)]
    keys = {lean_call.lean_key((params, x, y))}
    for args in variants:
        key = lean_call.lean_key(args)
        assert key is not None and key not in keys      # a new key: the general path
        keys.add(key)
        first = f(*args)                                # (the general path: a new key)
        _same(_lean_hit(f, *args), first)
    assert len(f._lean) == len(variants) + 1
    # same signature as the first call (key order, layout): no new trace for those
    # traces: the first, the added key, float32, a tuple for a list, batch 3 (another key
    # order, another layout: the same signature, one trace)
    assert f.trace_count == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tensor_leaf_gives_tensors_and_no_entry(backend):
    f = _per_example(backend)
    params, (x, y) = _params(), _data()
    f(params, x, y), f(params, x, y)
    mixed = {**params, "b0": pj.constant(params["b0"])}
    assert lean_call.lean_key((mixed, x, y)) is None
    out = f(mixed, x, y)
    assert isinstance(out["w0"], pj.Tensor)
    np.testing.assert_array_equal(out["w0"].numpy(), f(params, x, y)["w0"])
    assert len(f._lean) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_under_a_tape_or_a_trace_the_body_runs(backend):
    f = pj.function(lambda p, x: pnp.sum(pnp.sin(x * p["a"]) * p["b"][0]), backend=backend)
    p, x = {"a": np.array([0.5, 2.0]), "b": [np.array(3.0)]}, np.array([0.3, 1.2])
    f(p, x), f(p, x)
    a = pj.constant(p["a"])
    with pj.GradientTape() as tape:                # the entry exists: still recorded
        tape.watch(a)
        y = f({"a": a, "b": p["b"]}, x)
        z = f(p, x)                                 # arrays alone: Tensors under a tape
    assert isinstance(z, pj.Tensor)
    np.testing.assert_allclose(tape.gradient(y, a).numpy(), 3.0 * np.cos(x * p["a"]) * x,
                               rtol=1e-12)
    g = pj.grad(lambda a: f({"a": a, "b": p["b"]}, x))(p["a"])
    np.testing.assert_allclose(g, 3.0 * np.cos(x * p["a"]) * x, rtol=1e-12)
    outer = pj.function(lambda q: pj.grad(lambda a: f({"a": a, "b": q["b"]}, x))(q["a"]),
                        backend=backend)
    np.testing.assert_allclose(outer(p), g, rtol=1e-12)
    np.testing.assert_allclose(outer(p), g, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_changed_rules_are_not_served_from_an_old_entry(backend):
    f = pj.function(lambda p: p["a"] + p["b"][0], backend=backend)
    p = {"a": np.ones(3), "b": [np.arange(3.0)]}
    f(p), f(p)
    assert f.trace_count == 1
    core.rules_changed("a rule registered since")
    _same(f(p), _fresh_general(f, (p,)))
    assert f.trace_count == 2


@pytest.mark.skipif(not numba_available(), reason="numba is not installed")
def test_a_changed_config_backend_is_not_served_from_an_old_entry():
    f = pj.function(pj.vmap(pj.grad(_loss), in_axes=(None, 0, 0)))
    params, (x, y) = _params(), _data()
    saved = pj.config.backend
    try:
        pj.config.backend = "numpy"
        f(params, x, y), f(params, x, y)
        assert {e.compiled.backend for e in f._lean.values()} == {"numpy"}
        pj.config.backend = "numba"
        got = f(params, x, y)
        assert {e.compiled.backend for e in f._lean.values()} == {"numba"}
        _same(_lean_hit(f, params, x, y), got)
    finally:
        pj.config.backend = saved


def test_a_mutated_container_is_read_again():
    f = pj.function(lambda p: p["a"] * p["b"])
    p = {"a": np.ones(2), "b": np.full(2, 2.0)}
    f(p), f(p)
    p["b"] = np.full(2, 5.0)                      # same key: the new array is read
    np.testing.assert_array_equal(_lean_hit(f, p), [5.0, 5.0])
    p["b"] = np.full(2, 5.0, np.float32)          # another dtype: another key
    assert f(p).dtype == np.float64 and len(f._lean) == 2 and f.trace_count == 2
    np.testing.assert_array_equal(_lean_hit(f, p), [5.0, 5.0])


def test_output_trees_of_every_kind_come_back_as_the_general_path_builds_them():
    import collections
    pair = collections.namedtuple("pair", "a b")

    def fn(p, empty):
        a = p["a"]
        return {2: a * 2.0, "k": (a + 1.0,), 1.5: [], "o": collections.OrderedDict(
            [("z", a), ("y", pnp.sum(a))]), "t": pair(a, {}), "e": empty}
    f = pj.function(fn)
    args = ({"a": np.arange(3.0)}, {"none": None, "list": [], "tuple": ()})
    first = f(*args)
    got = _lean_hit(f, *args)
    _same(got, first)
    _same(got, _fresh_general(f, args))
    assert type(got["o"]) is collections.OrderedDict and list(got["o"]) == ["z", "y"]
    assert type(got["t"]) is pair and got["e"] == {"list": [], "none": None, "tuple": ()}
    np.testing.assert_array_equal(got[2], [0.0, 2.0, 4.0])
