"""In-place assignment with value semantics: every idiom differentiates as its functional
rewrite does, on every path (eager, tapes, pfor, the while-loop, compiled, forward mode,
sparsity detection), matches float64 central differences, and never changes a value a tape
or a trace recorded."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

import pforjac as pj
import pforjac.numpy as pnp
from pforjac import sparse

RNG = np.random.default_rng(32)
X = RNG.uniform(0.5, 1.5, 6)


# -- idioms: (written with assignments, the functional rewrite) ----------------------------
def ode(y):
    d = np.empty_like(y)
    d[0] = -y[0] ** 2 + y[1]
    d[1:-1] = (y[2:] - 2 * y[1:-1] + y[:-2]) + y[1:-1] * (1 - y[1:-1])
    d[-1] = y[-2] - y[-1]
    return d


def ode_ref(y):
    mid = (y[2:] - 2 * y[1:-1] + y[:-2]) + y[1:-1] * (1 - y[1:-1])
    return pj.concat([(-y[0] ** 2 + y[1])[None], mid, (y[-2] - y[-1])[None]], 0)


def augmented_slice(x):
    f = x.copy()
    f[1:] -= x[:-1] ** 2
    f[::2] *= 3.0
    f[-1] /= x[0]
    return f


def augmented_slice_ref(x):
    f = pj.concat([x[:1], x[1:] - x[:-1] ** 2], 0)
    f = f * np.array([3.0, 1.0] * 3)
    return pj.concat([f[:-1], (f[-1] / x[0])[None]], 0)


MASK = np.array([True, False, True, True, False, False])


def constant_mask(x):
    d = x * x
    d[MASK] = x[:3]
    d[np.flatnonzero(~MASK)] += 1.0         # (reading d[mask] is another feature's)
    return d


def constant_mask_ref(x):
    placed = pj.concat([x[:1], x[:1], x[1:2], x[2:3], x[:2]], 0)   # x[:3] at 0, 2, 3
    return pj.where(MASK, placed, x * x + 1.0)


def data_mask(x):
    d = pj.sin(3 * x)
    d[d < 0] = 0.0
    d[x > 1.0] = x[0]
    return d


def data_mask_ref(x):
    d = pj.where(pj.sin(3 * x) < 0, 0.0, pj.sin(3 * x))
    return pj.where(x > 1.0, x[0], d)


def int_arrays(x):
    d = np.zeros_like(x, shape=(3, 4))
    d[[0, 2, 0], [1, 3, 1]] = x[:3]          # (0, 1) twice: the last write wins
    d[1] = x[2:]
    return d


def int_arrays_ref(x):
    row0 = pj.concat([pj.zeros((1,), "float64"), x[2:3], pj.zeros((2,), "float64")], 0)
    row2 = pj.concat([pj.zeros((3,), "float64"), x[1:2]], 0)
    return pj.stack([row0, x[2:], row2])


def whole(x):
    y = x * 1.0
    y += x ** 2
    y *= 3.0
    y /= x + 2.0
    y **= 2
    y -= x
    return y


def whole_ref(x):
    return ((x + x ** 2) * 3.0 / (x + 2.0)) ** 2 - x


def numpy_writers(x):
    a = np.zeros_like(x, shape=(3, 3))
    np.fill_diagonal(a, x[:3])
    np.put(a, [1, -1], x[3:5] * 2)             # -1 is a's last entry, a diagonal one
    np.place(a, np.eye(3, k=-1, dtype=bool), [x[5]])
    b = np.ones_like(x)
    np.copyto(b, x ** 3, where=MASK)
    np.multiply(b, x, out=b)
    np.exp(b, out=b)
    c = np.zeros_like(x, shape=())
    np.sum(x, out=c)
    return pj.concat([a.ravel(), b, c[None]], 0)


def numpy_writers_ref(x):
    z = pj.zeros((1,), "float64")
    a = pj.concat([x[:1], 2 * x[3:4], z, x[5:6], x[1:2], z, z, x[5:6], 2 * x[4:5]], 0)
    b = pj.exp(pj.where(MASK, x ** 3, 1.0) * x)
    return pj.concat([a, b, pj.sum(x)[None]], 0)


def two_d(x):
    a = np.zeros_like(x, shape=(4, 4))
    a[:, 0] = x[:4]
    a[1, :] += x[2:]
    a[2:, 2:] = x[:2, None] * x[None, 4:]
    a[..., -1] -= 1.0
    return a


def two_d_ref(x):
    a = pj.stack([x[:4]] + [pj.zeros((4,), "float64")] * 3, axis=1)
    a = a + pj.stack([pj.zeros((4,), "float64"), x[2:], pj.zeros((4,), "float64"),
                      pj.zeros((4,), "float64")])
    block = x[:2, None] * x[None, 4:]
    a = pj.concat([a[:2], pj.concat([a[2:, :2], block], 1)], 0)
    return a - np.array([0, 0, 0, 1.0])


def view_writes(x):
    m = np.zeros_like(x, shape=(3, 3))
    for row, v in zip(m, x[:3]):             # rows are views: writing them writes m
        row[:] = v * x[3:]
    m.T[0] += 1.0
    col = m[:, 1]
    col *= x[:3]
    flat = m.ravel()
    flat[-1] = x[5]
    return m


def view_writes_ref(x):
    m = x[:3, None] * x[None, 3:]
    m = m + np.array([1.0, 0, 0])
    m = m * pj.stack([pj.ones((3,), "float64"), x[:3], pj.ones((3,), "float64")], 1)
    return pj.concat([m.reshape(-1)[:-1], x[5:]], 0).reshape(3, 3)


IDIOMS = {"ode": (ode, ode_ref), "augmented_slice": (augmented_slice, augmented_slice_ref),
          "constant_mask": (constant_mask, constant_mask_ref),
          "data_mask": (data_mask, data_mask_ref), "int_arrays": (int_arrays, int_arrays_ref),
          "whole": (whole, whole_ref), "numpy_writers": (numpy_writers, numpy_writers_ref),
          "two_d": (two_d, two_d_ref), "view_writes": (view_writes, view_writes_ref)}


def _tape(f, x, pfor=True):
    with pj.GradientTape(persistent=not pfor) as g:
        g.watch(x)
        y = f(x)
    return g.jacobian(y, x, experimental_use_pfor=pfor)


PATHS = {
    "tape_pfor": lambda f, x: _tape(f, x),
    "tape_loop": lambda f, x: _tape(f, x, pfor=False),
    "jacobian": lambda f, x: pj.jacobian(f, x),
    "jacobian_loop": lambda f, x: pj.jacobian(f, x, vectorize=False),
    "compiled": lambda f, x: pj.function(lambda y: pj.jacobian(f, y))(x),
    "jacfwd": lambda f, x: pj.jacfwd(f)(x),
    "forward_mode": lambda f, x: pj.jacobian(f, x, strategy="forward-mode", vectorize=True),
}


def _central_differences(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    cols = [(np.asarray(f(pj.constant(x + eps * e)).numpy())
             - np.asarray(f(pj.constant(x - eps * e)).numpy())) / (2 * eps) for e in np.eye(x.size)]
    return np.stack(cols, -1)


@pytest.mark.parametrize("idiom", IDIOMS)
def test_values_match_the_functional_rewrite_and_central_differences(idiom):
    f, ref = IDIOMS[idiom]
    x = pj.constant(X)
    np.testing.assert_allclose(f(x).numpy(), ref(x).numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(pj.function(f)(x).numpy(), ref(x).numpy(), rtol=1e-13)
    np.testing.assert_allclose(pj.jacobian(f, x).numpy(), _central_differences(f, X),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("idiom", IDIOMS)
def test_derivatives_equal_the_functional_rewrites_on_every_path(idiom, path):
    f, ref = IDIOMS[idiom]
    x = pj.constant(X)
    got, want = PATHS[path](f, x), PATHS[path](ref, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("idiom", IDIOMS)
def test_sparsity_patterns_are_exact(idiom):
    """The pattern of each assigned slice is exact: the nonzeros of the Jacobian at a random
    point; a mask the input decides (data_mask) gives where's pattern, valid for every x."""
    f, ref = IDIOMS[idiom]
    got = sparse.jacobian_sparsity(f, X).toarray()
    want = sparse.jacobian_sparsity(ref, X).toarray() if idiom == "data_mask" else \
        pj.jacobian(f, pj.constant(X)).numpy().reshape(got.shape) != 0
    np.testing.assert_array_equal(got, want)


