"""2-D products by np.dot in generated numpy code (compiled/dot_products.py): where both
operands are known contiguous, np.dot makes np.matmul's bits; the lean entry's code (inputs
C-contiguous) takes inputs as known, the general code does not; strided operands, unit
dimensions and other dtypes keep np.matmul."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.codegen import program_to_source

pnp = pj.numpy
RNG = np.random.default_rng(7)


def _layouts(a):
    """`a` C-ordered, as an F-ordered copy, and as the transpose of a C-ordered array."""
    return [a, np.asfortranarray(a), np.ascontiguousarray(a.T).T]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_np_dot_is_np_matmul_bit_for_bit_on_contiguous_operands(dtype):
    for m, k, n in [(64, 4, 32), (64, 32, 8), (2, 2, 2), (37, 19, 53), (300, 70, 9)]:
        x = (RNG.normal(size=(m, k)) * 10.0 ** RNG.integers(-3, 3, (m, k))).astype(dtype)
        y = RNG.normal(size=(k, n)).astype(dtype)
        for a in _layouts(x):
            for b in _layouts(y):
                got, want = np.dot(a, b), np.matmul(a, b)
                assert got.flags.c_contiguous and want.flags.c_contiguous
                assert got.tobytes() == want.tobytes()
        for a in _layouts(x):                                   # (syrk: x @ x.T, x.T @ x)
            assert np.dot(a, a.T).tobytes() == np.matmul(a, a.T).tobytes()
            assert np.dot(a.T, a).tobytes() == np.matmul(a.T, a).tobytes()


def _net(x, w, v):
    h = pnp.tanh(x @ w)
    return (h @ v) @ h.T, h[:, :1] @ v[:1]


def _sources(f, *args):
    """The general code's source and the lean entry's (`c_inputs`)."""
    compiled = f._compiled(args, {})[0]
    return (program_to_source(compiled.program, "f", compiled.exact, c) for c in (False, True))


def test_which_products_are_np_dot():
    x, w, v = (RNG.normal(size=s) for s in [(16, 5), (5, 8), (8, 8)])
    f = pj.function(_net)
    f(x, w, v)
    general, lean = _sources(f, x, w, v)
    # general code: (h @ v) @ h.T alone (computed operands); not x @ w, h @ v (inputs), nor
    # the (16, 1) @ (1, 8) outer product; lean code: all but the outer product
    assert general.count("np_dot(") == 1 and general.count("np_matmul(") == 3, general
    assert lean.count("np_dot(") == 3 and lean.count("np_matmul(") == 1, lean


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lean_and_general_results_are_the_same_bits(dtype):
    x, w, v = (RNG.normal(size=s).astype(dtype) for s in [(16, 5), (5, 8), (8, 8)])
    variants = [(x, w, v), (np.asfortranarray(x), w, np.asfortranarray(v)),
                (np.repeat(x, 2, axis=1)[:, ::2], w.T.copy().T, v)]   # (strided, F-ordered)
    want = [np.asarray(o) for o in _net(pj.constant(x), pj.constant(w), pj.constant(v))]
    for args in variants:
        f = pj.function(_net)
        first = f(*args)                       # (the general path: inputs as they are)
        again = f(*args)                       # (the lean entry: C-contiguous copies)
        assert f._lean and f.trace_count == 1
        for a, b, e in zip(first, again, want):
            assert a.tobytes() == b.tobytes()
            np.testing.assert_allclose(a, e, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_strided_and_integer_products_stay_matmul():
    f = pj.function(lambda a, b: ((a * 2.0)[:, ::2] @ (b * 2.0), (a > 0)[:, :4] @ (b > 0)))
    a, b = RNG.normal(size=(6, 8)), RNG.normal(size=(4, 3))
    f(a, b)
    general, lean = _sources(f, a, b)
    assert "np_dot(" not in general and "np_dot(" not in lean


def test_lean_code_is_compiled_again_only_where_a_product_reads_an_input():
    x = RNG.normal(size=(16, 5))
    for fn, again in [(lambda a: pnp.tanh(a) * 2.0, False), (lambda a: pnp.tanh(a @ a.T), True)]:
        f = pj.function(fn)
        f(x)
        f(x)                                          # (the lean entry made, and run)
        compiled = f._compiled((x,), {})[0]
        assert (compiled.lean_code() is not compiled.numpy_code()) is again
