"""Counterexamples found by the converter table and the random-program properties, kept
as explicit tests. Each names the bug it caught; pfor must vectorize without falling back."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj
from random_programs import C

from pforjac.compiled.loopcache import same_bits

pytestmark = pytest.mark.filterwarnings("error:pfor:RuntimeWarning")


def _jacobians(f, x_np):
    """(pfor, while-loop) jacobians of f at x."""
    x = pj.constant(x_np)
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = f(x)
    return (g.jacobian(y, x, unconnected_gradients="zero").numpy(),
            g.jacobian(y, x, unconnected_gradients="zero", experimental_use_pfor=False).numpy())


def test_gather_with_stacked_table_and_stacked_indices():
    # converters/indexing.py called ops.constant, which does not exist (AttributeError).
    table = pj.constant(np.arange(12.0).reshape(3, 4))
    idx = pj.constant(np.array([[3, -1], [0, 1], [2, 2]], np.int32))
    got = pj.pfor(lambda i: pj.gather(table[i], idx[i]), 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(got.numpy(), [[3, 3], [4, 5], [10, 10]])


def test_gather_small_int_indices_do_not_overflow_offsets():
    # the offsets k * size into the flattened table overflow int8 indices unless widened.
    table = pj.constant(np.arange(600.0).reshape(3, 200))
    idx = pj.constant(np.array([[100], [5], [-1]], np.int8))
    got = pj.pfor(lambda i: pj.gather(table[i], idx[i]), 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(got.numpy(), [[100], [205], [599]])


def test_matmul_of_stacked_vector_and_vector():
    # converters/linalg.py kept a trailing size-1 axis when both operands are 1-D: (n, 1).
    x = pj.constant(np.arange(6.0).reshape(3, 2))
    w = pj.constant(np.array([1.0, 10.0]))
    got = pj.pfor(lambda i: pj.matmul(x[i], w), 3, fallback_to_while_loop=False)
    assert got.shape == (3,)
    np.testing.assert_array_equal(got.numpy(), x.numpy() @ w.numpy())
    got = pj.pfor(lambda i: pj.matmul(x[i], x[i]), 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(got.numpy(), (x.numpy() ** 2).sum(1))


def test_jacobian_of_dot_product_of_vectors():
    pfor_jac, loop_jac = _jacobians(lambda x: pj.matmul(pj.tanh(x), x) * x, np.array([0.5, -1.0, 2.0]))
    np.testing.assert_allclose(pfor_jac, loop_jac, rtol=1e-12)


def test_second_order_through_a_new_axis_inside_a_tied_block():
    # structure.py: getitem with None between the tied axes kept them "contiguous", so the
    # Hessian of sin(x[None]) put -sin(x_1) at [0, 0, 1, 1] instead of [0, 1, 1, 1].
    x_np = np.array([0.3, 0.7])

    def hessian(use_pfor):
        x = pj.constant(x_np)
        with pj.GradientTape(persistent=True) as outer:
            outer.watch(x)
            with pj.GradientTape(persistent=True) as inner:
                inner.watch(x)
                y = pj.sin(x[None])
            first = inner.jacobian(y, x, experimental_use_pfor=use_pfor)
        return outer.jacobian(first, x, experimental_use_pfor=use_pfor).numpy()

    want = np.zeros((1, 2, 2, 2))
    want[0, 0, 0, 0], want[0, 1, 1, 1] = -np.sin(x_np)
    np.testing.assert_allclose(hessian(True), want, rtol=1e-15)
    np.testing.assert_allclose(hessian(False), want, rtol=1e-15)


def test_several_scalar_index_tensors_index_like_ints():
    """`x[i, j]` in a loop body (reported while writing nested pfor tests)."""
    x_np = np.arange(60.0).reshape(3, 4, 5)
    x = pj.constant(x_np)
    i, j = pj.constant(np.int32(2)), pj.constant(np.int32(1))
    for key, np_key in [((i, j), (2, 1)), ((i, slice(None), j), (2, slice(None), 1)),
                        ((None, i, Ellipsis, j), (None, 2, Ellipsis, 1))]:
        np.testing.assert_array_equal(x[key].numpy(), x_np[np_key])
    out = pj.pfor(lambda k: x[k, 3 - k], 3, fallback_to_while_loop=False)
    np.testing.assert_array_equal(out.numpy(), np.stack([x_np[k, 3 - k] for k in range(3)]))
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.sum(x[i, j] * 2.0)
    want = np.zeros_like(x_np)
    want[2, 1] = 2.0
    np.testing.assert_array_equal(g.gradient(y, x).numpy(), want)
    with pytest.raises(IndexError, match="only when all are scalars"):
        x[pj.constant(np.array([0, 1])), pj.constant(np.array([0, 1]))]


@pytest.mark.parametrize("f, shape, seed", [
    # structure kept a value transposed; summing its strided axis rounded differently
    (lambda v0: pj.sum(pj.einsum("i,j->ij", -pj.softmax(pj.concat([pj.reshape(v0, (-1,))] * 2, axis=0),
                                                         axis=0), C((2,), 0)), axis=0),
     (4, 1), 0),
    # a one-row weight against n stacked columns: gemv rounds by the column count
    (lambda v0: pj.sum(pj.matmul(pj.reshape(v0, (4, 1)), pj.sum(v0, axis=0)), axis=None) + v0,
     (4, 1, 1), 1)])
def test_parallel_iterations_of_one_is_bit_identical(f, shape, seed):
    # found by the long hypothesis profile: the sums of a chunk of one iteration differed
    # from the whole batch's in the last bit (numpy's summation order follows the layout)
    x = pj.constant(np.random.default_rng(seed).standard_normal(shape))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = f(x)
    whole = g.jacobian(y, x).numpy()
    np.testing.assert_array_equal(g.jacobian(y, x, parallel_iterations=1).numpy(), whole)
    np.testing.assert_array_equal(g.jacobian(y, x, experimental_use_pfor=False).numpy(), whole)


_NEGATIVE_AXES = {
    "sum": lambda x: pj.sum(x, axis=-2), "max": lambda x: pj.max(x, axis=-3),
    "prod": lambda x: pj.prod(x, axis=-2), "logsumexp": lambda x: pj.logsumexp(x, axis=-2),
    "softmax": lambda x: pj.softmax(x, axis=-2), "concat": lambda x: pj.concat([x, x * x], axis=-2),
    "stack": lambda x: pj.stack([x, x * 2], axis=-2), "split": lambda x: pj.split(x, 3, axis=-2)[1],
    "gather": lambda x: pj.gather(x, np.array([2, 0]), axis=-2),
    "scatter_add": lambda x: pj.scatter_add(x, np.array([1, 0, 1]), axis=-2, size=2),
    "scatter_add_first": lambda x: pj.scatter_add(x, np.array([2, 0, 1]), axis=-3, size=3),
    "moveaxis": lambda x: pj.moveaxis(x, -1, -3), "expand_dims": lambda x: pj.expand_dims(x, -2)}


@pytest.mark.parametrize("name", sorted(_NEGATIVE_AXES))
def test_negative_axes_vectorize_as_their_positive_twins(name):
    # scatter_add kept a negative axis, which pfor's converter shifted as if positive: a
    # wrong jacobian where the batch and feature sizes agree (found by a hunt, session 7)
    f = _NEGATIVE_AXES[name]
    x_np = np.random.default_rng(3).uniform(0.3, 0.9, (3, 3, 2))
    by_pfor, by_loop = _jacobians(f, x_np)
    np.testing.assert_allclose(by_pfor, by_loop, rtol=1e-12, atol=1e-14)
    h, fd = 1e-6, np.zeros(by_pfor.shape)
    for idx in np.ndindex(x_np.shape):
        e = np.zeros_like(x_np)
        e[idx] = h
        fd[(Ellipsis,) + idx] = (f(pj.constant(x_np + e)).numpy() - f(pj.constant(x_np - e)).numpy()) / (2 * h)
    np.testing.assert_allclose(by_pfor, fd, rtol=1e-6, atol=1e-8)


def test_vectorized_map_over_no_elements_with_small_int_indices():
    """An indexing hunt (2026-11-30): int8 indices into a table longer than 127 were not
    widened with zero iterations, and wrapping negative ones overflowed."""
    empty = pj.vectorized_map(lambda a: pj.gather(a[0], a[1]),
                              (pj.constant(np.zeros((0, 200))), pj.constant(np.zeros((0, 3), np.int8))))
    assert empty.shape == (0, 3)
    table = np.arange(400.0).reshape(2, 200)
    idx = np.array([[-1, 5, 100], [0, -128, 127]], np.int8)
    got = pj.vectorized_map(lambda a: pj.gather(a[0], a[1]), (pj.constant(table), pj.constant(idx)))
    np.testing.assert_array_equal(got.numpy(), [np.take(t, i) for t, i in zip(table, idx)])


def test_an_empty_list_is_an_empty_integer_index():
    """As numpy's x[[]]; it became a float32 tensor and numpy's casting error (a hunt)."""
    a = np.arange(6.0).reshape(2, 3)
    x = pj.constant(a)
    assert x[[]].shape == a[[]].shape == (0, 3)
    assert pj.gather(x, [], axis=1).shape == np.take(a, [], axis=1).shape == (2, 0)
    J_pfor, J_loop = _jacobians(lambda t: pj.gather(t, [], axis=1), a)
    assert J_pfor.shape == J_loop.shape == (2, 0, 2, 3)


def test_scatter_add_of_repeated_positions_equals_np_add_at_bit_for_bit():
    """Repeated positions are added in passes numpy vectorizes (np.add.at with a slice
    before the index looped element by element: the Jacobian of an embedding lookup, 7.4 ->
    1.6 ms); each position still adds its slices in their order, as np.add.at does."""
    from pforjac.ops.indexing import _scatter_add_impl
    rng = np.random.default_rng(7)
    for _ in range(400):
        idx_shape = tuple(rng.integers(0, 5, rng.integers(1, 3)))
        size, axis = int(rng.integers(1, 6)), int(rng.integers(0, 3))
        pre, suf = tuple(rng.integers(0, 4, axis)), tuple(rng.integers(0, 4, rng.integers(0, 3)))
        dtype = rng.choice([np.float32, np.float64, np.int32, np.complex64, np.float16])
        g = rng.normal(size=pre + idx_shape + suf).astype(dtype)
        if g.size and rng.random() < 0.3:
            g.flat[0] = -0.0 if dtype != np.int32 else 0
        if g.size and rng.random() < 0.2 and dtype in (np.float32, np.float64):
            g.flat[-1] = np.nan
        if g.ndim and g.shape[0] and rng.random() < 0.3:
            g = np.broadcast_to(g[:1], g.shape)            # as a Jacobian's broadcast cotangent
        idx = rng.integers(-size, size, idx_shape)
        want = np.zeros(pre + (size,) + suf, g.dtype)
        np.add.at(want, (slice(None),) * axis + (idx,), g)
        got = _scatter_add_impl(g, idx, axis, size, unique=False)
        assert got.shape == want.shape and np.ascontiguousarray(got).tobytes() == want.tobytes()
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        _scatter_add_impl(np.ones(3), np.array([0, 5, 0]), 0, 3, unique=False)
    hot = np.zeros(200, np.int64)                          # one position 200 times: np.add.at
    np.testing.assert_array_equal(_scatter_add_impl(np.ones(200), hot, 0, 2), [200.0, 0.0])


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


def test_sums_over_one_short_axis_equal_np_sum_bit_for_bit():
    """A sum over one short axis is added slice by slice where numpy's reduction loop is
    slow (the Lennard-Jones Hessian's sums over xyz: 5.4 -> 2.7 ms); its bits, zeros' signs
    included, must stay numpy's."""
    from pforjac.ops._kernels import sum_short_axis
    rng = np.random.default_rng(3)
    shapes = [((96, 8, 3), 2), ((300, 5), 1), ((4, 256, 3), 1), ((64, 32, 16), 1), ((2, 5000, 2), 1),
              ((700, 2), 1), ((40, 20, 7), 2), ((9, 2048, 4), 1), ((1000, 50, 2), 1), ((20, 500, 10), 1),
              ((3, 7, 17), 1), ((5, 3, 2, 2), 1), ((6, 4, 5, 3), 2)]
    for shape, axis in shapes:
        for dtype in (np.float32, np.float64):
            x = (rng.normal(size=shape) * np.exp(rng.normal(size=shape) * 4)).astype(dtype)
            x.flat[::7] = -0.0
            x.flat[5] = np.inf
            for keepdims in (False, True):
                want, got = np.sum(x, axis=axis, keepdims=keepdims), sum_short_axis(x, (axis,), keepdims)
                assert got.shape == want.shape and got.dtype == want.dtype
                assert got.tobytes() == want.tobytes(), (shape, axis, dtype)
        zeros = np.full(shape, -0.0)
        assert sum_short_axis(zeros, (axis,)).tobytes() == np.sum(zeros, axis=axis).tobytes()   # +0, as numpy


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_seed_of_a_matrix_target_times_a_matrix_is_scattered_rows(dtype):
    """A jacobian's seed over a matrix target (each row one entry of it) times W^T fills one
    row of each iteration: a scatter of those rows into zeros, not a `where` over the whole
    result (attention's full Jacobian); the closed form is kron(I, W^T)."""
    rng = np.random.default_rng(2)
    x = pj.constant(rng.normal(size=(4, 5)).astype(dtype))
    w = pj.constant(rng.normal(size=(5, 3)).astype(dtype))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x @ w
    jac = tape.jacobian(y, x).numpy()
    want = np.einsum("ac,bd->abcd", np.eye(4), w.numpy().T).astype(dtype)   # dy[a,b]/dx[c,d]
    np.testing.assert_array_equal(jac, want)
    np.testing.assert_array_equal(tape.jacobian(y, x, experimental_use_pfor=False).numpy(), want)
    assert not np.signbit(jac[jac == 0]).any()                              # +0, as the gemm


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 7])
def test_max_and_min_over_a_short_last_axis_match_numpy_bit_for_bit(dtype, n):
    """max/min over a last axis of 2-7 elements go through the slices' elementwise maximum
    (13x faster on a max-pool's (64, 32, 4)); every row of +-0, +-1, +-inf and NaN (a sample
    of them for 7 elements) must give numpy's own reduction, NaN and zeros' signs included,
    in C-ordered and transposed inputs, with and without keepdims."""
    import itertools
    values = [0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf]
    rows = np.array(list(itertools.product(values, repeat=n)), dtype=dtype)
    if n == 7:
        rows = rows[np.random.default_rng(0).choice(len(rows), 20000, replace=False)]
    rows = np.tile(rows, (max(1, 512 // len(rows)) + 1, 1))
    rows = rows[:len(rows) // 2 * 2]
    for x in (rows, np.asfortranarray(rows), rows.reshape(-1, 2, n)[:, ::-1, :]):
        for op, reduce in ((pj.max, np.max), (pj.min, np.min)):
            for keepdims in (False, True):
                got = op(pj.constant(x), axis=-1, keepdims=keepdims).numpy()
                want = reduce(x, axis=-1, keepdims=keepdims)
                assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
                assert same_bits(got, want), (op.__name__, x.strides, keepdims)


@pytest.mark.parametrize("shape, axis", [((96, 8, 32, 3), 2), ((20, 50, 10), 1), ((100, 50, 2), 1),
                                         ((4, 5, 2, 16), 1), ((3, 0, 4), 1)])
def test_sum_over_a_middle_axis_moves_its_rows_as_items_with_the_same_bits(shape, axis):
    """sum over an axis with 2-16 elements after it sums a copy with that axis first; the copy
    moves those elements as one void item each (4x faster), the same bits as numpy's
    moveaxis copy summed, NaN and zeros' signs included."""
    from pforjac.ops._kernels import axis_first
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(shape).astype(dtype)
        x.flat[::7] = -0.0
        x.flat[::11] = np.nan
        inner = int(np.prod(shape[axis + 1:]))
        want = np.ascontiguousarray(np.moveaxis(x, axis, 0))
        if x.size:
            moved = axis_first(x, axis, inner)
            assert moved.flags.c_contiguous and same_bits(moved, want)
        for keepdims in (False, True):
            got = pj.sum(pj.constant(x), axis=axis, keepdims=keepdims).numpy()
            expected = want.sum(axis=0)
            assert same_bits(got, np.expand_dims(expected, axis) if keepdims else expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128, np.bool_])
def test_setitem_zeros_moves_short_rows_as_items_with_the_same_bytes(dtype):
    """setitem_zeros (getitem's gradient) copies rows of 2-16 elements as one void item each
    where they are contiguous in `g` and in their place; every key below must give what
    `out[key] = g` gives, NaN, -0 and all."""
    from pforjac.ops.indexing import _setitem_zeros_impl
    rng = np.random.default_rng(4)
    block = (rng.standard_normal((10, 32, 60, 5, 4)) * 3).astype(dtype)
    if dtype in (np.float32, np.float64):
        block.flat[::13] = -0.0
        block.flat[::17] = np.nan
    cases = [(block[:, :, :, 2, :], (slice(None), slice(None), slice(3, 63), slice(None)), (10, 32, 64, 4)),
             (block[:, :, :, 1, :2], (slice(None), slice(None), slice(0, 60), slice(1, 3)), (10, 32, 60, 4)),
             (block[:, 0, :, :, :], (slice(None), 5, slice(None), slice(None), slice(None)), (10, 8, 60, 5, 4)),
             (block[:, :, ::2, 0, :], (slice(None), slice(None), slice(0, 120, 4), slice(None)), (10, 32, 120, 4)),
             (block[..., ::2], (Ellipsis, slice(None, None, 2)), (10, 32, 60, 5, 4)),
             (block[:2, :2, :2, 0, :], (slice(None), slice(None), slice(None), slice(None)), (2, 2, 2, 4))]
    for g, key, shape in cases:
        want = np.zeros(shape, dtype)
        want[key] = g
        got = _setitem_zeros_impl(g, key, shape)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128, np.bool_])
def test_concat_moves_short_rows_as_items_with_numpys_bytes_and_layout(dtype):
    """concat along an axis before the last moves rows of 2-16 elements as one void item each
    where every operand's rows are contiguous and its strides C-like; the result must be
    np.concatenate's, bytes and C/F layout alike, for slices, mixed dtypes and F-ordered
    operands (those two take numpy's own path)."""
    from pforjac.ops.shape import _concat_impl
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((32, 64, 4)) * 3).astype(dtype)
    if dtype in (np.float32, np.float64):
        x.flat[::13] = -0.0
        x.flat[::17] = np.nan
    y = (rng.standard_normal((32, 64, 4)) * 3).astype(dtype)
    cases = [([x[:, k:k + 60, None, :] for k in range(5)], 2), ([x, y, x[:, :10]], 1), ([x, y], 0),
             ([x, y], -2), ([x, x.astype({np.float64: np.float32, np.complex128: np.complex64}.get(dtype, np.float64))], 1), ([np.asfortranarray(x), y], 1),
             ([x[:, :, :3], y[:, :, 1:]], 0), ([x[:2, :2], y[:2, :2]], 1)]
    for parts, axis in cases:
        want = np.concatenate(parts, axis=axis)
        got = _concat_impl(*parts, axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()
        assert got.flags.c_contiguous == want.flags.c_contiguous and got.strides == want.strides