def test_a_large_ode_right_hand_side_gets_its_exact_tridiagonal_pattern():
    """1-D reaction-diffusion with 10,000 states, written with slice assignments."""
    n = 10_000

    def rhs(y):
        dydt = np.empty_like(y)
        dydt[0] = -2 * y[0] + y[1]
        dydt[1:-1] = (y[2:] - 2 * y[1:-1] + y[:-2]) + y[1:-1] * (1 - y[1:-1])
        dydt[-1] = y[-2] - 2 * y[-1]
        return dydt

    y = np.random.default_rng(3).uniform(0, 1, n)
    pattern = sparse.jacobian_sparsity(rhs, y)
    tridiagonal = scipy.sparse.diags([1, 1, 1], [-1, 0, 1], shape=(n, n), dtype=bool).tocsr()
    assert pattern.shape == (n, n) and pattern.nnz == 3 * n - 2
    assert (pattern != tridiagonal).nnz == 0
    jac = sparse.jacobian(rhs, y)
    assert jac.nnz == 3 * n - 2
    diag = np.r_[-2.0, -2 + 1 - 2 * y[1:-1], -2.0]
    np.testing.assert_allclose(jac.diagonal(), diag, rtol=1e-13)
    np.testing.assert_allclose(jac.diagonal(1), np.ones(n - 1))
    np.testing.assert_allclose(jac.diagonal(-1), np.ones(n - 1))


