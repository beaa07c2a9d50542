"""Boolean masks, several index arrays and numpy's data-dependent selections (nonzero,
argwhere, flatnonzero, compress, extract, unique): numpy's values, derivatives against
central differences, on every path where the mask's value is known, and the refusal naming
the `where` rewrite where it is not."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pforjac as pj

from helpers import central_differences, no_fallback

X0 = np.array([1.0, -2.0, 3.0, -0.5, 0.25])
A = np.arange(60.0).reshape(3, 4, 5) / 7.0

KEYS = [
    (np.array([0, 2]), np.array([1, 3])),
    (np.array([[0], [2]]), np.array([1, 3, -1])),
    np.ix_([0, 1], [1, 2]),
    np.ix_([0, 2], [3, 0], [4, 1, 2]),
    (np.array([0, 2]), slice(None), np.array([1, 3])),        # separated: index axes first
    (slice(1, 3), np.array([0, 2]), np.array([1, -3])),
    (1, np.array([0, 2]), np.array([1, 3])),
    (np.array([0, 2]), 1, np.array([1, 3])),                  # an int between: first too
    (None, np.array([0, 2]), Ellipsis, np.array([1, 3])),
    (0, slice(None), np.array([[1, 2], [3, 4]])),
    (A[..., 0] > 0.5,),
    (A > 4.0,),
    (slice(None), A[0] > 0.3),
    (A[:, 0, 0] > 0.5, Ellipsis, 2),
    ([True, False, True],),
    (Ellipsis, np.array([True, False, True, False, True])),
    (A[:, :, 0] > 3.0, np.array([1, 2, 0, 4, 3, 1, 0, 2])[:int((A[:, :, 0] > 3.0).sum())]),
]


@pytest.mark.parametrize("key", KEYS, ids=range(len(KEYS)))
def test_values_and_gradients_match_numpy(key):
    np.testing.assert_array_equal(pj.constant(A)[key].numpy(), A[key])
    weights = np.random.default_rng(0).normal(size=A[key].shape)
    got = pj.grad(lambda a: pj.sum(a[key] ** 2 * weights))(A)
    want = central_differences(lambda a: np.sum(a[key] ** 2 * weights), A)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7)


def test_bad_masks_and_indices_raise_as_numpy_does():
    x = pj.constant(A)
    with pytest.raises(IndexError, match="boolean index did not match.*axis 0.*3.*2"):
        x[np.array([True, False])]
    with pytest.raises(IndexError, match="along axis 2; size of axis is 5 but .* is 4"):
        x[:, 0:2, np.ones(4, bool)]
    with pytest.raises(IndexError, match="index 3 is out of bounds.*size 3"):
        x[np.array([0, 3]), np.array([0, 1])]
    with pytest.raises(IndexError, match=r"could not be broadcast together with shapes \(2,\) \(3,\)"):
        x[np.array([0, 1]), np.array([0, 1, 2])]
    with pytest.raises(IndexError, match="rank 0"):
        x[np.array(True)]


def test_a_mask_of_the_differentiated_value_on_tapes_and_jacobians():
    def f(x):
        return np.sum(x[x > 0] ** 2)
    want = np.where(X0 > 0, 2 * X0, 0.0)
    x = pj.constant(X0)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
        z = x[x > 0] ** 3
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want)
    jac = np.zeros((3, 5))
    jac[[0, 1, 2], [0, 2, 4]] = 3 * X0[[0, 2, 4]] ** 2
    np.testing.assert_allclose(tape.jacobian(z, x).numpy(), jac)
    np.testing.assert_allclose(tape.jacobian(z, x, experimental_use_pfor=False).numpy(), jac)
    np.testing.assert_allclose(np.asarray(pj.grad(f)(X0)), want)
    np.testing.assert_allclose(np.asarray(pj.jacobian(lambda x: x[x > 0] ** 3, X0)), jac)
    np.testing.assert_allclose(np.asarray(pj.hessian(f, X0)), np.diag(2.0 * (X0 > 0)))


def test_the_jacobian_follows_a_new_mask_on_each_call():
    """Same count of selected entries, other positions: the compiled loop body must not keep
    the first call's indices."""
    for x0 in (X0, -X0[::-1].copy()):
        want = np.zeros((int((x0 > 0).sum()), 5))
        want[np.arange(want.shape[0]), np.flatnonzero(x0 > 0)] = 1.0
        np.testing.assert_array_equal(np.asarray(pj.jacobian(lambda x: x[x > 0], x0)), want)


