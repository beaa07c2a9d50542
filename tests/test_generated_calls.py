"""Generated numpy code calls what a forward ends in (`compiled/plain_calls.py`), reads
outer products' 2-D operands (`outer_products.outer_products`), and reductions keep the axes
a reshape would put back (`passes/keepdims.py`): fewer numpy calls, the same bits."""
import re

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.passes import keep_reduced_axes
from pforjac.program import make_program

RNG = np.random.default_rng(5)


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert got.tobytes() == want.tobytes()


def _softmax_rows(x):
    top = pj.max(x, axis=1)
    e = pj.exp(x - pj.reshape(top, (x.shape[0], 1)))
    return e * pj.reshape(1.0 / pj.sum(e, axis=1), (x.shape[0], 1))


def test_a_reduction_keeps_the_axes_a_reshape_puts_back_through_elementwise_ops():
    program = make_program(_softmax_rows, [((16, 5), np.float64)])
    simplified = keep_reduced_axes(program)
    names = [e.prim.name for e in simplified.equations]
    assert "reshape" not in names and names.count("divide") == 1
    assert all(e.params["keepdims"] for e in simplified.equations if e.prim.name in ("max", "sum"))
    x = RNG.standard_normal((16, 5))
    _same_bits(pj.function(_softmax_rows)(x), _softmax_rows(pj.constant(x)).numpy())


def test_a_reduced_value_read_twice_keeps_its_reshape():
    def f(x):
        s = pj.sum(x, axis=1)
        return x * pj.reshape(s, (8, 1)), s * 2.0
    program = keep_reduced_axes(make_program(f, [((8, 3), np.float64)]))
    assert [e.prim.name for e in program.equations].count("reshape") == 1
    assert not any(e.params.get("keepdims") for e in program.equations)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_generated_code_calls_numpys_reduce_and_array_methods(dtype):
    def f(x, w):
        h = pj.transpose(w) @ pj.transpose(x)                    # (3, 64)
        return pj.sum(h, axis=0), pj.cast(h > 0.0, dtype), pj.max(h, axis=1)
    x, w = RNG.standard_normal((64, 4)).astype(dtype), RNG.standard_normal((4, 3)).astype(dtype)
    compiled = pj.function(f)
    src = compiled.source(x, w)
    assert "np.add.reduce(" in src and "np.maximum.reduce(" in src and re.search(r"= \w+\.T$", src, re.M)
    assert ".astype(" in src and "sum_impl" not in src and "transpose_impl" not in src
    for got, want in zip(compiled(x, w), f(pj.constant(x), pj.constant(w))):
        _same_bits(got, want.numpy())


def test_a_sum_over_a_short_last_axis_stays_with_its_forward():
    x = RNG.standard_normal((300, 3))               # sum_short_axis adds the slices instead
    compiled = pj.function(lambda x: pj.sum(pj.exp(x), axis=1))
    assert "sum_impl" in compiled.source(x)
    _same_bits(compiled(x), pj.sum(pj.exp(pj.constant(x)), axis=1).numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_per_example_outer_products_read_2d_operands(dtype):
    def loss(params, x, y):
        h = pj.tanh(x @ params["w0"])
        return pj.sum((h @ params["w1"] - y) ** 2)
    params = {"w0": RNG.standard_normal((4, 32)).astype(dtype),
              "w1": RNG.standard_normal((32, 8)).astype(dtype)}
    x, y = RNG.standard_normal((64, 4)).astype(dtype), RNG.standard_normal((64, 8)).astype(dtype)
    per_example = pj.function(pj.vmap(pj.grad(loss), in_axes=(None, 0, 0)))
    src = per_example.source(params, x, y)
    assert "'ab,ac->abc'" in src and ".reshape((64, 32, 1))" not in src
    got = per_example(params, x, y)
    tol = 1e-4 if dtype == np.float32 else 1e-11        # (float32: sums that cancel)
    for k in range(0, 64, 9):
        want = pj.grad(loss)({n: pj.constant(v) for n, v in params.items()}, x[k], y[k])
        for name in params:
            want_k = np.asarray(want[name])
            np.testing.assert_allclose(got[name][k], want_k, rtol=tol, atol=tol * np.abs(want_k).max())


@pytest.mark.parametrize("keepdims", [False, True])
def test_a_max_over_a_short_last_axis_is_the_slices_fold_in_printed_source(keepdims):
    x = RNG.choice([-0.0, 0.0, 1.0, -1.0, np.inf, np.nan], size=(40, 3, 1)) + 0 * RNG.random((40, 3, 1))
    f = pj.function(lambda x: (pj.max(x, axis=1, keepdims=keepdims), pj.min(x, axis=1)))
    src = f.source(x)
    assert "np.maximum(np.maximum(" in src and "max_impl" not in src
    compile(src, "<printed>", "exec")                        # the printed text parses back
    for got, want in zip(f(x), (pj.max(pj.constant(x), axis=1, keepdims=keepdims),
                                pj.min(pj.constant(x), axis=1))):
        _same_bits(got, want.numpy())


def test_a_constant_of_equal_entries_is_read_as_one_number():
    from pforjac.compiled.passes import uniform_constants
    minus = pj.constant(np.full(3, -1.0, np.float32))
    uneven = pj.constant(np.array([1.0, 2.0, 3.0], np.float32))

    def f(x):
        return x * minus + uneven
    program = uniform_constants(make_program(f, [((64, 3), np.float32)]))
    assert sorted(c.ndim for c in program.consts) == [0, 1]
    x = RNG.standard_normal((64, 3)).astype(np.float32)
    for layout in (x, np.asfortranarray(x)):
        _same_bits(pj.function(f)(layout), f(pj.constant(layout)).numpy())


def test_a_sum_with_a_negated_operand_is_a_difference_of_the_same_bits():
    from pforjac.compiled.passes import negated_sums
    minus = pj.constant(np.float64(-1.0))

    def f(x, y):
        return minus * y + x, x + y * minus + 0.0
    program = negated_sums(make_program(f, [((6, 5), np.float64), ((5,), np.float64)]))
    names = [e.prim.name for e in program.equations]
    assert names.count("subtract") == 2 and "multiply" not in names
    x = RNG.choice([-0.0, 0.0, 1.5, -2.0, np.inf, -np.inf, np.nan], size=(6, 5))
    y = RNG.choice([-0.0, 0.0, 3.0, np.inf, np.nan], size=5)
    with np.errstate(all="ignore"):
        for got, want in zip(pj.function(f)(x, y), f(pj.constant(x), pj.constant(y))):
            _same_bits(got, want.numpy())