# -- value semantics -----------------------------------------------------------------------
def test_earlier_results_and_tape_records_keep_their_values():
    x = pj.constant(np.array([1.0, 2.0, 3.0]))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        t = x * x
        before = t * 1.0                     # read t before the assignment
        alias = t                            # a name for the same tensor, as numpy's
        t[0] = 10.0 * x[1]
        after = t * 1.0
    np.testing.assert_array_equal(before.numpy(), [1.0, 4.0, 9.0])
    np.testing.assert_array_equal(after.numpy(), [20.0, 4.0, 9.0])
    assert alias is t and alias.numpy()[0] == 20.0
    np.testing.assert_array_equal(g.jacobian(before, x).numpy(), np.diag([2.0, 4.0, 6.0]))
    np.testing.assert_array_equal(g.jacobian(after, x).numpy(),
                                  [[0, 10.0, 0], [0, 4.0, 0], [0, 0, 6.0]])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])


def test_a_watched_source_refuses_assignment_and_keeps_its_value():
    x = pj.constant(np.array([1.0, 2.0]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * 3.0
        with pytest.raises(TypeError, match="source a recording GradientTape watches"):
            x[0] = 5.0
        with pytest.raises(TypeError, match="source a recording GradientTape watches"):
            x += 1.0
        z = x.copy()                         # the way out: a copy is a new tensor
        z[0] = 5.0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(z.numpy(), [5.0, 2.0])
    np.testing.assert_array_equal(g.gradient(y, x).numpy(), [3.0, 3.0])
    with pytest.raises(TypeError, match="watches"):
        pj.jacobian(lambda a: a.__setitem__(0, 1.0), x)


def test_copies_are_new_tensors_and_variables_assign():
    x = pj.constant([1.0, 2.0])
    for y in (x.copy(), np.copy(x), x.astype(x.dtype), x.flatten(), pnp.array(x)):
        assert y is not x
        y[0] = 9.0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    v = pj.Variable([1.0, 2.0])
    with pj.GradientTape() as g:
        before = v * 1.0
        v[1] = 5.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 5.0])
    np.testing.assert_array_equal(g.gradient(before, v).numpy(), [1.0, 1.0])


def test_an_assignment_after_the_tape_is_not_taken_for_the_recorded_value():
    x = pj.constant(np.array([1.0, 2.0]))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = x * x
    y[0] = 0.0                                # outside the block: the tape did not see it
    with pytest.raises(ValueError, match="not recorded by this tape"):
        g.gradient(y, x)


