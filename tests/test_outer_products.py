"""Outer products in generated code (`pforjac/compiled/outer_products.py`): np.einsum where
pforjac.function may round products otherwise, numpy's multiply where results keep eager
code's bits."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.outer_products import OUTER_MIN, outer_subscripts
from pforjac.ops.linalg import matmul_p  # noqa: F401  (primitives registered)
from pforjac.program import make_program

RNG = np.random.default_rng(3)


def _multiply_of(shapes, dtypes=(np.float64, np.float64)):
    program = make_program(lambda x, y: x * y, list(zip(shapes, dtypes)))
    (eqn,) = program.equations
    return eqn


@pytest.mark.parametrize("shapes, spec", [
    (((64, 32, 1), (64, 1, 8)), "abc,abc->abc"),
    (((32, 1), (64, 1, 40)), "bc,abc->abc"),
    (((64, 1, 40), (1, 32, 1)), "abc,abc->abc"),
    (((64, 40, 1, 1), (64, 1, 3, 2)), "abcd,abcd->abcd"),
])
def test_an_outer_product_is_named_by_its_subscripts(shapes, spec):
    assert outer_subscripts(_multiply_of(shapes)) == spec


@pytest.mark.parametrize("shapes, dtypes", [
    (((64, 32, 8), (64, 1, 8)), (np.float64, np.float64)),    # one operand spans the result
    (((64, 32, 8), (64, 32, 8)), (np.float64, np.float64)),    # no broadcast at all
    (((4, 8, 1), (4, 1, 8)), (np.float64, np.float64)),        # too small to pay
    (((64, 32, 1), (64, 1, 8)), (np.float32, np.float64)),     # promotes: multiply's loop
    (((64, 32, 1), (64, 1, 8)), (np.int64, np.int64)),
    (((64, 32, 1), (64, 1, 8)), (np.complex128, np.complex128)),
])
def test_other_multiplies_are_not_outer_products(shapes, dtypes):
    assert outer_subscripts(_multiply_of(shapes, dtypes)) is None


def _per_example_outer(a, b):
    n, i = a.shape
    return pj.reshape(a, (n, i, 1)) * pj.reshape(b, (n, 1, b.shape[1]))


def _awkward(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    x.flat[::7] = 0.0
    x.flat[3::11] = -0.0
    x.flat[5] = np.inf
    x.flat[9] = np.nan
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_outer_products_equal_numpys_but_for_a_zeros_sign(dtype):
    a, b = _awkward((64, 32), dtype), _awkward((64, 9), dtype)
    with np.errstate(invalid="ignore"):
        want = a[:, :, None] * b[:, None, :]
    assert want.size >= OUTER_MIN and np.signbit(want[want == 0]).any()
    fast, exact = pj.function(_per_example_outer), pj.function(_per_example_outer, batch_major=False)
    assert "outer_product(" in fast.source(a, b) and "outer_product(" not in exact.source(a, b)
    with np.errstate(invalid="ignore"):
        got, bits = fast(a, b), exact(a, b)
    np.testing.assert_array_equal(got, want)                  # (-0 equals +0 here)
    assert got.dtype == want.dtype and got.flags.c_contiguous
    assert bits.tobytes() == want.tobytes()                   # every bit, zeros' signs too
    differs = np.signbit(got) != np.signbit(want)
    assert (want[differs] == 0).all()                         # where only a zero's sign differs


def test_a_transposed_operand_still_gives_a_c_ordered_result():
    def f(a, b):
        n = a.shape[1]
        return pj.reshape(pj.transpose(a), (n, -1, 1)) * pj.reshape(b, (n, 1, -1))
    a, b = RNG.standard_normal((40, 64)), RNG.standard_normal((64, 30))
    compiled = pj.function(f)
    assert "outer_product(" in compiled.source(a, b)
    got = compiled(a, b)
    np.testing.assert_array_equal(got, a.T[:, :, None] * b[:, None, :])
    assert got.flags.c_contiguous
