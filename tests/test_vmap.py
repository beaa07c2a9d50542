"""pj.vmap, vjp_fn and linearize: values against JAX's (tests/data/vmap_jax.npz, made by
tests/data/make_vmap_reference.py from the cases in tests/vmap_cases.py), closed forms,
and the errors JAX gives."""
import pathlib
import types
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import tree_util
from pforjac.flatten_util import ravel_pytree

import vmap_cases

REFERENCE = np.load(pathlib.Path(__file__).parent / "data" / "vmap_jax.npz")
DATA = {k.split("/", 1)[1]: REFERENCE[k] for k in REFERENCE.files if k.startswith("input/")}
T = types.SimpleNamespace(vmap=pj.vmap, grad=pj.grad, jacrev=pj.jacrev, jacfwd=pj.jacfwd,
                          vjp=pj.vjp_fn, linearize=pj.linearize, ravel_pytree=ravel_pytree)
CASES = vmap_cases.cases(np, T, DATA)


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases_give_jaxs_values(name):
    leaves = tree_util.tree_leaves(CASES[name]())
    want = sorted((k for k in REFERENCE.files if k.startswith(name + "/")),
                  key=lambda k: int(k.rsplit("/", 1)[1]))
    assert len(leaves) == len(want)
    for leaf, key in zip(leaves, want):
        got = np.asarray(leaf)
        assert got.shape == REFERENCE[key].shape, key
        np.testing.assert_allclose(got, REFERENCE[key], rtol=1e-10, atol=1e-12, err_msg=key)