def test_numpy_rules_for_writing_into_a_tensor():
    t = pnp.zeros(3, dtype=int)
    t[0] = 2.7                                # numpy casts (truncates) into an int array
    assert t.numpy().tolist() == [2, 0, 0] and t.dtype.kind == "i"
    with pytest.raises(TypeError, match="same_kind"):
        t += 0.5
    with pytest.raises(ValueError, match="could not broadcast"):
        t[:2] = [1, 2, 3]
    with pytest.raises(TypeError, match="imaginary"):
        pnp.zeros(2)[0] = 1j
    with pytest.raises(ValueError, match="does not match the shape"):
        a = pnp.zeros(2)
        a += pnp.ones((3, 2))


def test_writing_a_tensor_into_a_numpy_array_names_the_line_and_the_fix():
    x = pj.constant(np.array([1.0, 2.0, 3.0, 4.0]))

    def f(x):
        u = np.zeros(6)
        u[1:5] = x
        return u
    for call in (lambda: pj.jacobian(f, x), lambda: pj.function(f)(x)):
        with pytest.raises(TypeError, match=r"`u\[1:5\] = x` writes a Tensor into the numpy "
                                            r"array `u`.*np.zeros_like\(x, shape=6\)"):
            call()


def test_masks_and_indices_computed_in_a_trace_use_where():
    x = pj.constant(X)

    def f(y):
        d = y * 1.0
        d[y > 1.0] = pj.sum(y)                # a traced mask, a traced value
        return d
    want = pj.jacobian(lambda y: pj.where(y > 1.0, pj.sum(y), y), x).numpy()
    np.testing.assert_allclose(pj.function(lambda y: pj.jacobian(f, y))(x).numpy(), want)

    def rows(y):
        return pj.pfor(lambda i: _set_at(y, i), 3)
    got = pj.function(rows)(x).numpy()
    want = np.stack([np.where(np.arange(6) == i, 0.0, X) for i in range(3)])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="number of True entries"):
        pj.function(lambda y: _set_mask(y, y > 1.0, y[:2]))(x)


def _set_at(y, i):
    d = y * 1.0
    d[i] = 0.0
    return d


def _set_mask(y, mask, v):
    d = y * 1.0
    d[mask] = v
    return d


# -- views -----------------------------------------------------------------------------------
def test_views_see_assignments_and_write_into_their_base_as_numpy_views_do():
    def program(lib_zeros, t_from):
        t = t_from(np.arange(6.0))
        a, m = t[1:4], t.reshape(2, 3)
        r, tr, k = m[1], m.T, t[2]           # k: one element, a copy in numpy
        t[2] = 100.0
        r[:] = -1.0
        a += 1.0
        tr[0] *= 10.0
        return [np.array(v) for v in (t, a, m, r, tr)] + [float(k)]
    got = program(None, pj.constant)
    want = program(None, np.array)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)




def test_a_view_of_a_watched_source_refuses_assignment():
    x = pj.constant(np.array([1.0, 2.0, 3.0]))
    with pj.GradientTape() as g:
        g.watch(x)
        with pytest.raises(TypeError, match="watches"):
            x[1:][0] = 5.0
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])


def test_arrays_handed_out_before_an_assignment_keep_their_values():
    t = pj.constant(np.array([1.0, 2.0]))
    before = t.numpy()
    t[0] = 7.0
    np.testing.assert_array_equal(before, [1.0, 2.0])
    np.testing.assert_array_equal(t.numpy(), [7.0, 2.0])


