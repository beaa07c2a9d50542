"""pj.grad, value_and_grad, jacrev, jacfwd (JAX's signatures) over numpy-written functions,
checked against closed forms; vectorized_map's broadcast of a unit first dimension."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

X0 = np.array([0.3, -0.7, 1.1])
Y0 = np.array([[0.5, 1.5], [2.0, -1.0]])


def f(x, y):
    return np.sum(np.sin(x)) * np.sum(y ** 2)


def test_grad_argnums_int_and_tuple():
    sx, sy = np.sum(np.sin(X0)), np.sum(Y0 ** 2)
    np.testing.assert_allclose(np.asarray(pj.grad(f)(X0, Y0)), np.cos(X0) * sy)
    np.testing.assert_allclose(np.asarray(pj.grad(f, argnums=1)(X0, Y0)), 2 * Y0 * sx)
    gx, gy = pj.grad(f, argnums=(0, 1))(X0, Y0)
    np.testing.assert_allclose(np.asarray(gy), 2 * Y0 * sx)
    (gy_only,) = pj.grad(f, argnums=(1,))(X0, Y0)
    assert gy_only.shape == (2, 2) and gx.dtype == np.float64
    assert pj.grad(f, argnums=-1)(X0, Y0).shape == (2, 2)


def test_grad_of_pytrees_and_has_aux():
    def loss(params, scale):
        return scale * (np.sum(params["w"] ** 2) + params["b"][0] ** 3), "aux"
    params = {"w": np.array([1.0, 2.0]), "b": [np.array(2.0)]}
    g, aux = pj.grad(loss, has_aux=True)(params, 0.5)
    assert aux == "aux" and set(g) == {"w", "b"} and isinstance(g["b"], list)
    np.testing.assert_allclose(np.asarray(g["w"]), [1.0, 2.0])
    np.testing.assert_allclose(np.asarray(g["b"][0]), 0.5 * 3 * 4.0)
    (value, aux), g = pj.value_and_grad(loss, has_aux=True)(params, 0.5)
    assert float(value) == pytest.approx(0.5 * (5 + 8)) and aux == "aux"


def test_grad_is_differentiable_again_and_of_python_floats():
    assert float(pj.grad(pj.grad(lambda x: x ** 3))(2.0)) == pytest.approx(12.0)
    assert pj.grad(lambda x: x ** 2)(1.5).dtype == np.float64      # numpy's reading


def test_grad_refuses_as_jax_does():
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions\. "
                                        r"Output had shape: \(3,\)"):
        pj.grad(np.sin)(X0)
    with pytest.raises(TypeError, match="requires real- or complex-valued inputs"):
        pj.grad(lambda n: n * 1.0)(np.arange(3))
    with pytest.raises(ValueError, match="argnums 2 asks for positional argument 2"):
        pj.grad(f, argnums=2)(X0, Y0)
    with pytest.raises(TypeError, match="has_aux=True\\) needs the function to return a pair"):
        pj.grad(lambda x: np.sum(x), has_aux=True)(X0)


def test_an_unused_input_gets_zeros_as_in_jax():
    g = pj.grad(lambda x, y: np.sum(x), argnums=(0, 1))(X0, Y0)
    np.testing.assert_array_equal(np.asarray(g[1]), np.zeros((2, 2)))
    np.testing.assert_array_equal(np.asarray(pj.grad(lambda x: 3.0)(X0)), np.zeros(3))


@pytest.mark.parametrize("transform", [pj.jacrev, pj.jacfwd])
def test_jacrev_jacfwd_blocks_and_structure(transform):
    def g(x, y):
        return {"a": np.sin(x) * y[0, 0], "b": np.sum(y, axis=0)}
    J = transform(g, argnums=(0, 1))(X0, Y0)
    assert set(J) == {"a", "b"} and len(J["a"]) == 2
    np.testing.assert_allclose(np.asarray(J["a"][0]), np.diag(np.cos(X0)) * Y0[0, 0])
    want = np.zeros((3, 2, 2))
    want[:, 0, 0] = np.sin(X0)
    np.testing.assert_allclose(np.asarray(J["a"][1]), want)
    ones = np.zeros((2, 2, 2))
    ones[0, :, 0] = ones[1, :, 1] = 1.0
    np.testing.assert_allclose(np.asarray(J["b"][1]), ones)
    np.testing.assert_array_equal(np.asarray(J["b"][0]), np.zeros((2, 3)))


@pytest.mark.parametrize("transform", [pj.jacrev, pj.jacfwd])
def test_jacobians_compose_into_hessians_and_take_aux(transform):
    def energy(x):
        return np.sum(x ** 3) + x[0] * x[1]
    H = transform(pj.jacrev(energy))(X0)
    want = np.diag(6 * X0)
    want[0, 1] = want[1, 0] = 1.0
    np.testing.assert_allclose(np.asarray(H), want)
    J, aux = transform(lambda x: (x ** 2, np.sum(x)), has_aux=True)(X0)
    np.testing.assert_allclose(np.asarray(J), np.diag(2 * X0))
    assert float(aux) == pytest.approx(X0.sum())


def test_vectorized_map_broadcasts_a_unit_first_dimension():
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    row = pj.constant([[10.0, 20.0]])
    out = pj.vectorized_map(lambda e: e[0] * e[1], (x, row))
    np.testing.assert_array_equal(out.numpy(), np.arange(6.0).reshape(3, 2) * [10.0, 20.0])
    with pytest.raises(ValueError, match="same first dimension \\(or 1, broadcast\\)"):
        pj.vectorized_map(lambda e: e[0], (x, pj.constant(np.ones((2, 2)))))
    alone = pj.vectorized_map(lambda r: r * 2.0, row)        # all of size 1: one iteration
    np.testing.assert_array_equal(alone.numpy(), [[20.0, 40.0]])
