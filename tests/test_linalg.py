"""matmul and einsum: numpy's values from BLAS products, contraction orders planned once, and
Jacobians whose bits do not change with the chunk size."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

from helpers import no_fallback, pfor_and_loop_jacobians


@no_fallback
def test_matmul_of_stacked_vector_and_vector():
    # converters/linalg.py kept a trailing size-1 axis when both operands are 1-D: (n, 1).
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    w = pj.constant(np.array([1.0, 10.0]))
    got = pj.pfor(lambda i: pj.matmul(x[i], w), 3, fallback_to_while_loop=False)
    assert got.shape == (3,)
    np.testing.assert_array_equal(got.numpy(), x.numpy() @ w.numpy())
    got = pj.pfor(lambda i: pj.matmul(x[i], x[i]), 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(got.numpy(), (x.numpy() ** 2).sum(1))


@pytest.mark.parametrize("subscripts", ["ij,jk->ik", "abqk,bqd->abkd", "abqd,bqk->abkd", "bqd,bkd->bqk",
                                        "ij,kj->ik", "ijk,kl->lji", "xij,jk->ikx", "ijk,jkl->il",
                                        "ij,ij->i", "i,j->ij", "ii,ij->j", "ij,jk->i"])
def test_two_operand_einsum_products_go_to_matmul_with_einsums_values(subscripts):
    """np.einsum of two operands never calls BLAS (attention's 'abqk,bqd->abkd' under pfor:
    16.7 ms against 0.8 as a broadcast matmul); products go to np.matmul, C-ordered."""
    from pforjac.ops.linalg import _einsum_impl
    rng = np.random.default_rng(11)
    (a, b), out = subscripts.split("->")[0].split(","), subscripts.split("->")[1]
    for trial in range(12):
        sizes = {c: int(rng.integers(0 if trial == 0 else 1, 5)) for c in set(a + b)}
        for dtype in (np.float64, np.complex128, np.int64, bool):
            x = (rng.normal(size=[sizes[c] for c in a]) * 3).astype(dtype)
            y = (rng.normal(size=[sizes[c] for c in b]) * 3).astype(dtype)
            if trial % 2 and x.ndim > 1:
                x = np.asfortranarray(x)
            want, got = np.einsum(subscripts, x, y), _einsum_impl(x, y, subscripts=subscripts)
            assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


_MULTI_EINSUMS = ["ij,jk,kl->il", "bi,ij,bj->b", "bij,bjk,bkl->bil", "bi,bj,bk->bijk", "abijk,bj,bk->abi",
                  "abijk,bi,bk->abj", "ij,jk,kl,lm->im", "a,ab,bc,cd,de,e->", "f,efa,d->fad", "ijk,k,j->i",
                  "ii,ij,j->", "ij,jk,kl,lm,mn,no->io", "i,j,k->"]


@pytest.mark.parametrize("subscripts", _MULTI_EINSUMS)
def test_einsums_of_three_or_more_operands_equal_numpys(subscripts):
    """Three or more operands go by `contraction_order`: one np.einsum call, BLAS and product
    steps through `_einsum_impl`, or numpy's greedy path planned once."""
    from pforjac.ops._einsum_plan import check_order, contraction_order
    from pforjac.ops.linalg import _einsum_impl
    rng = np.random.default_rng(12)
    ins, out = subscripts.split("->")[0].split(","), subscripts.split("->")[1]
    for trial in range(10):
        top = 4 if trial < 5 else 40 if len(set("".join(ins))) <= 4 else 12
        sizes = {c: int(rng.integers(0 if trial == 0 else 1, top)) for c in set("".join(ins))}
        for dtype in (np.float64, np.complex128, np.int64):
            xs = [(rng.normal(size=[sizes[c] for c in s]) * 3).astype(dtype) for s in ins]
            order = contraction_order(subscripts, tuple(x.shape for x in xs))
            check_order(order, len(xs), subscripts)
            want = np.einsum(subscripts, *xs, optimize=True)
            got = _einsum_impl(*xs, subscripts=subscripts)
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-9 * max(1.0, np.abs(want).max(initial=0)))


