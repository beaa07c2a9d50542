"""Numpy in, numpy out at top level (pforjac.boundary), Tensors in and inside tapes and traces;
and the first errors users meet (lists, forgotten has_aux, complex grads, None inputs,
format strings, DLPack)."""
import numpy as np
import pytest

import pforjac as pj


def f(x):
    return np.sum(np.sin(x) * x)


def vec(x):
    return np.sin(x) * x[::-1]


X = np.array([0.3, -1.2, 2.0])

# every entry point, called with numpy inputs
ENTRY_POINTS = {
    "grad": lambda x: pj.grad(f)(x),
    "value_and_grad": lambda x: pj.value_and_grad(f)(x),
    "jacrev": lambda x: pj.jacrev(vec)(x),
    "jacfwd": lambda x: pj.jacfwd(vec)(x),
    "jacobian": lambda x: pj.jacobian(vec, x),
    "jacobian_forward": lambda x: pj.jacobian(vec, x, strategy="forward-mode"),
    "hessian": lambda x: pj.hessian(f, x),
    "vjp": lambda x: pj.vjp(vec, x, np.ones_like(x)),
    "jvp": lambda x: pj.jvp(vec, x, np.ones_like(x)),
    "hvp": lambda x: pj.hvp(f, x, np.ones_like(x)),
    "function": lambda x: pj.function(lambda x: (np.sum(x), x * 2))(x),
}


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_numpy_in_numpy_out_keeps_dtype(name):
    for dtype in (np.float64, np.float32):
        leaves = _leaves(ENTRY_POINTS[name](X.astype(dtype)))
        assert leaves and all(isinstance(v, (np.ndarray, np.generic)) for v in leaves), name
        assert all(v.dtype == dtype for v in leaves), (name, [v.dtype for v in leaves])
        # 0-d results are numpy scalars, as np.sum's are
        assert all(type(v) is dtype for v in leaves if np.ndim(v) == 0)


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_tensors_in_tensors_out(name):
    leaves = _leaves(ENTRY_POINTS[name](pj.constant(X)))
    assert all(isinstance(v, pj.Tensor) for v in leaves), name


def test_numpy_results_equal_the_tensor_results_and_are_read_only():
    g = pj.grad(f)(X)
    np.testing.assert_array_equal(g, pj.grad(f)(pj.constant(X)).numpy())
    np.testing.assert_allclose(g, np.sin(X) + X * np.cos(X), rtol=1e-14)
    assert not g.flags.writeable
    writable = np.array(g)
    writable[0] = 1.0                     # the documented way to a writable copy
    assert g[0] != 1.0


def test_mixed_inputs_give_tensors():
    out = pj.grad(lambda x, y: np.sum(x * y), argnums=(0, 1))(X, pj.constant(X))
    assert all(isinstance(v, pj.Tensor) for v in out)


def test_python_numbers_and_lists_of_numbers_are_numpy_inputs():
    g = pj.grad(lambda x: x ** 3)(2.0)
    assert type(g) is np.float64 and g == 12.0
    g = pj.grad(lambda x: np.sum(x ** 2))([1.0, 2.0, 3.0])       # a list is an array
    assert type(g) is np.ndarray and g.tolist() == [2.0, 4.0, 6.0]
    J = pj.jacobian(lambda x: x * 2, [1.0, 2.0])
    assert type(J) is np.ndarray and J.tolist() == [[2.0, 0.0], [0.0, 2.0]]
    # a list holding arrays stays a pytree
    gs = pj.grad(lambda p: np.sum(p[0] * p[1]))([X, 2 * X])
    assert isinstance(gs, list) and len(gs) == 2
    np.testing.assert_allclose(gs[0], 2 * X)


def test_aux_outputs_come_back_as_numpy_too():
    g, aux = pj.grad(lambda x: (np.sum(x ** 2), {"x2": x ** 2, "tag": "ok"}), has_aux=True)(X)
    assert type(g) is np.ndarray and type(aux["x2"]) is np.ndarray and aux["tag"] == "ok"
    J, aux = pj.jacrev(lambda x: (x * 2, np.sum(x)), has_aux=True)(X)
    assert type(J) is np.ndarray and type(aux) is np.float64