@no_fallback
def test_a_constant_mask_works_traced_compiled_and_vectorized():
    mask = X0 > 0
    f = pj.function(lambda x: np.sum(x[mask] ** 2))
    assert float(np.asarray(f(X0))) == pytest.approx(np.sum(X0[mask] ** 2))
    np.testing.assert_allclose(np.asarray(pj.function(pj.grad(lambda x: np.sum(x[mask] ** 2)))(X0)),
                               np.where(mask, 2 * X0, 0.0))
    rows = np.stack([X0, X0 + 1, X0 * 2])
    out = pj.vectorized_map(lambda r: r[mask] * 2.0, pj.constant(rows))
    np.testing.assert_array_equal(out.numpy(), rows[:, mask] * 2.0)


@no_fallback
def test_several_stacked_index_arrays_vectorize():
    table = np.arange(20.0).reshape(4, 5)
    idx = np.array([[0, 1, 3], [2, 3, 0]])
    out = pj.vectorized_map(lambda i: pj.constant(table)[i, i + 1], pj.constant(idx))
    np.testing.assert_array_equal(out.numpy(), np.stack([table[i, i + 1] for i in idx]))
    rows = np.stack([table, table + 1])
    out = pj.vectorized_map(lambda t: t[np.array([0, 2]), np.array([1, -1])], pj.constant(rows))
    np.testing.assert_array_equal(out.numpy(), rows[:, [0, 2], [1, -1]])


def test_sparse_jacobians_through_constant_masks_and_index_arrays():
    ps = pytest.importorskip("pforjac.sparse")
    mask, f0 = X0 > 0, np.arange(12.0).reshape(3, 4)
    jac = ps.jacobian(lambda x: x[mask] ** 2, X0).toarray()
    np.testing.assert_array_equal(jac, np.diag(2 * X0)[mask])
    ix, iy = np.array([0, 2, 2]), np.array([1, 3, 0])
    jac = ps.jacobian(lambda f: f[ix, iy] * 3.0, f0).toarray()
    want = np.zeros((3, 12))
    want[np.arange(3), ix * 4 + iy] = 3.0
    np.testing.assert_array_equal(jac, want)


def test_traced_index_arrays_in_a_compiled_function():
    f0, rows, cols = np.arange(12.0).reshape(3, 4), np.array([[0], [2]]), np.array([1, -1, 3])
    picked = pj.function(lambda f, i, j: f[i, j] * 2.0)
    np.testing.assert_array_equal(np.asarray(picked(f0, rows, cols)), f0[rows, cols] * 2.0)
    np.testing.assert_array_equal(np.asarray(picked(f0, rows[::-1], cols)),
                                  f0[rows[::-1], cols] * 2.0)
    with pytest.raises(IndexError, match="index 3 is out of bounds for an axis of size 3"):
        picked(f0, np.array([3]), cols)


@no_fallback
def test_ix_of_tensors_and_traced_indices():
    f0 = np.arange(20.0).reshape(4, 5)
    rows, cols = pj.constant(np.array([0, 3])), np.array([True, False, True, False, True])
    for got, want in zip(np.ix_(rows, cols), np.ix_(np.array([0, 3]), cols)):
        np.testing.assert_array_equal(got.numpy(), want)
    idx = np.array([[0, 1], [2, 3]])
    out = pj.vectorized_map(lambda i: pj.constant(f0)[np.ix_(i, i + 1)], pj.constant(idx))
    np.testing.assert_array_equal(out.numpy(), np.stack([f0[np.ix_(i, i + 1)] for i in idx]))


def test_a_traced_mask_is_refused_with_the_where_rewrite():
    with pytest.raises(TypeError, match=r"boolean mask .*traced value.*np\.where\(mask, x, 0\)"):
        pj.function(lambda x: np.sum(x[x > 0]))(X0)
    rows = pj.constant(np.stack([X0, X0 + 1]))
    with pytest.raises(TypeError, match=r"boolean mask .*traced value"):
        pj.vectorized_map(lambda r: r[r > 0], rows)
    with pytest.raises(TypeError, match=r"boolean mask .*traced value"):
        pj.jacfwd(lambda x: x[x > 0])(X0)          # forward mode traces f
    with pytest.raises(TypeError, match=r"numpy\.nonzero: the boolean mask .*traced"):
        pj.function(lambda x: np.nonzero(x > 0)[0])(X0)


