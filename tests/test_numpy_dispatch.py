"""numpy code on Tensors: numpy's ufuncs and functions dispatch to pforjac's ops (NEP 13/18),
and nothing a derivative needs is ever converted to an array silently."""
from __future__ import annotations

import functools
import inspect
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac.numpy_dispatch import FUNCTIONS, UFUNCS

Y0 = np.array([0.5, -1.25, 2.0])
X0 = np.array([0.3, 0.45, 0.7])      # away from round's and floor's jumps


def reproducer(x):
    return pj.sum(x * x) + np.dot(x, Y0)


# -- the reproducer -------------------------------------------------------------------
def test_reproducer_gradient_through_tape():
    x = pj.constant(X0)
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = reproducer(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2 * X0 + Y0)


@pytest.mark.parametrize("vectorize", [False, True])
def test_reproducer_jacobian(vectorize):
    jac = pj.jacobian(reproducer, pj.constant(X0), vectorize=vectorize)
    np.testing.assert_allclose(jac.numpy(), 2 * X0 + Y0)


def test_reproducer_vjp_and_hessian():
    value, grad = pj.vjp(reproducer, pj.constant(X0))
    np.testing.assert_allclose(grad.numpy(), 2 * X0 + Y0)
    assert float(value) == pytest.approx(X0 @ X0 + X0 @ Y0)
    # a Hessian that sees np.dot's term: d2/dx2 [sum(x^3) + (x*x).y0] = diag(6x + 2y0)
    hess = pj.hessian(lambda x: pj.sum(x ** 3) + np.dot(x * x, Y0), pj.constant(X0))
    np.testing.assert_allclose(hess.numpy(), np.diag(6 * X0 + 2 * Y0))


def test_reproducer_forward_mode_and_hvp():
    x, v = pj.constant(X0), pj.constant(Y0 - 1.0)
    _, tangent = pj.jvp(reproducer, x, v)
    assert float(tangent) == pytest.approx((2 * X0 + Y0) @ (Y0 - 1.0))
    _, hv = pj.hvp(lambda x: pj.sum(x ** 3) + np.dot(x * x, Y0), x, v)
    np.testing.assert_allclose(hv.numpy(), (6 * X0 + 2 * Y0) * (Y0 - 1.0))


def test_repeated_eager_jacobians_stay_right_through_the_loop_cache():
    """The loop cache compiles the backward pass of an eager Jacobian computed again and
    again: numpy-written forwards stay right through it, and an unsupported call raises on
    every call, not only the first."""
    m = pj.constant(M0)
    for _ in range(5):
        x = pj.constant(X0)
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = np.tanh(np.dot(m, x)) + x
        np.testing.assert_allclose(tape.jacobian(y, x).numpy(),
                                   (1 - np.tanh(M0 @ X0) ** 2)[:, None] * M0 + np.eye(3))
    for _ in range(5):
        x = pj.constant(X0)
        with pj.GradientTape() as tape:
            tape.watch(x)
            with pytest.raises(TypeError, match=r"numpy\.unwrap"):
                np.unwrap(x * m)


def test_norm_differentiates_and_what_has_no_equivalent_raises_instead_of_zeros():
    x = pj.constant(X0)
    with pj.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match=r"numpy\.unwrap.*stop_gradient"):
            np.unwrap(x)
    for vectorize in (False, True):
        np.testing.assert_allclose(pj.jacobian(np.linalg.norm, x, vectorize=vectorize).numpy(),
                                   X0 / np.sqrt(X0 @ X0))
        with pytest.raises(TypeError, match=r"numpy\.unwrap"):
            pj.jacobian(np.unwrap, x, vectorize=vectorize)


# -- conversions ------------------------------------------------------------------------------
@pytest.mark.parametrize("convert", [np.asarray, np.array, lambda t: float(t[0]),
                                     lambda t: int(t[0]), lambda t: complex(t[0])],
                         ids=["asarray", "array", "float", "int", "complex"])
