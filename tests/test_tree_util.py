"""pforjac.tree_util (the one pytree registry), ravel_pytree, and pytrees of parameters
(a registered dataclass, a namedtuple, a dict) on every entry point, against closed forms."""
import collections
import dataclasses

import numpy as np
import pytest

import pforjac as pj
from pforjac import tree_util
from pforjac.flatten_util import ravel_pytree

NT = collections.namedtuple("NT", "w b")


@tree_util.register_dataclass
@dataclasses.dataclass
class DC:
    w: np.ndarray
    b: np.ndarray
    name: str = dataclasses.field(default="layer", metadata=dict(static=True))


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


tree_util.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, ch: Pair(*ch))


def test_flatten_order_and_round_trip():
    tree = {"b": [1, (2, None)], "a": NT(3, 4),
            "c": collections.OrderedDict([("z", 5), ("y", 6)]), "d": DC(7, 8), "e": Pair(9, 10)}
    leaves, treedef = tree_util.tree_flatten(tree)
    assert leaves == [3, 4, 1, 2, 5, 6, 7, 8, 9, 10]       # dicts sorted, OrderedDict kept
    back = tree_util.tree_unflatten(treedef, leaves)
    assert back["a"] == NT(3, 4) and back["b"] == [1, (2, None)] and back["d"] == DC(7, 8)
    assert list(back["c"]) == ["z", "y"] and isinstance(back["e"], Pair)
    assert treedef.num_leaves == 10
    assert tree_util.tree_structure(tree) == treedef
    assert hash(tree_util.tree_structure(tree)) == hash(treedef)
    assert tree_util.tree_structure(DC(1, 2, "other")) != tree_util.tree_structure(DC(1, 2))


def test_none_is_a_node_without_leaves_and_defaultdict_keeps_its_factory():
    assert tree_util.tree_leaves([None, 1, {"a": None}]) == [1]
    d = collections.defaultdict(list, {"b": 1, "a": 2})
    back = tree_util.tree_map(lambda x: x * 10, d)
    assert back == {"a": 20, "b": 10} and back.default_factory is list


def test_tree_map_over_several_trees_and_is_leaf():
    out = tree_util.tree_map(lambda a, b: a + b, {"x": 1, "y": (2, 3)}, {"x": 10, "y": (20, 30)})
    assert out == {"x": 11, "y": (22, 33)}
    assert tree_util.tree_leaves([(1, 2), (3, 4)], is_leaf=lambda t: isinstance(t, tuple)) == \
        [(1, 2), (3, 4)]
    with pytest.raises(ValueError, match="expected a dict with keys"):
        tree_util.tree_map(lambda a, b: a, {"x": 1}, {"y": 1})


def test_a_none_in_the_first_tree_matches_none_alone_as_in_jax():
    """JAX (jax.tree_util.tree_map, checked in the oracle): None is a node with no
    children, so a value against it is a structure error, never dropped."""
    for first, other in [((None, 1), (2, 3)), ({"a": None}, {"a": 1}),
                         ((1, None), (2, (3, 4)))]:
        with pytest.raises(ValueError, match="expected None"):
            tree_util.tree_map(lambda *xs: xs, first, other)
    assert tree_util.tree_map(lambda a, b: (a, b), (1, None), (2, None)) == ((1, 2), None)
    assert tree_util.tree_map(lambda a, b: (a, b), (1, 2), (10, (20, 30))) == \
        ((1, 10), (2, (20, 30)))             # a leaf of the first tree: a prefix


def test_registration_errors():
    with pytest.raises(ValueError, match="already registered"):
        tree_util.register_pytree_node(Pair, lambda p: ((), None), lambda _, ch: None)
    with pytest.raises(TypeError, match="not a dataclass"):
        tree_util.register_dataclass(Pair)


