"""numpy's view semantics for in-place writes: every view numpy makes (slices, transposes,
swapaxes, flips, the pieces of split, reshapes, ...) sees writes into its base and writes
into it, chains included, with the values plain numpy gives; and derivatives through them
equal float64 central differences of the same program run on numpy arrays, on every path."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import sparse

import view_programs as vp

X = np.linspace(0.5, 1.5, vp.N_INPUTS)


def _flat(outs):
    return np.concatenate([np.ravel(o) for o in outs])


@pytest.mark.parametrize("block", range(5))
def test_random_programs_of_views_and_writes_give_numpys_values(block):
    """Blocks 0-3 on a real array, block 4 on a complex one (its parts are views too)."""
    for seed in range(30 * block, 30 * block + 30):
        program = vp.generate(seed, complex_=block == 4)
        want = vp.run(program, X)
        got = vp.run(program, pj.constant(X))
        assert len(got) == len(want)
        for k, (w, g) in enumerate(zip(want, got)):
            np.testing.assert_array_equal(np.asarray(g), w, err_msg=f"seed {seed}, array {k}")


def _tape(f, x, pfor=True):
    with pj.GradientTape(persistent=not pfor) as g:
        g.watch(x)
        y = f(x)
    return g.jacobian(y, x, experimental_use_pfor=pfor, unconnected_gradients="zero")


PATHS = {
    "tape_pfor": lambda f, x: _tape(f, x),
    "tape_loop": lambda f, x: _tape(f, x, pfor=False),
    "jacobian": lambda f, x: pj.jacobian(f, x),
    "compiled": lambda f, x: pj.function(lambda y: pj.jacobian(f, y))(x),
    "jacfwd": lambda f, x: pj.jacfwd(f)(x),
    "forward_mode": lambda f, x: pj.jacobian(f, x, strategy="forward-mode", vectorize=True),
}


def _central_differences(f, x, eps=1e-6):
    return np.stack([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)], -1)


@pytest.mark.parametrize("seed", [3, 7, 11, 19, 26, 31])
def test_derivatives_through_views_match_central_differences_on_every_path(seed):
    program = vp.generate(seed)

    def f(x):
        return _flat(vp.run(program, x))
    want = _central_differences(f, X)
    for name, path in PATHS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")              # no fallback to a loop either
            got = np.asarray(path(f, pj.constant(X)))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=name)
    pattern = sparse.jacobian_sparsity(f, X).toarray()
    np.testing.assert_array_equal(pattern, want != 0)


def test_views_in_vectorized_and_compiled_bodies():
    batch = X + np.arange(3)[:, None] * 0.1
    for seed in (2, 5, 8, 13):
        program = vp.generate(seed)

        def f(x):
            return _flat(vp.run(program, x))
        want = np.stack([f(x) for x in batch])
        np.testing.assert_array_equal(np.asarray(pj.vmap(f)(batch)), want)
        np.testing.assert_array_equal(np.asarray(pj.function(pj.vmap(f))(batch)), want)


# -- the cases by name ------------------------------------------------------------------------
def _every_view(make):
    t = make(np.arange(12.0).reshape(3, 4))
    s, fl, (top, rest) = np.swapaxes(t, 0, 1), np.flip(t, 1), np.split(t, [1])
    d, r, fr = np.diagonal(t), t.T.reshape(-1), t[0].reshape(2, 2, order="F")
    t[1, 2] = -5.0                        # into the base: every view sees it
    s[0, 2] = 100.0                       # into views: the base and the others see it
    fl[0, 0] += 7.0
    rest[1, 1] = 55.0
    fr[1, 0] = 33.0                       # t[0, 1]
    r[0] = -1.0                           # a copy in numpy: writes into itself alone
    chain = np.expand_dims(np.rot90(t), 0)[0, 1:, ::2]
    chain *= 2.0
    return [np.array(v) for v in (t, s, fl, top, rest, d, r, fr, chain)]


def test_each_view_making_function_follows_numpy():
    for got, want in zip(_every_view(pj.constant), _every_view(np.array)):
        np.testing.assert_array_equal(got, want)


def _swapped_write(x):
    t = x.reshape(2, 2) * 1.0
    s = t.swapaxes(0, 1)
    s[0, 1] = 10.0 * x[0]                 # numpy: writes t[1, 0]
    t[0, 0] = s[1, 0] * x[3]              # s[1, 0] is t[0, 1]
    return np.concatenate([t.ravel(), s.ravel()])


def _fortran_reshape_write(x):
    t = x * 1.0
    r = t.reshape(2, 2, order="F")        # a view of the 1-D t
    r[0, 1] = 9.0 * x[0]                  # t[2]
    t[1] += x[2]                          # r[1, 0]
    return np.concatenate([t, r.ravel()])


def _reshape_of_transpose_write(x):
    t = x.reshape(2, 2) * 1.0
    r = t.T.reshape(-1)                   # a copy in numpy
    r[0] = 9.0 * x[1]
    t[1, 1] = x[0] ** 2
    return np.concatenate([t.ravel(), r])


def _flip_write(x):
    t = x * 1.0
    np.flip(t)[0] = 2.0 * x[1]            # writes t[-1]
    return t


@pytest.mark.parametrize("f", [_swapped_write, _fortran_reshape_write,
                               _reshape_of_transpose_write, _flip_write])
def test_writes_route_as_numpys_and_differentiate(f):
    x = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(np.asarray(f(pj.constant(x))), f(x))
    want = _central_differences(f, x)
    for path in ("jacobian", "compiled", "forward_mode"):
        np.testing.assert_allclose(np.asarray(PATHS[path](f, pj.constant(x))), want,
                                   rtol=1e-8, atol=1e-9)


def _layout_decides(x):
    """numpy's reshape is a view or a copy by the memory layout: a product of a transpose
    is in Fortran order (a ufunc keeps its input's), so its C reshape copies, its Fortran
    one views."""
    t = x.T * 2.0
    r = t.reshape(-1)
    r[0] = 5.0
    f = t.reshape(2, 6, order="F")
    f[1, 0] = -1.0
    c = x.T.copy()                  # ndarray.copy: C order, so its reshape is a view
    c.reshape(-1)[0] = 7.0
    k = np.copy(x.T)                # np.copy keeps the order: Fortran, a reshape copies
    k.reshape(-1)[1] = 8.0
    return np.concatenate([np.ravel(v) for v in (t, r, f, c, k)])


def test_views_follow_the_memory_layout_numpy_gives_a_result():
    x = np.arange(12.0).reshape(3, 4)
    want = _layout_decides(x)
    np.testing.assert_array_equal(np.asarray(_layout_decides(pj.constant(x))), want)
    np.testing.assert_array_equal(np.asarray(pj.function(_layout_decides)(x)), want)


def test_read_only_views_refuse_writes_as_numpy_and_follow_their_base():
    for make in (np.array, pj.constant):
        t = make(np.arange(4.0).reshape(2, 2))
        d, b = np.diagonal(t), np.broadcast_to(t[0], (3, 2))
        for view in (d, b, b[1:]):
            with pytest.raises(ValueError, match="read-only"):
                view[0] = 1.0
        t[1, 1] = 9.0
        t[0] += 1.0
        np.testing.assert_array_equal(np.asarray(d), [1.0, 9.0])
        np.testing.assert_array_equal(np.asarray(b), [[1.0, 2.0]] * 3)
    t = pj.constant(np.arange(3.0))
    wide, tall = np.broadcast_arrays(t, pj.constant(np.ones((2, 1))))
    with pytest.raises(ValueError, match="share memory"):    # numpy: a FutureWarning
        wide[0, 0] = 5.0
    t[1] = 7.0
    np.testing.assert_array_equal(wide.numpy(), [[0.0, 7.0, 2.0]] * 2)


def test_a_view_of_a_watched_source_refuses_assignment():
    x = pj.constant(np.arange(4.0).reshape(2, 2))
    with pj.GradientTape() as g:
        g.watch(x)
        for view in (np.swapaxes(x, 0, 1), np.flip(x)[0], np.split(x, 2)[1]):
            with pytest.raises(TypeError, match="watches"):
                view[0] = 5.0
    np.testing.assert_array_equal(x.numpy(), np.arange(4.0).reshape(2, 2))


def test_an_index_a_trace_computes_is_an_index_array_as_in_numpy():
    """pfor's loop index is a 0-d integer tensor; numpy copies at a 0-d integer array."""
    def body(make, i):
        t = make(np.arange(6.0).reshape(3, 2)) * 1.0
        row = t[i]
        row[0] = 5.0
        return t, row
    got = pj.pfor(lambda i: pj.stack(body(pj.constant, i)[1]), 3).numpy()
    t, row = body(np.array, np.array(1))
    np.testing.assert_array_equal(t, np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(got, [[5.0, 1.0], [5.0, 3.0], [5.0, 5.0]])
    np.testing.assert_array_equal(got[1], row)


def test_an_assignment_that_would_change_a_watched_view_is_refused():
    t = pj.constant(np.arange(6.0).reshape(2, 3))
    view = np.swapaxes(t, 0, 1)[1:]                  # t[:, 1:]
    with pj.GradientTape() as g:
        g.watch(view)
        y = view * 2.0
        t[0, 0] = 9.0                                # not in the view: allowed
        with pytest.raises(TypeError, match="would change a view of it.*watches as a source"):
            t[1, 2] = -1.0
    np.testing.assert_array_equal(view.numpy(), [[1.0, 4.0], [2.0, 5.0]])
    np.testing.assert_array_equal(t.numpy(), [[9.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    np.testing.assert_array_equal(g.gradient(y, view).numpy(), np.full((2, 2), 2.0))


def _writers_into_views(x):
    """numpy's writing functions, each into a view: out=, copyto, put, fill_diagonal,
    add.at (indices one array per axis), a mask, fill."""
    t = x.reshape(4, 6) * 1.0
    a = np.swapaxes(t, 0, 1)[1:4]              # (3, 4)
    b = t[::2, ::-2]                            # (2, 3)
    c = np.flip(t, 0).T                         # (6, 4)
    np.exp(a * 0.1, out=a)
    np.copyto(b, x[:3] * 3.0, where=np.array([True, False, True]))
    np.put(c, [0, 5, 23], x[3:6])
    np.fill_diagonal(c, x[6])
    np.add.at(a, ([0, 0, 2], [1, 1, 3]), x[7] ** 2)
    a[np.arange(12).reshape(3, 4) % 5 == 0] = x[8]
    np.negative(b, out=b)
    t.reshape(2, 12)[1].fill(x[9])              # (fill: a 0-d tensor)
    return np.concatenate([np.ravel(v) for v in (t, a, b, c)])


def test_numpys_writers_into_views_follow_numpy():
    x = np.linspace(0.5, 1.5, 24)
    want = _writers_into_views(x)
    np.testing.assert_array_equal(np.asarray(_writers_into_views(pj.constant(x))), want)
    cd = _central_differences(_writers_into_views, x)
    for path in ("tape_pfor", "compiled", "forward_mode"):
        np.testing.assert_allclose(np.asarray(PATHS[path](_writers_into_views, pj.constant(x))),
                                   cd, rtol=1e-7, atol=1e-8, err_msg=path)


_MAKERS = sorted({name for shape in vp.SHAPES
                  for name, _ in vp.view_makers(shape, np.random.default_rng(0), True)})


def _both_ways(name: str, shape: tuple, seed: int, x):
    """A view made by `name`, then writes into the base and into the view(s), alternating."""
    rng = np.random.default_rng(seed)
    base = x[:int(np.prod(shape))].reshape(shape) * (1.0 - 0.5j)
    make = dict(vp.view_makers(shape, rng, True))[name]
    views = [v for v in vp._as_list(make(base)) if np.ndim(v) and np.size(v)]
    arrays = [base] + views
    targets = [base] + (views if name not in ("diagonal", "broadcast_to") else [])  # (read-only)
    for k in range(6):
        target = targets[k % len(targets)]
        key = vp.basic_key(np.shape(target), rng) if k % 3 else Ellipsis
        target[key] = x[k] * (k + 1.0)
    return np.concatenate([np.ravel(a) for a in arrays])


@pytest.mark.parametrize("name", _MAKERS)
def test_each_view_maker_follows_numpy_writing_both_ways(name):
    for k, shape in enumerate(vp.SHAPES):
        if name not in dict(vp.view_makers(shape, np.random.default_rng(0), True)):
            continue
        want = _both_ways(name, shape, k, X)
        got = _both_ways(name, shape, k, pj.constant(X))
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=str(shape))


def _memory_orders(x):
    """ravel / flatten / reshape in numpy's memory-layout orders ("A", "K"), of a product
    of a transpose (numpy stores it in its operand's order), and writes through the views
    they make."""
    t = x.reshape(2, 3, 4).transpose(2, 0, 1) * 1.0
    outs = [np.ravel(t, order="K"), t.flatten("A"), np.reshape(t, (6, 4), order="A"),
            np.ravel(x.reshape(2, 3, 4)[:, ::-1].transpose(1, 2, 0), "K")]
    k = np.ravel(t, order="K")                # a view of t in numpy: writes reach it
    k[0] = x[5] * 3.0
    f = x.reshape(4, 6).T * 2.0               # Fortran order: "A" reads and views in F
    f.reshape(-1, order="A")[1] = x[1] * 5.0
    return np.concatenate([np.ravel(v) for v in outs + [t, f]])


def test_memory_layout_orders_read_and_write_as_numpys():
    x = np.linspace(0.5, 1.5, 24)
    rng = np.random.default_rng(5)
    for shape in vp.SHAPES:                   # every view maker's result, in every order
        a = np.arange(float(np.prod(shape))).reshape(shape)
        for name, make in vp.view_makers(shape, rng):
            v, w = make(a), make(pj.constant(a))
            v, w = (v[0], w[0]) if isinstance(v, (list, tuple)) else (v, w)
            for order in "CFAK":
                np.testing.assert_array_equal(np.asarray(np.ravel(w, order)),
                                              np.ravel(v, order), err_msg=f"{name} {order}")
    np.testing.assert_array_equal(np.asarray(_memory_orders(pj.constant(x))), _memory_orders(x))
    np.testing.assert_allclose(np.asarray(pj.jacobian(_memory_orders, x)),
                               _central_differences(_memory_orders, x), rtol=1e-7, atol=1e-8)