def test_a_tracked_tensor_is_not_converted(convert):
    x = pj.constant(X0)
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        with pytest.raises(TypeError, match=r"drop it from the derivative \(a recording "
                                                 r"GradientTape tracks it\).*stop_gradient\(t\)"):
            convert(y)
        convert(pj.stop_gradient(y).numpy())        # the value, on purpose
        convert(pj.constant(X0))                    # a tensor the tape does not track
    assert np.asarray(y).tolist() == (2 * X0).tolist()      # after the tape: as before


def test_a_watched_variable_is_not_converted_but_read_outside():
    v = pj.Variable(X0)
    with pj.GradientTape():
        with pytest.raises(TypeError, match="drop it from the derivative"):
            np.asarray(v)
    assert not np.asarray(v).flags.writeable


def test_symbolic_values_refuse_conversion_with_the_same_message():
    with pytest.raises(TypeError, match=r"np\.asarray/np\.array.*symbolic value"):
        pj.function(lambda x: np.asarray(x))(X0)
    with pytest.raises(TypeError, match=r"numpy\.unwrap: pforjac has no equivalent yet: "
                                        r"converting the Tensor a:float64\[3\].*symbolic.*outside"):
        pj.function(np.unwrap)(X0)
    with pytest.raises(TypeError, match=r"numpy\.unwrap"):
        pj.pfor(lambda i: np.unwrap(pj.gather(pj.constant(X0), i)), 3)


def test_outside_tapes_numpy_falls_back_and_returns_arrays():
    x = pj.constant(X0)
    assert isinstance(np.unwrap(x), np.ndarray) and np.unwrap(x).tolist() == np.unwrap(X0).tolist()
    assert isinstance(np.sin(x, where=np.array([True, False, True]), out=np.zeros(3)), np.ndarray)
    assert np.add.reduce(x) == pytest.approx(X0.sum())


def test_refused_keywords_methods_and_out():
    x = pj.constant(X0)
    assert np.sin(X0, out=x) is x                 # out= a Tensor: written by rebinding it
    np.testing.assert_allclose(x.numpy(), np.sin(X0))     # (tests/test_mutation.py)
    x = pj.constant(X0)
    with pytest.raises(TypeError, match=r"sum: .*got out"):
        np.sum(x, out=np.zeros(()))
    with pytest.raises(TypeError, match=r"numpy\.multiply\.at on a Tensor"):
        np.multiply.at(x, [0], 2.0)
    with pj.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match=r"numpy\.add\.reduce"):
            np.add.reduce(x)
        with pytest.raises(TypeError, match=r"numpy\.multiply\.outer"):
            np.multiply.outer(x, x)
        with pytest.raises(TypeError, match=r"numpy\.sin.*takes no where"):
            np.sin(x, where=np.array([True, False, True]))
        with pytest.raises(TypeError, match=r"numpy\.nextafter: pforjac has no equivalent"):
            np.nextafter(x, 2.0)
        np.testing.assert_array_equal(np.where(x > 0.4)[0].numpy(), np.nonzero(X0 > 0.4)[0])


def test_mixed_tensor_and_ndarray_arguments_and_operators():
    x = pj.constant(X0)
    for result, expected in [(np.add(Y0, x), Y0 + X0), (Y0 * x, Y0 * X0), (Y0 @ x, Y0 @ X0),
                             (np.concatenate([Y0, x]), np.concatenate([Y0, X0])),
                             (np.where(Y0 > 0, x, Y0), np.where(Y0 > 0, X0, Y0)),
                             (np.float64(2.0) * x, 2 * X0), (Y0 < x, Y0 < X0)]:
        assert isinstance(result, pj.Tensor)
        np.testing.assert_array_equal(result.numpy(), expected)


