"""Compiled code hands every product operands laid out as eager code's are, so its results
equal eager results bit for bit: numpy's products round by layout (it picks the BLAS
kernel, or numpy's own loop for a broadcast view, or syrk for `a @ a.T` on one buffer)."""
import random
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pforjac as pj
from pforjac.compiled.loopcache import caching, same_bits
from random_programs import random_programs

RNG = np.random.default_rng(11)


def _compiled_equals_eager(f, *args):
    with caching(False), np.errstate(all="ignore"):
        want = f(*[pj.constant(a) for a in args])
        got = pj.function(f)(*args)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got):
        assert (w is None and g is None) or same_bits(np.asarray(g), np.asarray(w))


X = RNG.standard_normal((40, 43))


def test_an_elementwise_result_read_by_a_product_keeps_eagers_layout():
    def f(x):                       # C order for the reshape would hand the product C order
        y = pj.transpose(x) * 2.0
        return pj.reshape(y, (-1,)), y @ x
    _compiled_equals_eager(f, X)


def test_no_result_is_written_into_a_buffer_laid_out_otherwise():
    c = pj.constant(np.ones((43, 40)) * 0.5 + np.arange(40))

    def f(x):                       # exp(x.T) is F-ordered; eager's product u * c is C-ordered
        u = pj.exp(pj.transpose(x))
        return (u * c) @ x
    _compiled_equals_eager(f, X)


def test_a_contiguous_copy_of_a_transpose_is_not_seen_by_a_product():
    def f(x, s):
        t = pj.transpose(pj.exp(s))                       # (96, 33)
        big = pj.reshape(x, (64, 96, 1)) * t
        return x @ t + 0.0 * pj.sum(big, axis=2)[:, :33]
    _compiled_equals_eager(f, RNG.standard_normal((64, 96)).astype(np.float32),
                           RNG.standard_normal((33, 96)).astype(np.float32))


def test_a_reshape_round_trip_that_copies_is_not_cancelled_before_a_product():
    def f(x, s):
        t = pj.transpose(pj.exp(s))
        return x @ pj.reshape(pj.reshape(t, (96 * 33,)), (96, 33))
    _compiled_equals_eager(f, RNG.standard_normal((64, 96)), RNG.standard_normal((33, 96)))


def test_common_subexpressions_a_product_reads_twice_stay_two_buffers():
    w = pj.constant(RNG.standard_normal((35, 35)))

    def f(y):                       # merged, a @ b.T would be a @ a.T: syrk, not gemm
        c = pj.transpose(y)
        a, b = pj.tanh(c @ w), pj.tanh(c @ w)
        return a @ pj.transpose(b)
    _compiled_equals_eager(f, RNG.standard_normal((35, 33)))


def test_a_product_with_ones_read_by_a_ufunc_with_another_layout_stays():
    def f(x):                       # x[:1] * ones as a broadcast: x (F) would decide the sum's layout
        r = x[:1] * pj.ones(x.shape, np.float64) + x
        return r @ pj.transpose(x)
    _compiled_equals_eager(f, np.asfortranarray(X))