def test_nonzero_argwhere_flatnonzero_are_numpy_positions():
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    t = pj.constant(a)
    for got, want in zip(np.nonzero(t), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(np.argwhere(t).numpy(), np.argwhere(a))
    np.testing.assert_array_equal(np.flatnonzero(t > 0).numpy(), np.flatnonzero(a > 0))
    np.testing.assert_array_equal(t[np.nonzero(t)].numpy(), a[np.nonzero(a)])


def test_compress_extract_unique_differentiate_as_gathers():
    x0 = np.array([3.0, 1.0, 3.5, 2.0, 0.5])
    cond = x0 > 1.5
    for fn in (lambda x: np.compress(cond, x) ** 2, lambda x: np.extract(x > 1.5, x) ** 2,
               lambda x: np.unique(x) ** 3,
               lambda x: np.compress([True, False], np.reshape(x[:4], (2, 2)), axis=1) * x[4]):
        want_value = fn(x0)
        x = pj.constant(x0)
        np.testing.assert_allclose(fn(x).numpy(), want_value)
        w = np.linspace(1.0, 2.0, np.size(want_value)).reshape(np.shape(want_value))
        got = pj.grad(lambda x: pj.sum(fn(x) * w))(x0)
        want = central_differences(lambda v: np.sum(fn(v) * w), x0)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_where_with_the_condition_alone_is_nonzero():
    x0 = np.array([[0.5, -1.0], [2.0, -3.0]])
    x = pj.constant(x0)
    for got, want in zip(np.where(x > 0), np.where(x0 > 0)):
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_allclose(np.asarray(pj.grad(lambda x: np.sum(x[np.where(x > 0)] ** 2))(x0)),
                               np.where(x0 > 0, 2 * x0, 0.0))


def test_the_compress_method_takes_the_condition_first():
    a = np.array([[0.0, 1.0], [2.0, 3.0]])
    np.testing.assert_array_equal(pj.constant(a).compress([True, False], axis=1).numpy(),
                                  a.compress([True, False], axis=1))
    np.testing.assert_array_equal(pj.constant(a).nonzero()[1].numpy(), a.nonzero()[1])


def test_unique_returns_numpys_index_inverse_counts():
    a = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]])
    for kwargs in ({}, {"axis": 0}):
        want = np.unique(a, return_index=True, return_inverse=True, return_counts=True, **kwargs)
        got = np.unique(pj.constant(a), return_index=True, return_inverse=True,
                        return_counts=True, **kwargs)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w)


def test_unique_of_repeated_differentiated_values_warns():
    x = pj.constant(np.array([2.0, 1.0, 2.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        with pytest.warns(RuntimeWarning, match="numpy.unique .*repeated values.*first copy"):
            y = pj.sum(np.unique(x))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [1.0, 1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.unique(pj.constant(np.array([2.0, 2.0])))     # nothing differentiated: no warning


def _random_key(rng, shape):
    """A key mixing ints, slices, None, Ellipsis, index arrays (broadcasting against each
    other) and one-axis masks selecting exactly two entries (so they broadcast too)."""
    index_shape = [(2,), (1, 2), (2, 1), ()][rng.integers(4)]
    key, axes = [], list(shape)
    ellipsis = rng.random() < 0.2
    for size in axes:
        kind = rng.integers(6)
        if kind == 0:
            key.append(int(rng.integers(-size, size)))
        elif kind == 1:
            start, stop = sorted(rng.integers(-size, size + 1, 2))
            key.append(slice(int(start), int(stop), int(rng.choice([1, 2, -1]))))
        elif kind == 2:
            key.append(rng.integers(-size, size, index_shape))
        elif kind == 3:
            mask = np.zeros(size, bool)
            mask[rng.choice(size, 2, replace=False)] = True
            key.append(mask if index_shape in ((2,), (1, 2)) else slice(None))
        elif kind == 4:
            key.extend([None, slice(None)])
        else:
            key.append(slice(None))
    if ellipsis:
        cut = int(rng.integers(len(key) + 1))
        key = key[:cut] + [Ellipsis] + [k for k in key[cut:] if k is None][:1]
    return tuple(key)


def test_random_keys_index_as_numpy_does():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(3, 4, 5))
    t = pj.constant(a)
    checked = 0
    for _ in range(300):
        key = _random_key(rng, a.shape)
        try:
            want = a[key]
        except IndexError:
            with pytest.raises(IndexError):
                t[key]
            continue
        np.testing.assert_array_equal(t[key].numpy(), want, err_msg=repr(key))
        checked += 1
        if checked % 20 == 0:          # and the gradient: the adjoint of the selection
            w = rng.normal(size=want.shape)
            want_grad = np.zeros_like(a)
            np.add.at(want_grad, key, w)
            got = pj.grad(lambda x: pj.sum(x[key] * w))(a)
            np.testing.assert_allclose(np.asarray(got), want_grad, err_msg=repr(key))
    assert checked > 150