def test_add_at_adds_at_every_repeated_index():
    x = pj.constant(X)

    def f(x):
        d = np.zeros_like(x)
        np.add.at(d, [0, 2, 0], x[3:] ** 2)
        np.subtract.at(d, np.array([1]), x[0])
        return d
    want_value = np.zeros(6)
    np.add.at(want_value, [0, 2, 0], X[3:] ** 2)
    want_value[1] -= X[0]
    np.testing.assert_allclose(f(x).numpy(), want_value, rtol=1e-15)
    jac = pj.jacobian(f, x).numpy()
    np.testing.assert_allclose(jac, _central_differences(f, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(pj.function(lambda y: pj.jacobian(f, y))(x).numpy(), jac)
    np.testing.assert_array_equal(sparse.jacobian_sparsity(f, X).toarray(), jac != 0)


def test_the_hint_holds_where_the_source_line_cannot_be_read():
    namespace = {"np": np}
    exec(compile("def f(x):\n    u = np.zeros(5)\n    u[2:] = x\n    return u\n", "<made>",
                 "exec"), namespace)
    with pytest.raises(TypeError, match=r"an assignment into an array \(line 3 of <made>\).*"
                                        r"np.zeros_like\(x, shape=...\)"):
        pj.jacobian(namespace["f"], np.ones(3))


def test_a_compiled_function_keeps_the_closed_over_values_it_traced():
    """As documented (docs/numpy.md): pj.function bakes closed-over tensors, as jax.jit."""
    c = pj.constant(np.array([1.0, 2.0]))
    f = pj.function(lambda x: x * c)
    x = pj.constant(np.array([1.0, 1.0]))
    f(x)
    c[0] = 100.0
    np.testing.assert_array_equal(f(x).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal((x * c).numpy(), [100.0, 2.0])


def test_batch_jacobian_follows_rows_through_assignments_that_keep_the_batch_axis():
    x = pj.constant(np.random.default_rng(0).uniform(size=(5, 3)))

    def f(x):
        d = np.zeros_like(x)
        d[:, 0] = x[:, 1] ** 2
        d[:, 1:] = x[:, :2] * x[:, 2:]
        d[..., 2] += 1.0
        return d
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = f(x)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # the row check follows index_update
        got = g.batch_jacobian(y, x).numpy()
    full = g.jacobian(y, x).numpy()
    np.testing.assert_array_equal(got, np.stack([full[b, :, b] for b in range(5)]))


def test_tensors_with_views_pickle_as_their_values():
    import pickle
    x = pj.constant(np.arange(4.0))
    v = x[1:]
    for t in (x, v):
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(t)).numpy(), t.numpy())


def test_numpys_writers_assign_a_variable():
    v = pj.Variable(np.zeros((2, 2)))
    with pj.GradientTape() as g:
        y = v * 2.0
        np.fill_diagonal(v, 3.0)
        np.put(v, [1], 5.0)
        np.add.at(v, [0], 1.0)                  # row 0, as numpy's
        np.place(v, np.array([[False, False], [True, False]]), 7.0)
    np.testing.assert_array_equal(v.numpy(), [[4.0, 6.0], [7.0, 3.0]])
    np.testing.assert_array_equal(g.gradient(y, v).numpy(), np.full((2, 2), 2.0))


def test_an_assignment_into_an_argument_under_pj_function_leaves_the_callers_tensor():
    """As documented: eagerly the caller's tensor changes (numpy's way); a compiled function
    passes its own tensor."""
    def f(x):
        x += 1.0
        x[0] = 0.0
        return x * 2
    x = pj.constant(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(pj.function(f)(x).numpy(), [0.0, 6.0])
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(f(x).numpy(), [0.0, 6.0])
    np.testing.assert_array_equal(x.numpy(), [0.0, 3.0])


def test_numpys_writers_into_an_array_name_the_fix():
    x = pj.constant(X)
    with pj.GradientTape() as g:
        g.watch(x)
        for write in (lambda: np.exp(x, out=np.empty(6)), lambda: np.copyto(np.empty(6), x),
                      lambda: np.put(np.zeros(6), [0], x[0])):
            with pytest.raises(TypeError, match=r"into a numpy array.*np.zeros_like\(x, shape"):
                write()


# -- views (numpy's semantics, every view-making function: tests/test_mutation_views.py) ----
def test_contiguous_reshapes_of_views_and_copies_of_flips_still_write():
    x = np.array([1.0, 2.0, 3.0, 4.0])

    def row_reshape(x):
        t = x.reshape(2, 2) * 1.0
        r = t[0].reshape(2, 1)            # a C-contiguous row: a view in numpy too
        r[1, 0] = 7.0 * x[3]
        return t.ravel()

    def flipped_copy(x):
        s = np.flip(x * 1.0).copy()
        s[0] = 3.0
        return s
    expected = np.eye(4)
    expected[1] = [0.0, 0.0, 0.0, 7.0]
    np.testing.assert_array_equal(pj.jacobian(row_reshape, x), expected)
    np.testing.assert_array_equal(pj.jacobian(flipped_copy, x), np.diag([0.0, 1, 1, 1])[:, ::-1])