def _random_program(seed: int, dtype):
    """A program mixing transposes, products, reductions, ones, outer products with ones and
    reshape round trips."""
    draw = random.Random(seed)
    w = pj.constant(np.random.default_rng(seed).standard_normal((43, 43)).astype(dtype) * 0.2)
    steps = [draw.choice(["unary", "binary", "transpose", "product", "mean", "einsum", "chain",
                          "ones", "row", "outer"]) for _ in range(draw.randint(3, 9))]
    picks = [(draw.random(), draw.random()) for _ in steps]

    def f(x, y):
        pool = [x, pj.transpose(y)]
        for step, (p, q) in zip(steps, picks):
            a = pool[int(p * len(pool))]
            if step == "unary":
                r = [pj.exp, pj.tanh, pj.sin, pj.sigmoid][int(q * 4)](a)
            elif step == "binary":
                r = a * pool[int(q * len(pool))] + a
            elif step == "transpose":
                r = pj.transpose(pj.tanh(pj.transpose(a)) * 1.0001)
            elif step == "product":
                r = pj.tanh(a @ w)
            elif step == "mean":
                r = a * pj.mean(a, axis=int(q * 2), keepdims=True)
            elif step == "einsum":
                r = pj.einsum("ij,jk->ik", a, w) * 0.5
            elif step == "chain":
                r = pj.reshape(pj.transpose(pj.reshape(a, (a.shape[0], 1, a.shape[1])),
                                            (1, 0, 2)), a.shape) + 0.0
            elif step == "outer":      # ones(m, 1) @ row, read with a leading unit axis
                o = pj.reshape(pj.ones((a.shape[0], 1), dtype) @ a[:1], (1,) + tuple(a.shape))
                r = pj.reshape(o * pj.tanh(a @ w), a.shape)
            elif step == "ones":
                r = a[:1] * pj.ones(a.shape, dtype) + a
            else:
                r = a * pj.transpose(pj.sin(pj.transpose(a[:1])))
            pool.append(r)
        return pj.sum(pool[-1] @ pj.transpose(pool[-2]), axis=1) + pj.sum(pool[-1] @ w)
    return f


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10 ** 6), st.sampled_from([np.float32, np.float64]),
       st.sampled_from(["C", "F"]), st.sampled_from([(48, 43), (33, 43), (16, 43)]))
def test_random_layout_programs_compiled_equal_eager(seed, dtype, layout, shape):
    f = _random_program(seed, dtype)
    rng = np.random.default_rng(seed)
    x, y = (rng.standard_normal(s).astype(dtype) * 0.3 for s in (shape, shape[::-1]))
    if layout == "F":
        x, y = np.asfortranarray(x), np.asfortranarray(y)

    def gradient(x, y):
        with pj.GradientTape() as g:
            g.watch(x)
            out = f(x, y)
            total = pj.sum(out)      # (inside the block: after it, the tape never sees it)
        return out, g.gradient(total, x)

    def jacobian(x, y):
        with pj.GradientTape() as g:
            g.watch(x)
            rows = f(x, y)[:3]
        return g.jacobian(rows, x)
    for fn in (f, gradient, jacobian):
        _compiled_equals_eager(fn, x, y)


def test_a_product_with_full_size_ones_keeps_eagers_layout():
    def f(x):                       # x.T * ones is C-ordered (numpy breaks the tie so); x.T isn't
        return (pj.transpose(x) * pj.ones((43, 40), np.float64)) @ x
    _compiled_equals_eager(f, X)


# -- ones, concatenations, batched products, Variables --------------------------------------
Y48, V48 = RNG.standard_normal((48, 48)), RNG.standard_normal(48)


def test_ones_like_of_a_transposed_value_is_not_folded_into_a_c_ordered_constant():
    def f(x, v):
        t = pj.exp(pj.transpose(x))
        return (pj.ones_like(t) + t) @ v
    _compiled_equals_eager(f, Y48, V48)


def test_concat_and_stack_lay_results_out_like_their_inputs():
    y = RNG.standard_normal((48, 48))

    def concat_after_reuse(x, y, v):
        u = pj.exp(pj.transpose(x)) + y
        return pj.concat([u, pj.sin(pj.transpose(x)) + y], axis=1) @ v

    def stack(x, v):
        s = pj.stack([pj.exp(pj.transpose(x)), pj.sin(pj.transpose(x))], axis=1)
        return pj.einsum("ijk,k->ij", s, v)

    def concat_of_views(x):
        t = pj.transpose(x)
        return (pj.concat([t[:, :24], t[:, 24:]], axis=1) * pj.ones((48, 48), np.float64)) @ x[0]
    _compiled_equals_eager(concat_after_reuse, Y48, y, RNG.standard_normal(96))
    _compiled_equals_eager(stack, Y48, V48)
    _compiled_equals_eager(concat_of_views, Y48)


def test_a_batched_products_result_is_not_taken_for_c_ordered():
    def f(a, b, c):
        m = pj.transpose(a, (1, 0, 2, 3)) @ b        # batch axes laid out as a's
        return pj.einsum("abij->j", m + c @ b)
    _compiled_equals_eager(f, RNG.standard_normal((3, 4, 10, 48)), RNG.standard_normal((48, 48)),
                           RNG.standard_normal((4, 3, 10, 48)))


