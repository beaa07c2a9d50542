"""numpy's view semantics for sliced views, which link lazily (mutation_views.py: a view
taken by slicing records (root, key) and makes its index proxy on first need), and for a
tensor whose memory order is not C: every value equals numpy's, bit for bit."""
import numpy as np
import pytest

import pforjac as pj


def _slice(n, rng):
    def bound():
        return None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
    step = None if rng.random() < 0.3 else int(rng.choice([1, 2, 3, -1, -2, -3]))
    return slice(bound(), bound(), step)


def _key(shape, rng):
    if rng.random() < 0.2:
        return _slice(shape[0], rng)
    return tuple(_slice(n, rng) for n in shape[:int(rng.integers(1, len(shape) + 1))])


def _program(seed, steps=16):
    """Steps on a pool of arrays: sliced views (of views too), transposes, reshapes,
    and writes (`=`, `+=`, `*=`, np.copyto) into a sliced part of any of them; each step
    drawn by running it on numpy."""
    rng = np.random.default_rng(seed)
    shape = [(7,), (4, 5), (3, 4, 5), (6, 1, 4)][seed % 4]
    pool, steps_ = [np.arange(np.prod(shape), dtype=float).reshape(shape)], []
    for _ in range(steps):
        i = int(rng.integers(0, len(pool)))
        a, kind = pool[i], str(rng.choice(["view", "view", "T", "reshape", "write"]))
        if not a.size or not a.ndim:
            continue
        arg = _key(a.shape, rng) if kind in ("view", "write") else None
        if kind == "write":
            arg = (arg, str(rng.choice(["=", "+=", "*=", "copyto"])),
                   rng.integers(-5, 6, a[arg].shape if a[arg].ndim else ()).astype(float))
            if arg[1] == "copyto":
                arg = (Ellipsis, "copyto", rng.integers(-5, 6, a.shape).astype(float))
        steps_.append((i, kind, arg))
        _step(pool, i, kind, arg)
    return shape, steps_


def _step(pool, i, kind, arg):
    a = pool[i]
    if kind == "view":
        pool.append(a[arg])
    elif kind == "T":
        pool.append(a.T)
    elif kind == "reshape":
        pool.append(a.reshape(-1))
    else:
        key, op, v = arg
        if op == "=":
            a[key] = v
        elif op == "+=":
            a[key] += v
        elif op == "*=":
            a[key] *= v
        else:
            np.copyto(a, v)


def _run(shape, steps, make):
    pool = [make(np.arange(np.prod(shape), dtype=float).reshape(shape))]
    for step in steps:
        _step(pool, *step)
    return [np.asarray(a) for a in pool]


@pytest.mark.parametrize("block", range(3))
def test_sliced_views_and_writes_give_numpys_values(block):
    for seed in range(40 * block, 40 * block + 40):
        shape, steps = _program(seed)
        want = _run(shape, steps, np.array)
        got = _run(shape, steps, pj.constant)
        for k, (w, g) in enumerate(zip(want, got)):
            np.testing.assert_array_equal(g, w, err_msg=f"seed {seed}, array {k}")


def test_gradients_through_lazily_linked_views():
    def f(x):
        a = x.reshape(4, 5) * 1.0
        v1, v2, v3 = a[1:, ::2], a[::-1, 1:4], a[:, ::-2]
        v1[0] = x[:3] ** 2                    # into the root through one view
        a[2:, :] *= 3.0                       # into the root: all three follow
        v3 += v2[:, :1]                       # a view of a write into another
        return np.concatenate([np.ravel(v) for v in (a, v1, v2, v3)])
    x = np.linspace(0.5, 1.5, 20)
    eps = 1e-6
    want = np.stack([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(20)], -1)
    np.testing.assert_array_equal(np.asarray(f(pj.constant(x))), f(x))
    np.testing.assert_allclose(pj.jacobian(f, pj.constant(x)), want, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(pj.jacfwd(f)(x), want, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("write", ["t[...] = v", "np.copyto"])
def test_an_assignment_keeps_a_fortran_ordered_arrays_layout(write):
    """numpy's assignment never changes an array's memory order: a C reshape of the
    transpose of a Fortran-ordered array stays a view of it after an assignment."""
    def run(make):
        r = np.copy(make(np.arange(20.0).reshape(5, 4)).T)        # (4, 5), Fortran order
        if write == "np.copyto":
            np.copyto(r, np.ones((4, 5)))
        else:
            r[...] = np.ones((4, 5))
        flat = r.T.reshape(1, 20)                                 # numpy: a view
        r.T[...] = -np.arange(20.0).reshape(5, 4)
        return np.asarray(flat), np.asarray(r)
    for got, want in zip(run(pj.constant), run(np.array)):
        np.testing.assert_array_equal(got, want)
