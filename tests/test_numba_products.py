"""The numba backend's code around its BLAS products: a transposed matrix one product reads
goes to np.dot as it is (F-contiguous, read transposed by BLAS: no copy; one several
products read is copied once), a product read once element for element is overwritten in
place by the loop that reads it (numba_reuse.py), a reshape that merges the rows of a
per-example block is copied by loops over the block's own axes (no quotients), an array
of 4 MiB or more is made by the kernel asking for huge pages, and every result agrees with
the numpy backend to a few ulps, in float64 and float32 (no timing: what the source holds,
and the values)."""
import re
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_codegen import numba_source

pytest.importorskip("numba")


def _layer(x, w, b, y):
    """A layer with its weights transposed (`x @ w.T`), its product read once in place,
    and a second product returned as it is and also read by an elementwise op."""
    z = pj.tanh(pj.matmul(x, pj.transpose(w)) + b)
    p = pj.matmul(z, w)
    return z * y, p, p * 2.0


def _agree(f, args, dtype):
    want = pj.function(f, backend="numpy")(*args)
    got = pj.function(f, backend="numba")(*args)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=16 * np.finfo(dtype).eps,
                                   atol=16 * np.finfo(dtype).eps * np.abs(w).max())


def test_a_transposed_matrix_is_passed_to_blas_as_it_is():
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((6, 5), (4, 5), (4,), (6, 4))]
    _agree(_layer, args, np.float32)
    source = numba_source(pj.function(_layer, backend="numba").program(*args))
    assert re.search(r"K\.dot\(v_\w+, v_\w+\.T\)", source)
    assert "K.empty((5, 4)" not in source          # (no copy of the transposed weights)


def _shared(x, y, w):
    wt = pj.transpose(w)
    return pj.matmul(x, wt), pj.matmul(y, wt)


def test_a_transposed_matrix_several_products_read_is_copied_once():
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s).astype(np.float32) for s in ((3, 5), (2, 5), (4, 5))]
    _agree(_shared, args, np.float32)
    source = numba_source(pj.function(_shared, backend="numba").program(*args))
    assert ".T" not in source and source.count("K.dot(") == 2
    assert source.count("K.empty((5, 4)") == 1     # (one copy, both products read it)


def test_a_product_read_once_is_overwritten_in_place_and_a_returned_one_is_not():
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s) for s in ((6, 5), (4, 5), (4,), (6, 4))]
    _agree(_layer, args, np.float64)
    program = pj.function(_layer, backend="numba").program(*args)
    lines = numba_source(program).splitlines()
    first = next(k for k, line in enumerate(lines) if "K.dot(" in line)
    product = lines[first].split("=")[0].strip()
    assert any(re.fullmatch(rf"\s*\w+ = {product}", line) for line in lines)   # (tanh's loop writes it)
    second = next(k for k, line in enumerate(lines) if "K.dot(" in line and k > first)
    returned = lines[second].split("=")[0].strip()
    assert not any(re.fullmatch(rf"\s*\w+ = {returned}", line) for line in lines)


def _per_example(x, w1, w2, w3):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.matmul(pj.tanh(pj.matmul(pj.tanh(pj.matmul(x, w1)), w2)), w3)
    return tape.batch_jacobian(y, x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_per_example_jacobian_is_loops_over_each_block_and_blas(dtype):
    rng = np.random.default_rng(2)
    args = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(dtype)
            for s in ((7, 6), (6, 5), (5, 4), (4, 3))]
    _agree(_per_example, args, dtype)
    source = numba_source(pj.function(_per_example, backend="numba").program(*args))
    assert " // " not in source and " % " not in source
    assert source.count("K.dot(") == 4 and "np.ascontiguousarray" not in source


def _broadcast_reader(x, w, v):
    p = pj.matmul(x, w)                  # (3, 1), read broadcast along 4 columns
    return p * v


def test_a_product_a_broadcast_reads_repeatedly_keeps_its_array():
    rng = np.random.default_rng(3)
    args = [rng.standard_normal(s) for s in ((3, 2), (2, 1), (3, 4))]
    _agree(_broadcast_reader, args, np.float64)


def _diagonal(x):
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = pj.sin(x) * x
    return tape.batch_jacobian(y, x)


def test_a_large_result_is_made_by_the_huge_page_kernel_and_holds_its_zeros():
    x = np.linspace(-2.0, 2.0, 8 * 400, dtype=np.float32).reshape(8, 400)     # J: 5 MiB
    f = pj.function(_diagonal, backend="numba")
    got, want = f(x), pj.function(_diagonal, backend="numpy")(x)
    assert "K.large(K.zeros((8, 160000" in numba_source(f.program(x))
    np.testing.assert_allclose(got, want, rtol=0, atol=16 * np.finfo(np.float32).eps * np.abs(want).max())
    assert np.count_nonzero(got) == np.count_nonzero(want)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("subscripts, shapes", [
    ("ij,kl->ijkl", ((2, 3), (3, 2))), ("ij,ij->ij", ((3, 4), (3, 4))),
    ("ij,j->ij", ((3, 4), (4,))), ("ij,kl->ijkl", ((40, 50), (30, 60)))])
def test_an_einsum_without_a_sum_gives_a_zero_numpys_sign(subscripts, shapes, dtype):
    """np.einsum sums products from zero, even a single one: a -0.0 product is 0.0, as
    the numpy backend's (and the eager op's) einsum gives it, where a product alone keeps
    -0.0 (small operands: one loop nest; large: an array expression)."""
    rng = np.random.default_rng(5)
    xs = [rng.choice(np.array([-0.0, 0.0, -1.5, 2.0]), size=shape).astype(dtype)
          for shape in shapes]
    f = lambda *o: pj.numpy.einsum(subscripts, *o)
    want = np.asarray(pj.function(f, backend="numpy")(*xs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (the einsum runs on numba, not on numpy)
        got = np.asarray(pj.function(f, backend="numba")(*xs))
    assert np.array_equal(want, np.einsum(subscripts, *xs))
    assert np.array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()
    zeros = want[want == 0]          # (the inputs make -0.0 products)
    assert zeros.size and not np.signbit(zeros).any()