def test_higher_order_derivatives_compose():
    second = pj.grad(pj.grad(lambda x: x ** 4))(3.0)
    assert type(second) is np.float64 and second == pytest.approx(108.0)
    H = pj.hessian(f, X)
    np.testing.assert_allclose(pj.jacobian(pj.grad(f), X), H, rtol=1e-12)
    np.testing.assert_allclose(pj.jacfwd(pj.jacrev(f))(X), H, rtol=1e-12)
    compiled = pj.function(pj.grad(f))
    assert type(compiled(X)) is np.ndarray
    np.testing.assert_allclose(compiled(X), pj.grad(f)(X), rtol=1e-14)


def test_inside_a_tape_results_stay_tensors():
    x = pj.constant(X)
    with pj.GradientTape() as tape:
        tape.watch(x)
        inner = pj.grad(f)(np.asarray(X))     # numpy in, but a tape records: Tensors
        assert isinstance(inner, pj.Tensor)
        y = pj.sum(pj.grad(f)(x) ** 2)
    assert tape.gradient(y, x) is not None


def test_forgotten_has_aux_says_pass_has_aux():
    with pytest.raises(TypeError, match="pass has_aux=True"):
        pj.grad(lambda x: (np.sum(x ** 2), x))(X)


def test_complex_output_of_grad_is_refused_as_in_jax():
    with pytest.raises(TypeError, match=r"grad requires real-valued outputs.*complex128.*"
                                        r"np\.real"):
        pj.grad(lambda x: np.sum(x * 1j))(X)


def test_none_inputs_name_the_argument():
    with pytest.raises(TypeError, match=r"grad: the argument to differentiate \(position 0\) "
                                        r"is None"):
        pj.grad(f)(None)
    with pytest.raises(TypeError, match="jacobian: inputs is None"):
        pj.jacobian(vec, None)


def test_format_of_a_0d_tensor_is_a_floats():
    t = pj.constant(np.float64(1.23456))
    assert f"{t:.3f}" == "1.235" and f"{t:>8.1e}" == f"{1.23456:>8.1e}"
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="unsupported format string"):   # as numpy's array
        f"{pj.constant([1.0, 2.0]):.3f}"
    x = pj.constant(X)
    with pj.GradientTape() as tape:       # a string leaves no derivative behind
        tape.watch(x)
        y = pj.sum(x * x)
        assert f"{y:.2f}" == f"{np.sum(X * X):.2f}"


def test_dlpack_exports_the_value_and_refuses_where_a_derivative_needs_it():
    x = pj.constant(X)
    np.testing.assert_array_equal(np.from_dlpack(x), X)
    assert x.__dlpack_device__() == X.__dlpack_device__()
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * 2
        with pytest.raises(TypeError, match="np.from_dlpack.*would drop it from the derivative"):
            np.from_dlpack(y)


def test_memory_advice_names_an_argument_the_called_function_takes(monkeypatch):
    from pforjac import jacobians, memory

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 9 GiB")
    monkeypatch.setattr(jacobians, "_jacobian_core", no_memory)
    monkeypatch.setattr(jacobians, "_cached_backward", no_memory)
    with pytest.raises(memory.JacobianMemoryError, match=r"^jacobian: .*parallel_iterations=k"):
        pj.jacobian(vec, X)
    hessian_rr = (lambda: pj.hessian(f, X, outer_jacobian_strategy="reverse-mode"))
    for call, name in [(hessian_rr, "hessian"), (lambda: pj.jacrev(vec)(X), "jacrev")]:
        with pytest.raises(memory.JacobianMemoryError, match=f"^{name}: ") as e:
            call()
        assert "parallel_iterations" not in str(e.value)       # (theirs is chunk_size)
        assert "pass chunk_size=k" in str(e.value)


def test_compiled_results_are_read_only_views_that_stay_read_only():
    double = pj.function(lambda x: x * 2.0)
    out = double(X)
    assert type(out) is np.ndarray and not out.flags.writeable
    with pytest.raises(ValueError):
        out.setflags(write=True)        # its memory may be a buffer pforjac reuses
    np.testing.assert_array_equal(double(X), 2 * X)
    assert X.flags.writeable            # the caller's input is left as it was


def test_python_floats_are_float64_in_the_pytorch_style_functions_too():
    J = pj.jacobian(lambda x: x ** 3, 2.0)
    out, hv = pj.hvp(lambda x: x ** 3, 2.0, 1.0)
    assert type(J) is type(out) is type(hv) is np.float64
    assert (J, out, hv) == (12.0, 8.0, 12.0)