# -- every public numpy name: dispatches or raises ------------------------------------------
# These change the process, do I/O or run numpy's own test suite; they are not array functions.
NOT_CALLED = {"test", "info", "seterr", "seterrcall", "setbufsize", "set_printoptions",
              "printoptions", "show_config", "show_runtime", "save", "savez", "savez_compressed",
              "savetxt", "load", "loadtxt", "genfromtxt", "fromfile", "fromregex", "memmap"}
# These read a protocol Tensor does not offer (a buffer, array flags, an iterator that
# writes back), so they raise an error of their own: never a value. (np.from_dlpack reads
# DLPack, which Tensor offers and refuses on a watched Tensor as np.asarray does.)
# numpy leaves these values undefined (pforjac's are zeros): only their shapes compare.
UNDEFINED_VALUES = {"np.empty_like"}
OWN_ERRORS = {"np.frombuffer": TypeError, "np.isfortran": AttributeError, "np.nditer": TypeError}


def _public(module, prefix):
    return [(f"{prefix}.{n}", getattr(module, n)) for n in dir(module)
            if not n.startswith("_") and callable(getattr(module, n)) and n not in NOT_CALLED]


NUMPY_CALLABLES = _public(np, "np") + _public(np.linalg, "np.linalg")
M0 = np.array([[2.0, 0.6, 0.1], [0.6, 3.0, 0.2], [0.1, 0.2, 4.0]])
PATTERNS = [lambda x, m: (x,), lambda x, m: (m,), lambda x, m: (x, x), lambda x, m: (m, m),
            lambda x, m: (m, 0)]


def _leaves(r):
    if isinstance(r, (list, tuple)):
        for v in r:
            yield from _leaves(v)
    else:
        yield r


def _call(fn, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except Exception as e:    # noqa: BLE001  (classified by the caller)
            return None, e


def _outcome(name, fn, pattern):
    """What `fn` does on watched Tensors with `pattern`'s arguments, checked against numpy's
    own call on arrays: 'dispatched', 'refused', 'both raise', 'no data' or 'numpy accepts'
    (numpy raised on arrays: try the next pattern)."""
    reference, reference_error = _call(fn, pattern(X0.copy(), M0.copy()))
    x, m = pj.constant(X0), pj.constant(M0)
    with pj.GradientTape() as tape:
        tape.watch([x, m])
        result, error = _call(fn, pattern(x, m))
    if error is None:
        leaves = list(_leaves(result))
        if any(isinstance(v, pj.Tensor) for v in leaves):
            if reference_error is None and name not in UNDEFINED_VALUES:
                for got, want in zip(leaves, _leaves(reference)):
                    np.testing.assert_allclose(np.asarray(got.numpy() if isinstance(
                        got, pj.Tensor) else got, float), np.asarray(want, float), err_msg=name,
                        atol=1e-13)     # (a LAPACK zero is rounding: 1e-16 either way)
            return "dispatched"
        silent = [v for v in leaves if isinstance(v, (np.ndarray, np.generic, float, complex))
                  and not isinstance(v, (np.str_, np.bytes_))]
        assert not silent, f"{name} returned {type(result).__name__} on a watched Tensor"
        return "no data"          # (a shape, a bool, a dtype, an object: nothing to differentiate)
    if isinstance(error, TypeError) and "pforjac" in str(error):
        return "refused"
    if reference_error is not None:
        return "both raise"
    own = OWN_ERRORS.get(name)
    assert own is not None and isinstance(error, own), \
        f"{name}: numpy accepts the arrays, but on Tensors it raised {error!r:.200}"
    return "refused"


@functools.cache
def _sweep():
    """Each public numpy callable's outcome on watched Tensors (the first argument pattern
    numpy accepts on arrays), and the (name, pattern) calls that dispatched."""
    counts, dispatched = {}, []
    for name, fn in NUMPY_CALLABLES:
        for pattern in PATTERNS:
            outcome = _outcome(name, fn, pattern)
            counts[outcome] = counts.get(outcome, 0) + 1
            if outcome == "dispatched":
                dispatched.append((name, fn, pattern))
            if outcome != "both raise":
                break
    return counts, dispatched


def test_every_public_numpy_function_dispatches_or_raises():
    counts, dispatched = _sweep()
    assert len(NUMPY_CALLABLES) > 450
    assert len({name for name, _, _ in dispatched}) >= (len(FUNCTIONS) + len(UFUNCS)) // 2, counts
    assert counts["refused"] > 100, counts


def _weighted_sum(fn, pattern, x, m, weights):
    """sum(fn(*pattern(x, m)) * weights), over every float output (numpy's or pforjac's)."""
    outs = [o for o in _leaves(fn(*pattern(x, m))) if np.asarray(
        o.numpy() if isinstance(o, pj.Tensor) else o).dtype.kind == "f"]
    return sum((o * w).sum() for o, w in zip(outs, weights))


def test_dispatched_numpy_calls_have_finite_difference_gradients():
    """Every numpy call the sweep saw dispatch, differentiated in float64 by the tape and
    by central differences of numpy's own call on arrays."""
    rng, checked = np.random.default_rng(0), 0
    for name, fn, pattern in _sweep()[1]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = [np.asarray(o) for o in _leaves(fn(*pattern(X0, M0)))]
            weights = [rng.normal(size=o.shape) for o in reference if o.dtype.kind == "f"]
            if not weights or not all(np.isfinite(o).all() for o in reference):
                continue
            x, m = pj.constant(X0), pj.constant(M0)
            with pj.GradientTape() as tape:
                tape.watch([x, m])
                y = _weighted_sum(fn, pattern, x, m, weights)
            grads = tape.gradient(y, [x, m], unconnected_gradients="zero")
            numeric = [
                _central_differences(lambda a: _weighted_sum(fn, pattern, a, M0, weights), X0),
                _central_differences(lambda a: _weighted_sum(fn, pattern, X0, a, weights), M0)]
        for got, want in zip(grads, numeric):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)
        checked += 1
    assert checked >= 60