def test_per_example_gradients_in_a_compiled_function_have_no_fallback():
    loss = vmap_cases.mlp_loss(np)
    params = {k: DATA[k] for k in ("w0", "b0", "w1", "b1")}
    f = pj.function(pj.vmap(pj.grad(loss), in_axes=(None, 0, 0)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = f(params, DATA["X"], DATA["Y"])
        got_again = f(params, DATA["X"], DATA["Y"])          # the cached program
    for k in params:
        want = REFERENCE[f"per_example_grads/{sorted(params).index(k)}"]
        np.testing.assert_allclose(np.asarray(got[k]), want, rtol=1e-10)
        np.testing.assert_allclose(np.asarray(got_again[k]), want, rtol=1e-10)
    assert "gather" not in str(f.program(params, DATA["X"], DATA["Y"]))   # slices: no copy


def test_chunk_size_gives_the_same_values():
    x = np.arange(14.0).reshape(7, 2)
    whole = pj.vmap(lambda r: np.outer(r, r).sum(axis=0))(x)
    chunked = pj.vmap(lambda r: np.outer(r, r).sum(axis=0), chunk_size=3)(x)
    np.testing.assert_array_equal(chunked, whole)
    np.testing.assert_array_equal(whole, x * x.sum(axis=1, keepdims=True))


def test_kwargs_are_mapped_over_axis_0_as_in_jax():
    out = pj.vmap(lambda x, y=0.0: x + y)(np.ones(3), y=np.arange(3.0))
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


def test_axis_size_without_a_mapped_argument():
    out = pj.vmap(lambda x: x * 2.0, in_axes=None, axis_size=3)(np.ones(2))
    np.testing.assert_array_equal(out, np.full((3, 2), 2.0))


def test_vmap_inside_a_tape():
    x = pj.constant(np.array([[0.5, 1.0], [2.0, 3.0]]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.vmap(lambda r: np.sum(r ** 3))(x)
    np.testing.assert_allclose(tape.gradient(y, x), 3 * x ** 2)


def test_errors_name_the_arguments_and_sizes():
    with pytest.raises(ValueError, match=r"inconsistent sizes[\s\S]*size 3: axis 0 of "
                                         r"argument a[\s\S]*size 4: axis 0 of argument b"):
        pj.vmap(lambda a, b: a + b)(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="declared unmapped .* depends on the mapped axis"):
        pj.vmap(lambda a: a * 2.0, out_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match=r"len\(in_axes\)=3, len\(args\)=2"):
        pj.vmap(lambda a, b: a, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        pj.vmap(lambda a: a, in_axes=None)(np.ones(3))
    with pytest.raises(ValueError, match="along axis 2, .* rank should be at least 3"):
        pj.vmap(lambda a: a, in_axes=2)(np.ones(3))
    with pytest.raises(ValueError, match="tree prefix"):
        pj.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": np.ones(3)})
    with pytest.raises(TypeError, match="in_axes must be an int, None"):
        pj.vmap(lambda a: a, in_axes="0")


def test_pfor_indexing_a_numpy_array_names_the_fixes_where_it_cant_convert():
    X = np.arange(6.0).reshape(3, 2)
    with pytest.raises(TypeError, match=r"pj.constant\(X\)\[i\]"):
        pj.pfor(eval("lambda i: np.sum(X[i])", {"np": np, "X": X}), 3)   # (no source)
    np.testing.assert_array_equal(pj.pfor(lambda i: np.sum(X[i]), 3), X.sum(axis=1))
    got = pj.pfor(lambda i: np.sum(pj.constant(X)[i]), 3)         # the fix it names
    np.testing.assert_array_equal(got, X.sum(axis=1))


def test_vjp_fn_and_linearize_errors():
    _, vjp_fun = pj.vjp_fn(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="cotangent leaf 0 has shape"):
        vjp_fun(np.ones(2))
    _, jvp_fun = pj.linearize(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="tangent leaf 0 has shape"):
        jvp_fun(np.ones(2))


def test_float0_gradients_of_integer_inputs():
    g = pj.grad(lambda x, n: np.sum(x) * n, argnums=(0, 1), allow_int=True)(np.ones(2), 3)
    np.testing.assert_array_equal(g[0], [3.0, 3.0])
    assert g[1].dtype == pj.float0 and g[1].shape == ()
    with pytest.raises(TypeError, match="allow_int=True"):
        pj.grad(lambda x, n: np.sum(x) * n, argnums=(0, 1))(np.ones(2), 3)
    J = pj.jacrev(lambda x, n: x * n, argnums=1, allow_int=True)(np.ones(2), np.arange(2))
    assert J.dtype == pj.float0 and J.shape == (2, 2)


def test_holomorphic():
    z = np.array([1.0 + 1.0j, 0.5 - 2.0j])
    np.testing.assert_allclose(pj.grad(lambda z: np.sum(z ** 3), holomorphic=True)(z),
                               3 * z ** 2)
    np.testing.assert_allclose(pj.jacfwd(lambda z: np.exp(z), holomorphic=True)(z),
                               np.diag(np.exp(z)))
    np.testing.assert_allclose(pj.jacrev(lambda z: np.exp(z), holomorphic=True)(z),
                               np.diag(np.exp(z)))
    with pytest.raises(TypeError, match="requires real-valued outputs.*holomorphic=True"):
        pj.grad(lambda z: np.sum(z ** 3))(z)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        pj.jacfwd(lambda z: z)(z)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex"):
        pj.grad(lambda x: np.sum(x), holomorphic=True)(np.ones(2))


def test_an_op_without_converter_falls_back_per_op_as_in_pfor():
    from pforjac import extend
    from pforjac.testing import isolated_registries
    with isolated_registries():
        cube = extend.defop("vmap_test_cube", lambda x: x * x * x, extend.same_shape,
                            vjp=lambda g, ans, x: g * 3.0 * x * x)
        x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        with warnings.catch_warnings(record=True) as caught, pj.fallback_report() as report:
            warnings.simplefilter("always")
            out = pj.vmap(lambda r: np.sum(cube(r)))(x)
            grads = pj.vmap(pj.grad(lambda r: np.sum(cube(r))))(x)
    np.testing.assert_allclose(out, (x ** 3).sum(axis=1))
    np.testing.assert_allclose(grads, 3 * x ** 2)
    assert any("vmap_test_cube" in str(w.message) for w in caught)
    assert len(report) > 0


def test_numpy_in_numpy_out_at_top_level_tensors_inside_a_tape():
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = pj.vmap(lambda r: np.sum(r ** 2))(x)
    assert type(out) is np.ndarray
    _, vjp_fun = pj.vjp_fn(lambda r: r * 2.0, x)
    assert type(vjp_fun(np.ones((2, 2)))[0]) is np.ndarray
    assert isinstance(pj.vmap(lambda r: np.sum(r ** 2))(pj.constant(x)), pj.Tensor)