def test_ravel_pytree_and_a_jacobian_through_unravel():
    tree = {"w": np.arange(6.0).reshape(2, 3), "b": np.array([1.0, 2.0], np.float32)}
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_array_equal(flat, [1.0, 2.0, 0, 1, 2, 3, 4, 5])
    assert flat.dtype == np.float64
    back = unravel(flat)
    assert back["b"].dtype == np.float32 and back["w"].shape == (2, 3)

    def f(theta):                       # sum(w) * b, through unravel
        p = unravel(theta)
        return np.sum(p["w"]) * pj.cast(p["b"], np.float64)
    J = pj.jacrev(f)(flat)
    want = np.zeros((2, 8))
    want[:, 2:] = np.array([[1.0], [2.0]])
    want[[0, 1], [0, 1]] = 15.0
    np.testing.assert_allclose(J, want)
    with pytest.raises(ValueError, match="flat vector of 8 entries"):
        unravel(np.ones(3))


def loss(p):
    return np.sum(np.tanh(p.w) * p.b)


def closed_grad(w, b):
    return (1 - np.tanh(w) ** 2) * b, np.tanh(w)


@pytest.mark.parametrize("kind", ["dataclass", "namedtuple"])
def test_parameters_as_a_dataclass_or_namedtuple_on_every_entry_point(kind):
    w, b = np.array([0.3, -0.7]), np.array([1.5, 2.0])
    make = (lambda w, b: DC(w, b)) if kind == "dataclass" else NT
    p = make(w, b)
    gw, gb = closed_grad(w, b)
    for g in (pj.grad(loss)(p), pj.value_and_grad(loss)(p)[1], pj.vjp(loss, p)[1],
              pj.vjp_fn(loss, p)[1](np.array(1.0))[0], pj.jacrev(loss)(p), pj.jacfwd(loss)(p),
              pj.jacobian(loss, p), pj.function(pj.grad(loss))(p)):
        assert type(g) is type(p)
        np.testing.assert_allclose(np.asarray(g.w), gw)
        np.testing.assert_allclose(np.asarray(g.b), gb)
    H = pj.hessian(loss, p)                       # H.w.w = diag(-2 tanh sech^2 b), H.w.b = diag
    sech2 = 1 - np.tanh(w) ** 2
    np.testing.assert_allclose(H.w.w, np.diag(-2 * np.tanh(w) * sech2 * b))
    np.testing.assert_allclose(H.w.b, np.diag(sech2))
    np.testing.assert_allclose(H.b.b, np.zeros((2, 2)))
    v = make(np.ones(2), np.zeros(2))
    _, hv = pj.hvp(loss, p, v)
    np.testing.assert_allclose(hv.w, -2 * np.tanh(w) * sech2 * b)
    _, t = pj.jvp(loss, p, v)
    np.testing.assert_allclose(float(t), np.sum(gw))
    batch = make(np.stack([w, 2 * w]), np.stack([b, b]))
    per = pj.vmap(pj.grad(loss))(batch)
    np.testing.assert_allclose(per.w[1], closed_grad(2 * w, b)[0])


def test_an_unregistered_dataclass_names_the_registration():
    @dataclasses.dataclass
    class Plain:
        w: np.ndarray
    with pytest.raises(TypeError, match="register_dataclass"):
        pj.grad(lambda p: np.sum(p.w))(Plain(np.ones(2)))


def test_ravel_pytree_keeps_a_python_float_leaf_beside_a_tensor_exact():
    # a Python float leaf became a float32 tensor before the cast to the common float64
    flat, unravel = ravel_pytree([pj.constant(np.ones(2)), 0.1])
    assert flat.dtype == np.float64 and flat.numpy()[2] == 0.1
    assert float(unravel(flat)[1]) == 0.1


def test_register_dataclass_refuses_a_field_in_neither_list():
    """A field named neither data nor meta would be dropped by every flatten (its array
    lost from tree_map and from derivatives): refused at registration, as JAX does."""
    @dataclasses.dataclass
    class Partial:
        a: object
        b: object = None

    with pytest.raises(ValueError, match=r"missing: \['b'\]"):
        tree_util.register_dataclass(Partial, data_fields=["a"], meta_fields=[])