# -- gradients of numpy-written functions, against central differences -----------------------
NUMPY_WRITTEN = {
    "ufuncs": lambda a: np.sin(a) * np.exp(a) + np.tanh(a) - np.log1p(a * a) + np.sqrt(a + 1),
    "trig": lambda a: np.arctan2(a, a + 1.0) + np.arcsinh(a) + np.cosh(a) + np.arccos(a / 9),
    "binary": lambda a: np.maximum(a, 0.6) + np.logaddexp(a, 0.2) + np.power(a, 3) / (a + 1),
    "dot": lambda a: np.dot(a, a[0]) + np.dot(a, a),
    "matmul": lambda a: np.matmul(a, a.T) + M0 @ a + np.linalg.matmul(a, M0),
    "einsum": lambda a: np.einsum("ij,jk->ik", a, M0) + np.einsum("ii->i", a)[:, None],
    "reductions": lambda a: np.stack([np.sum(a, axis=0), np.mean(a, axis=1), np.prod(a, axis=0),
                                      np.var(a, axis=0, ddof=1), np.std(a, axis=1),
                                      np.max(a, axis=1), np.min(a, axis=0)]),
    "cumsum_clip_where": lambda a: np.cumsum(a, axis=1) + np.clip(a, 0.4, 1.5)
        + np.where(a > 0.85, a ** 2, np.cos(a)),
    "shapes": lambda a: np.concatenate([np.reshape(a, (9,)), np.ravel(np.transpose(a)),
                                        np.roll(a, 1, axis=0)[0], np.flip(a, 0)[:, 1],
                                        np.tile(a[0], 2), np.pad(a[1], 1),
                                        np.take(a, [0, 4, 8]), np.squeeze(a[:1]),
                                        np.moveaxis(np.expand_dims(a, 0), 0, 2)[:, 0, 0]]),
}


def _central_differences(f, a, eps=1e-6):
    jac = np.zeros(f(a).shape + a.shape)
    for k in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[k] = eps
        jac[(...,) + k] = (f(a + step) - f(a - step)) / (2 * eps)
    return jac


