"""`pforjac.numpy`: built from the dispatch tables, numpy's creation functions and defaults,
`array` of lists holding Tensors, dtypes and constants, Tensor's numpy methods."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

import pforjac as pj
import pforjac.numpy as pnp
from pforjac import numpy_dispatch


@contextlib.contextmanager
def registered(numpy_fn, impl):
    """`impl` registered for `numpy_fn` inside the block (whatever was there comes back)."""
    table = numpy_dispatch.UFUNCS if isinstance(numpy_fn, np.ufunc) else numpy_dispatch.FUNCTIONS
    saved = table.pop(numpy_fn, None)
    try:
        numpy_dispatch.implements(numpy_fn)(impl)
        yield
    finally:
        table.pop(numpy_fn, None)
        if saved is not None:
            table[numpy_fn] = saved


def test_every_table_entry_is_in_the_namespace_and_is_pforjacs():
    for fn, impl in [*numpy_dispatch.UFUNCS.items(), *numpy_dispatch.FUNCTIONS.items()]:
        module, name = (pnp.linalg, fn.__name__) if getattr(fn, "__module__", "") == \
            "numpy.linalg" else (pnp, fn.__name__)
        if getattr(np, name, None) is fn or getattr(np.linalg, name, None) is fn:
            got = getattr(module, name)
            assert getattr(got, "__wrapped__", got) is impl, name
    assert {"sin", "dot", "einsum", "concatenate", "matmul"} <= set(dir(pnp))
    assert "matmul" in dir(pnp.linalg)


def test_a_function_registered_later_appears_at_once():
    def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
        return pj.reshape(p, (-1,))[1:] - pj.reshape(p, (-1,))[:-1]

    def eigvals(a):
        return a.shape[-1]

    with registered(np.unwrap, unwrap), registered(np.linalg.eigvals, eigvals):
        x = pj.constant([1.0, 4.0, 9.0], "float64")
        np.testing.assert_array_equal(pnp.unwrap(x).numpy(), [3.0, 5.0])
        assert pnp.linalg.eigvals(pnp.eye(3)) == 3 and "unwrap" in dir(pnp)
        assert pnp.unwrap.__wrapped__ is unwrap
    with pytest.raises(AttributeError, match="numpy.unwrap is not implemented in pforjac yet"):
        pnp.unwrap


def test_a_numpy_name_pforjac_lacks_raises_naming_it():
    with pytest.raises(AttributeError, match=r"pforjac.numpy.packbits: numpy.packbits is not "
                                             r"implemented in pforjac yet"):
        pnp.packbits
    with pytest.raises(AttributeError, match="pforjac.numpy.linalg.eigvals: numpy.linalg"):
        pnp.linalg.eigvals
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        pnp.no_such_name
    assert not hasattr(pnp, "packbits")


def test_python_numbers_are_read_as_numpy_reads_them():
    assert pnp.sin(0.5).dtype == np.float64 and pj.sin(0.5).dtype == np.float32
    assert pnp.add([1.0, 2.0], 1).dtype == np.float64
    x32 = pj.constant([1.0, 2.0])
    assert pnp.multiply(x32, 2.0).dtype == np.float32          # weak next to a Tensor
    assert pnp.transpose(np.ones((2, 3)), (1, 0)).shape == (3, 2)   # axes stay axes


def test_creation_functions_have_numpys_defaults():
    for got, want in [(pnp.zeros((2, 3)), np.zeros((2, 3))), (pnp.ones(4, dtype=np.int32),
                      np.ones(4, np.int32)), (pnp.empty((2,)), np.zeros(2)),
                      (pnp.full((2, 2), 7), np.full((2, 2), 7)), (pnp.eye(3, k=1), np.eye(3, k=1)),
                      (pnp.identity(2), np.identity(2)), (pnp.tri(3, 4, -1), np.tri(3, 4, -1)),
                      (pnp.arange(5), np.arange(5)), (pnp.arange(1, 2, 0.25), np.arange(1, 2, .25)),
                      (pnp.linspace(0, 1, 5), np.linspace(0, 1, 5)),
                      (pnp.logspace(0, 2, 3), np.logspace(0, 2, 3)),
                      (pnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]])),
                      (pnp.asarray([1.5, 2.5]), np.asarray([1.5, 2.5]))]:
        assert isinstance(got, pj.Tensor)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(TypeError, match="numpy.zeros on pforjac Tensors does not take order"):
        pnp.zeros(3, order="F")


def test_array_of_a_list_holding_tensors_is_a_differentiable_stack():
    x = pj.constant([0.3, 0.5], "float64")
    with pj.GradientTape() as tape:
        tape.watch(x)
        m = pnp.array([[x[0], 2.0], [x[1] * x[0], x[1]]])
        y = pnp.sum(m * m)
    assert m.shape == (2, 2) and m.dtype == np.float64
    # y = x0^2 + 4 + x0^2 x1^2 + x1^2
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2 * .3 + 2 * .3 * .25,
                                                             2 * .09 * .5 + 2 * .5])
    assert pnp.asarray(x) is x and pnp.array(x, ndmin=3).shape == (1, 1, 2)
    with pytest.raises(ValueError, match="copy=False"):
        pnp.asarray(np.ones(2), copy=False)


def test_linspace_logspace_full_are_differentiable_in_their_tensor_arguments():
    a, b = pj.constant(1.0, "float64"), pj.constant(3.0, "float64")
    with pj.GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        points = np.linspace(a, b, 5)                      # numpy's name dispatches
        filled = pnp.full((2, 2), b)
        powers = pnp.logspace(a, b, 3, base=2.0)
    np.testing.assert_allclose(points.numpy(), np.linspace(1.0, 3.0, 5))
    np.testing.assert_allclose(tape.gradient(points, a).numpy(), (1 - np.linspace(0, 1, 5)).sum())
    np.testing.assert_allclose(tape.gradient(filled, b).numpy(), 4.0)
    np.testing.assert_allclose(powers.numpy(), [2.0, 4.0, 8.0])
    np.testing.assert_allclose(tape.gradient(powers, b).numpy(), np.log(2) * (0 + 4 * .5 + 8))


def test_dtypes_constants_and_queries():
    assert pnp.float64 is np.float64 and pnp.pi == np.pi and pnp.newaxis is None
    assert np.isinf(pnp.inf) and np.isnan(pnp.nan) and pnp.ndarray is pj.Tensor
    x = pnp.asarray([1.0, 2.0], dtype=pnp.float32)
    assert pnp.result_type(x, pnp.float64) == np.float64 and pnp.finfo(x).bits == 32
    assert pnp.can_cast(x, pnp.float64) and not pnp.can_cast(x, pnp.int8)
    with pj.GradientTape() as tape:
        tape.watch(x)
        assert np.result_type(x, 1.0) == np.float32        # a query: no value read


def test_array_namespace_and_device():
    x = pj.constant([1.0])
    assert x.__array_namespace__() is pnp and x.__array_namespace__(api_version="2023.12") is pnp
    assert x.device == "cpu"
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")


def test_numpy_methods_follow_the_tables():
    t = pnp.asarray([[3.0, 1.0], [2.0, 5.0]])
    np.testing.assert_array_equal(t.clip(1.5, 2.5).numpy(), np.clip(t.numpy(), 1.5, 2.5))
    np.testing.assert_array_equal(t.cumsum().numpy(), t.numpy().cumsum())
    np.testing.assert_array_equal(t.ravel().numpy(), t.numpy().ravel())
    assert int(t.argmax()) == 3 and t.mT.shape == (2, 2) and t.real is t
    assert t.copy().shape == (2, 2) and t.nbytes == 32 and t.itemsize == 8
    with registered(np.ediff1d, lambda ary, to_end=None, to_begin=None: ary):
        assert hasattr(t, "ediff1d") is False            # not an ndarray method: none added
    with pytest.raises(TypeError, match="Tensor.resize would change the tensor in place"):
        t.resize((4,))
    t.fill(0.0)                                         # writes into t (pforjac.mutation)
    np.testing.assert_array_equal(t.numpy(), np.zeros((2, 2)))
    t = pnp.asarray([[3.0, 1.0], [2.0, 5.0]])
    if numpy_dispatch.FUNCTIONS.get(np.sort) is None:
        assert not hasattr(t, "sort")
    else:                                               # returns, as a JAX array's does
        np.testing.assert_array_equal(t.sort().numpy(), np.sort(t.numpy()))


def test_item_and_tolist_refuse_under_a_tape_that_needs_the_tensor():
    x = pj.constant([1.5, 2.5], "float64")
    assert x.item(1) == 2.5 and x.tolist() == [1.5, 2.5]
    with pj.GradientTape() as tape:
        tape.watch(x)
        for read in (lambda: x.item(0), x.tolist):
            with pytest.raises(TypeError, match=r"Tensor\.(item|tolist)\(\): converting the "
                                                r"Tensor float64\[2\]"):
                read()
        assert pj.stop_gradient(x).numpy().tolist() == [1.5, 2.5]