def test_contraction_order_takes_blas_steps_small_operands_first():
    from pforjac.ops._einsum_plan import contraction_order
    assert contraction_order("ij,jk,kl->il", ((200, 300), (300, 100), (100, 50))) == ((1, 2), (0, 1))
    assert contraction_order("ij,jk,kl->il", ((50, 100), (100, 300), (300, 200))) == ((0, 1), (0, 1))
    assert contraction_order("bi,bj,bk->bijk", ((128, 4),) * 3) == ((0, 1), (0, 1))   # products
    assert contraction_order("bi,bj,bk->bijk", ((8, 4),) * 3) == ()            # small: one call
    assert contraction_order("ij,jk,kl->il", ((2, 2),) * 3) == ()              # tiny: one call
    assert contraction_order("ii,ij,j->", ((40, 40), (40, 40), (40,))) == ()   # a diagonal: one call


def test_contraction_order_leaves_short_sums_to_numpys_executor():
    """A BLAS step summing 3 points over a large result (transposes and copies around a thin
    product) costs more than numpy's two-operand loop: the order goes to numpy's executor
    (this one took 0.30 ms through matmul, 0.08 in numpy's executor)."""
    from pforjac.ops._einsum_plan import contraction_order
    from pforjac.ops.linalg import _einsum_impl
    spec, shapes = "bea,facd,e->befcd", ((1, 8, 3), (16, 3, 64, 32), (8,))
    order = contraction_order(spec, shapes)
    assert order[0] == "einsum_path" and len(order) == 3
    xs = [np.random.default_rng(0).normal(size=s) for s in shapes]
    np.testing.assert_allclose(_einsum_impl(*xs, subscripts=spec), np.einsum(spec, *xs), rtol=1e-12, atol=1e-13)


def test_einsum_order_param_is_checked():
    from pforjac.ops.linalg import einsum_p
    xs = [pj.constant(np.ones((2, 2)))] * 3
    assert np.allclose(einsum_p.bind(*xs, subscripts="ij,jk,kl->il", order=((0, 1), (0, 1))).numpy(), 4)
    assert np.allclose(einsum_p.bind(*xs, subscripts="ij,jk,kl->il", order=((0, 1, 2),)).numpy(), 4)
    assert np.allclose(einsum_p.bind(*xs, subscripts="ij,jk,kl->il",
                                     order=("einsum_path", (0, 1), (0, 1))).numpy(), 4)
    for bad in (((0, 1),), ((1, 0), (0, 1)), ((0, 3), (0, 1)), [(0, 1), (0, 1)], ((0, 1), (0, 1), (0, 1)),
                ("einsum_path",), ("einsum_path", (0, 1)), ("path", (0, 1), (0, 1))):
        with pytest.raises(ValueError, match=r"einsum 'ij,jk,kl->il': order=.* is not a contraction order"):
            einsum_p.bind(*xs, subscripts="ij,jk,kl->il", order=bad)