def test_variables_hold_c_ordered_values_and_tensor_arguments_keep_their_layout():
    var = pj.Variable(np.asfortranarray(Y48))
    assert var.numpy().flags.c_contiguous
    var.assign(np.asfortranarray(Y48 * 2))
    assert var.numpy().flags.c_contiguous
    _compiled_equals_eager(lambda x: pj.constant(var) @ x, V48)
    t = pj.transpose(pj.constant(Y48))                 # an F-ordered Tensor, used as it is
    with caching(False):
        want = (t @ pj.constant(V48)).numpy()
    assert same_bits(pj.function(lambda t, v: t @ v)(t, V48).numpy(), want)


def test_a_value_only_c_ordered_ufuncs_read_is_layout_blind():
    """A ufunc asked for C order writes the same numbers in the same layout whatever its
    operands' layouts: what only such ufuncs read (here through a transpose) may be laid out
    otherwise, so the one-hot seed of a log-softmax head (captured as a strided view) is stored
    compactly and its sum computed batch-first. Compiled equals eager bit for bit with
    pforjac.function(batch_major=False), the passes the eager loop cache runs; batch-first
    products (the default) may round rows otherwise: OpenBLAS's Haswell sgemm kernel rounds a
    row by its position in the product (README, Reliability)."""
    from pforjac.compiled.codegen import Layouts
    from pforjac.program import make_program
    from pforjac.compiled.passes import batch_major_products
    w = pj.Variable(RNG.standard_normal((32, 100)).astype(np.float32))

    def head(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            z = x @ w
            y = pj.concat([pj.log_softmax(z, -1), pj.logsumexp(z, -1, keepdims=True)], -1)
        return tape.batch_jacobian(y, x)
    x = RNG.standard_normal((64, 32)).astype(np.float32)
    x[3, :] = 0.0
    exact, batch_first = pj.function(head, batch_major=False), pj.function(head)
    with caching(False), np.errstate(all="ignore"):
        want = head(pj.constant(x)).numpy()
        got = np.asarray(exact(x))
        fast = np.asarray(batch_first(x))
    assert same_bits(got, want)
    np.testing.assert_allclose(fast, want, rtol=1e-5, atol=1e-5)
    assert fast.flags.c_contiguous
    names = [[e.prim.name for e in f.program(x).equations] for f in (exact, batch_first)]
    assert names[0][-1] == "transpose" and names[1][-1] != "transpose"   # the pass ran, or not
    p = batch_major_products(make_program(head, [((64, 32), np.float32)]))
    layouts = Layouts(p)
    seeds = [c for c in p.consts if tuple(c.shape) == (101, 64, 100)]
    assert seeds and all(layouts.stretchable(c) for c in seeds)
    assert all(np.prod(c.shape) < 101 * 64 * 100 for c in batch_first.program(x).consts)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.true_divide])
def test_by_last_axis_gives_the_ufuncs_bits(ufunc):
    """ops._kernels.by_last_axis computes a ufunc one position of a short last axis at a time (an
    operand broadcast along it makes numpy's loops 2-4 elements long): the same dtype and
    bits, NaN, infinities and zeros' signs included, into a fresh C-ordered result or `out`."""
    from pforjac.ops._kernels import by_last_axis
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e-310, 3.0, -7.5])

    def draw(shape, dtype):
        x = rng.standard_normal(shape) * 3
        x.flat[rng.choice(x.size, x.size // 3, replace=False)] = rng.choice(special, x.size // 3)
        return x.astype(dtype)
    cases = [((64, 32, 1), (64, 32, 3)), ((96, 8, 8, 1), (8, 8, 3)), ((40, 50, 4), (4,)),
             ((30, 20, 2), (30, 1, 1)), ((7, 9, 1), ())]
    with np.errstate(all="ignore"):
        for dtype in (np.float32, np.float64, np.int64):
            for a_shape, b_shape in cases:
                a, b = draw(a_shape, dtype), draw(b_shape, dtype)
                if dtype == np.int64 and ufunc is np.true_divide:
                    b = np.where(b == 0, 1, b)
                for x, y in ((a, b), (b, a), (np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)), b)):
                    want = ufunc(x, y)
                    got = by_last_axis(ufunc, x, y)
                    assert got.dtype == want.dtype and got.flags.c_contiguous and same_bits(got, want)
                    buf = np.array(want) * 0                   # `out=`, as in-place code passes it
                    assert by_last_axis(ufunc, x, y, out=buf) is buf and same_bits(buf, want)