@pytest.mark.parametrize("name", sorted(NUMPY_WRITTEN))
@pytest.mark.parametrize("vectorize", [False, True])
def test_numpy_written_jacobian_matches_finite_differences(name, vectorize):
    f, a = NUMPY_WRITTEN[name], M0 / 4 + 0.3
    jac = pj.jacobian(f, pj.constant(a), vectorize=vectorize)
    assert isinstance(jac, pj.Tensor) and jac.dtype == np.float64
    np.testing.assert_allclose(jac.numpy(), _central_differences(f, a), rtol=1e-6, atol=1e-7)


def test_numpy_written_gradient_through_a_variable():
    v = pj.Variable(X0)
    with pj.GradientTape() as tape:
        y = np.sum(np.sin(v) * Y0)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), np.cos(X0) * Y0)


# -- inside pfor bodies and compiled functions ----------------------------------------------
def test_dispatch_in_pfor_and_vectorized_map_bodies():
    m = pj.constant(M0)
    rows = pj.pfor(lambda i: np.sum(np.sin(pj.gather(m, i)) * Y0), 3)
    np.testing.assert_allclose(rows.numpy(), np.sin(M0) @ Y0)
    mapped = pj.vectorized_map(lambda r: np.dot(r, Y0) + np.max(r), m)
    np.testing.assert_allclose(mapped.numpy(), M0 @ Y0 + M0.max(axis=1))


def test_dispatch_in_tape_jacobian_with_pfor_and_in_compiled_functions():
    x = pj.constant(X0)
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = np.exp(x) * np.dot(M0, x)
    jac = tape.jacobian(y, x, experimental_use_pfor=True)
    expected = np.diag(np.exp(X0) * (M0 @ X0)) + np.exp(X0)[:, None] * M0
    np.testing.assert_allclose(jac.numpy(), expected)
    f = pj.function(lambda x: np.sum(np.sin(x)) + np.dot(x, Y0))
    np.testing.assert_allclose(np.asarray(f(X0)), np.sin(X0).sum() + X0 @ Y0)
    g = pj.function(lambda x: pj.jacobian(reproducer, x, vectorize=True))
    np.testing.assert_allclose(g(pj.constant(X0)).numpy(), 2 * X0 + Y0)


@pytest.mark.parametrize("call", [
    lambda a: np.round(a), lambda a: np.around(a), lambda a: np.sum(a, dtype=np.int8),
    lambda a: np.prod(a, dtype=np.int16), lambda a: np.cumsum(a, dtype=np.int8),
    lambda a: np.mean(a, dtype=np.float32), lambda a: np.sum(a, dtype=np.float32),
])
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float64])
def test_round_of_integers_and_dtype_keywords_give_numpys_dtype(call, dtype):
    """np.round of integers keeps them (it was np.rint: float64); `dtype=` is the result's
    dtype, as numpy's (np.sum(ints, dtype=np.int8) was int64)."""
    a = np.array([3, -2, 0, 5]).astype(dtype)
    got, want = call(pj.constant(a)).numpy(), call(a)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def _parameters(fn) -> list:
    return [(p.name, p.kind == p.VAR_POSITIONAL, p.default) for p in
            inspect.signature(fn).parameters.values()]


def test_pforjac_functions_registered_as_they_are_have_numpys_signature():
    """A pforjac function registered for a numpy one without a wrapper (pforjac/numpy/
    _structure.py's loop) gets numpy's arguments as they were passed: its parameters after
    the first (the tensor, whose name may differ), their order and defaults must be numpy's,
    or `np.rot90(t, 1, (1, 0))` would land in the wrong parameter."""
    own = [(f, fn) for f, fn in FUNCTIONS.items()
           if getattr(pj, getattr(f, "__name__", ""), None) is fn]
    assert len(own) > 30
    for target, fn in own:
        assert _parameters(fn)[1:] == _parameters(target)[1:], target.__name__