@no_fallback
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_einsum_jacobians_keep_their_bits_at_every_chunk_size(dtype):
    rng = np.random.default_rng(5)
    x = pj.constant(rng.normal(size=(3, 4, 5)).astype(dtype))
    w = pj.constant(rng.normal(size=(3, 6, 5)).astype(dtype))
    v = pj.constant(rng.normal(size=(5,)).astype(dtype))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.einsum("bqd,bkd->bqk", x, w)
        z = pj.einsum("bqk,bkd->bqd", y, w) @ v
    for target in (y, z):
        whole = tape.jacobian(target, x).numpy()
        for chunk in (1, 2, 5):
            np.testing.assert_array_equal(tape.jacobian(target, x, parallel_iterations=chunk).numpy(), whole)
        np.testing.assert_allclose(tape.jacobian(target, x, experimental_use_pfor=False).numpy(), whole,
                                   rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@no_fallback
@pytest.mark.parametrize("spec, gradient, shapes", [
    ("ij,jk,kl->il", "zil,jk,kl->zij", [(6, 4), (4, 7), (7, 3)]),
    ("ij,jk,kl,lm->im", "zim,jk,kl,lm->zij", [(6, 4), (4, 7), (7, 3), (3, 2)])])
def test_multi_operand_einsum_jacobians_keep_their_bits_at_every_chunk_size(spec, gradient, shapes):
    """The contraction order depends on the shapes, the loop axis's size among them, and the
    rounding on the order: pfor's converter fixes one order for every chunk size."""
    from pforjac.ops._einsum_plan import contraction_order
    seed = (shapes[0][0], shapes[-1][1])                     # x's cotangent einsum under pfor: `gradient`
    assert contraction_order(gradient, ((1,) + seed,) + tuple(shapes[1:])) != \
        contraction_order(gradient, ((24,) + seed,) + tuple(shapes[1:]))          # the hazard is real
    rng = np.random.default_rng(8)
    x = pj.constant(rng.normal(size=shapes[0]))
    ws = [pj.constant(rng.normal(size=s)) for s in shapes[1:]]
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.einsum(spec, x, *ws)
    whole = tape.jacobian(y, x).numpy()
    for chunk in (1, 2, 5):
        np.testing.assert_array_equal(tape.jacobian(y, x, parallel_iterations=chunk).numpy(), whole)
    np.testing.assert_allclose(tape.jacobian(y, x, experimental_use_pfor=False).numpy(), whole, rtol=1e-12)


# -- numpy's einsum forms: '...', implicit outputs, sublists, size-1 broadcasting ----------
_FORMS = [("...ij,...jk->...ik", [(2, 3), (2, 3, 4)]), ("jk...,lj...->lk...", [(3, 2, 4), (2, 3)]),
          ("j...k,lj...->lk...", [(2, 2, 2), (2, 2)]), ("...,...->...", [(3, 4, 4), (4, 4)]),
          ("...i,...i", [(2, 3), (4, 1, 3)]), ("i...,i...", [(2, 3), (2, 4, 1)]),
          ("...ii->...i", [(2, 3, 3)]), ("ij,j->i", [(3, 1), (4,)]), ("ij,jk->i...", [(2, 3), (3, 4)]),
          ("...k,...nk->...", [(3, 5), (3, 10, 5)])]
_SUBLISTS = [((2, 3), [0, 1], (3, 4), [1, 2], [0, 2]), ((2, 3), [Ellipsis, 1], (3,), [1]),
             ((5, 2, 3), [Ellipsis, 0, 1], (3, 4), [1, 2], [Ellipsis, 0, 2]),
             ((2, 3), [30, 2])]


def _interleaved(rng, form):
    return [rng.uniform(-1, 1, a) if isinstance(a, tuple) else a for a in form]


@no_fallback
@pytest.mark.parametrize("spec, shapes", _FORMS)
def test_einsum_ellipsis_forms_have_numpys_values_and_gradients(spec, shapes):
    rng = np.random.default_rng(0)
    xs = [rng.uniform(-1, 1, s) for s in shapes]
    want = np.einsum(spec, *xs)
    for got in (pj.einsum(spec, *map(pj.constant, xs)), np.einsum(spec, *map(pj.constant, xs))):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-14)
    pj.testing.check_grads(lambda *ts: pj.einsum(spec, *ts), [pj.constant(x) for x in xs])
    others = [pj.constant(x) for x in xs[1:]]
    pfor, loop = pfor_and_loop_jacobians(lambda t: pj.einsum(spec, t, *others), xs[0])
    np.testing.assert_allclose(pfor, loop, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("form", _SUBLISTS)
def test_einsum_sublist_form_has_numpys_values_and_gradients(form):
    args = _interleaved(np.random.default_rng(1), form)
    want = np.einsum(*args)
    tensors = [pj.constant(a) if isinstance(a, np.ndarray) else a for a in args]
    for got in (pj.einsum(*tensors), np.einsum(*tensors), np.einsum(*tensors, dtype=np.float64)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-14)
    at = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def f(*ts):
        full = list(tensors)
        for i, t in zip(at, ts):
            full[i] = t
        return pj.einsum(*full)
    pj.testing.check_grads(f, [tensors[i] for i in at])


@pytest.mark.parametrize("args, message", [
    (("ij,jk", (2, 3), (4, 4)), r"axis 'j' has size 3 in operand 0 \(shape \(2, 3\)\) and 4 in "
                                r"operand 1 \(shape \(4, 4\)\)"),
    (("...i,...i", (2, 3), (4, 3)), r"a '\.\.\.' axis has size 2 in operand 0 \(shape \(2, 3\)\)"),
    (("i", (2, 3)), r"operand 0 has shape \(2, 3\) \(2 axes\) but its subscripts 'i' name 1"),
    (("i.j", (2, 3)), r"operand 0 \('i\.j'\) has a '\.' that is not part of one ellipsis"),
    (("...i,...i->i", (2, 3), (2, 3)), r"the output has no '\.\.\.'"),
    (("ij,jk", (2, 3)), r"names 2 operands, got 1 \(shapes \(2, 3\)\)"),
    (((2, 3), [0, 60]), r"the sublist of operand 0 holds 60"),
])
def test_einsum_bad_subscripts_name_the_operand_and_shapes(args, message):
    args = [pj.constant(np.ones(a)) if isinstance(a, tuple) else a for a in args]
    with pytest.raises(ValueError, match=message):
        pj.einsum(*args)