def test_compiled_short_last_axis_products_equal_eager():
    """Pairwise forces of 32 atoms in 3-D: (n, n, 1) * (n, n, 3) products, as the Hessian of a
    pair potential makes, run through by_last_axis in compiled code, bit for bit eager's."""
    def lj(x):
        X = pj.reshape(x, (-1, 3))
        d = X[:, None, :] - X[None, :, :]
        r2 = pj.sum(d * d, -1) + pj.constant(np.eye(32))
        inv6 = (1.0 / r2) ** 3
        return 0.5 * pj.sum(pj.constant(1 - np.eye(32)) * (inv6 * inv6 - inv6))

    def hessian(x):
        with pj.GradientTape() as outer:
            outer.watch(x)
            with pj.GradientTape() as inner:
                inner.watch(x)
                e = lj(x)
            g = inner.gradient(e, x)
        return outer.jacobian(g, x)
    x = (np.indices((4, 4, 2)).reshape(3, -1).T * 1.2 + RNG.normal(scale=0.1, size=(32, 3))).ravel()
    assert "by_last_axis(np_multiply" in pj.function(hessian).source(x)
    _compiled_equals_eager(hessian, x)


def _claims_hold(program, args) -> None:
    """Runs `program`'s equations one by one on `args`: every value `surely_c_ordered`
    claims is C-contiguous."""
    from pforjac import core
    from pforjac.compiled.codegen import surely_c_ordered
    claimed = surely_c_ordered(program)
    env = {id(v): a for v, a in zip(program.inputs, args)}
    env.update((id(c), v.numpy()) for c, v in zip(program.consts, program.const_values))
    with np.errstate(all="ignore"):
        for eqn in program.equations:
            outs = core.impl_rules[eqn.prim](*[env[id(v)] for v in eqn.inputs], **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            for v, o in zip(eqn.outputs, outs):
                env[id(v)] = o
                assert id(v) not in claimed or np.asarray(o).flags.c_contiguous, eqn


@settings(deadline=None, max_examples=40)
@given(random_programs(max_steps=6), st.booleans())
def test_values_claimed_c_ordered_are_c_ordered_at_run_time(program, by_jacobian):
    """surely_c_ordered's claims (the layout passes and codegen's buffer reuse rest on them)
    hold on random programs and their Jacobians, their input laid out in Fortran order."""
    from pforjac.compiled.passes import simplify
    from pforjac.program import make_program
    f = program.function()
    body = (lambda x: pj.jacobian(f, x)) if by_jacobian else f
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = make_program(body, [(program.x_shape, np.float64)])
    x = RNG.standard_normal(program.x_shape)
    x = np.asfortranarray(x) if x.ndim else x          # (asfortranarray makes a 0-d array 1-d)
    for p in (traced, simplify(traced)):
        _claims_hold(p, [x])


def test_numpy_lays_a_ufunc_out_in_c_order_where_operands_layouts_conflict():
    """The fact `surely_c_ordered` rests on: one C-ordered operand of the result's shape
    makes numpy's ufunc result C-ordered, whatever the other operands' layouts."""
    c = np.ones((4, 5, 6))
    others = [np.ones((6, 5, 4)).transpose(2, 1, 0), np.ones((5, 4, 6)).transpose(1, 0, 2),
              np.broadcast_to(np.ones((6, 1, 4)).transpose(2, 1, 0), (4, 5, 6))]
    for other in others:
        assert np.add(other, c).flags.c_contiguous and np.multiply(c, other).flags.c_contiguous


def test_a_scatter_into_zeros_is_c_ordered_whatever_its_operand():
    from pforjac.ops.indexing import setitem_zeros_p

    def f(x):                       # a transposed (F-ordered) operand, its result read by a product
        t = pj.transpose(pj.exp(x)) * 1.0
        s = setitem_zeros_p.bind(t, key=(slice(1, 7),), shape=(8, 5))
        return s @ x
    _compiled_equals_eager(f, RNG.standard_normal((5, 6)))
