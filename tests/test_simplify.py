"""Each simplification pass on its own: it does its job and never changes a result."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pforjac as pj
from pforjac.compiled.codegen import compile_program
from pforjac.program import make_program
from pforjac.compiled.passes import (PASSES, batch_major_products, broadcasts_into_ufuncs, cancel_reshapes,
                              compact_constants, drop_identities, eliminate_common_subexpressions, eliminate_dead_code, fold_constants,
                              onehot_products, simplify, view_chain_in_order)

RNG = np.random.default_rng(5)
C = pj.constant(RNG.normal(size=(3, 4)))


def _run(program, *args):
    return compile_program(program)(*args, [v.numpy() for v in program.const_values])


def _names(program):
    return [e.prim.name for e in program.equations]


def _same(before, after, *args):
    for a, b in zip(_run(before, *args), _run(after, *args)):
        np.testing.assert_array_equal(a, b)


def test_dead_code_is_dropped():
    def f(x):
        unused = pj.exp(x) * 3.0  # noqa: F841
        return pj.sin(x)
    p = make_program(f, [((3, 4), np.float64)])
    q = eliminate_dead_code(p)
    assert _names(q) == ["sin"] and "exp" in _names(p)
    _same(p, q, RNG.normal(size=(3, 4)))


def test_common_subexpressions_are_shared():
    p = make_program(lambda x: pj.exp(x) + pj.exp(x) * pj.exp(x), [((3, 4), np.float64)])
    q = eliminate_common_subexpressions(p)
    assert _names(p).count("exp") == 3 and _names(q).count("exp") == 1
    _same(p, q, RNG.normal(size=(3, 4)))


def test_constants_are_folded_but_variables_are_not():
    v = pj.Variable(np.ones((3, 4)))
    p = make_program(lambda x: x * pj.exp(C) + v * 2.0, [((3, 4), np.float64)], lift_variables=True)
    assert "exp" not in _names(p)  # eager work on constants was done at trace time
    q = fold_constants(p)
    assert "multiply" in _names(q)   # v * 2.0 must stay: v is read when the program runs
    _same(p, q, RNG.normal(size=(3, 4)))


def test_fold_constants_evaluates_constant_only_equations():
    from pforjac.program import Equation
    p = make_program(lambda x: x + C, [((3, 4), np.float64)])
    c = p.consts[0]
    out = p.equations[0].outputs[0]
    # add an equation on the constant alone, as a nested transform can leave behind
    tmp = type(c)(c.shape, c.dtype, None, "zz")
    p.equations.insert(0, Equation(pj.ops.elementwise.exp_p, [c], {}, [tmp]))
    p.equations[1].inputs = [p.inputs[0], tmp]
    q = fold_constants(p)
    assert _names(q) == ["add"]
    _same(p, q, RNG.normal(size=(3, 4)))
    assert out is q.outputs[0]


def test_reshape_and_transpose_chains_cancel():
    def f(x):
        y = pj.reshape(pj.reshape(x, (12,)), (2, 6))
        z = pj.transpose(pj.transpose(x, (1, 0)), (1, 0))
        w = pj.reshape(pj.transpose(pj.reshape(x, (1, 3, 4)), (1, 0, 2)), (3, 4))
        return pj.reshape(y, (3, 4)) + z * w
    p = make_program(f, [((3, 4), np.float64)])
    q = cancel_reshapes(p)
    assert _names(q) == ["multiply", "add"], _names(q)
    _same(p, q, RNG.normal(size=(3, 4)))


def test_a_chain_that_keeps_the_element_order_is_one_reshape():
    """batch_jacobian's tail: split an axis, swap the loop axis out and back in: one reshape.
    A chain that really permutes keeps its transpose."""
    def f(x):
        y = pj.reshape(x, (2, 3, 4, 1))
        y = pj.transpose(y, (1, 0, 2, 3))
        y = pj.reshape(y, (3, 2, 4))
        back = pj.transpose(y, (1, 0, 2))                       # in order again: (2, 3, 4)
        swapped = pj.reshape(pj.transpose(pj.reshape(x, (2, 3, 4)), (0, 2, 1)), (2, 12))
        return back, swapped
    p = make_program(f, [((6, 4), np.float64)])
    q = cancel_reshapes(p)
    assert _names(q) == ["reshape", "reshape", "transpose", "reshape"], _names(q)
    assert q.equations[0].inputs[0] is q.inputs[0] and q.equations[0].params["shape"] == (2, 3, 4)
    _same(p, q, RNG.normal(size=(6, 4)))


def _ground_truth_in_order(shape, steps):
    """By index arrays: the chain's elements in C order, and whether numpy copied."""
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    copied = False
    for name, params in steps:
        if name == "transpose":
            idx = idx.transpose(params["perm"])
        else:
            before = idx
            idx = idx.reshape(params["shape"])
            copied |= not np.shares_memory(idx, before)
    return bool(np.array_equal(idx.ravel(), np.arange(idx.size))), copied


@st.composite
def _view_chains(draw):
    dims = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=4))
    shape, steps = tuple(dims), []
    current = shape
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            perm = tuple(draw(st.permutations(range(len(current)))))
            steps.append(("transpose", {"perm": perm}))
            current = tuple(current[p] for p in perm)
        else:                                    # regroup the factors, with unit axes sprinkled
            factors = [f for d in current for f in _prime_factors(d)]
            factors = draw(st.permutations(factors)) if draw(st.booleans()) else factors
            cuts = sorted(draw(st.lists(st.integers(0, len(factors)), max_size=3)))
            new, start = [], 0
            for c in cuts + [len(factors)]:
                new.append(int(np.prod(factors[start:c])))
                start = c
            current = tuple(new)
            steps.append(("reshape", {"shape": current}))
    return shape, steps


def _prime_factors(d):
    return [2, 2] if d == 4 else ([d] if d > 1 else [])


@given(_view_chains())
@settings(max_examples={"ci": 300, "long": 20000}.get(settings.get_current_profile_name(),
                                                     settings.default.max_examples))
def test_view_chain_order_agrees_with_index_arrays(chain):
    """Never says 'in order' when the elements moved; always does when they did not and
    numpy made every reshape without a copy (with a copy the check gives up)."""
    shape, steps = chain
    in_order, copied = _ground_truth_in_order(shape, steps)
    got = view_chain_in_order(shape, steps)
    assert not got or in_order
    if in_order and not copied:
        assert got


def test_product_with_a_one_hot_becomes_a_gather():
    u = pj.constant(RNG.normal(size=(5, 3)))
    idx = pj.constant(np.array([4, 0, 2], np.int32))
    # one_hot(idx) @ u on eager constants is computed at trace time, so build the pattern
    # as a nested transform leaves it: equations on captured constants
    from pforjac.program import Equation
    from pforjac.ops.indexing import one_hot_p
    from pforjac.ops.linalg import matmul_p
    p = make_program(lambda x: x * 1.0, [((3, 3), np.float64)])
    hot = type(p.inputs[0])((3, 5), np.float64, None, "hot")
    prod = type(p.inputs[0])((3, 3), np.float64, None, "prod")
    p.consts += [type(hot)((3,), np.int32, None, "idx"), type(hot)((5, 3), np.float64, None, "u")]
    p.const_values += [idx, u]
    p.equations[:0] = [Equation(one_hot_p, [p.consts[-2]], {"depth": 5, "dtype": np.dtype(np.float64)}, [hot]),
                       Equation(matmul_p, [hot, p.consts[-1]], {}, [prod])]
    p.equations[-1].inputs = [p.inputs[0], prod]
    q = onehot_products(p)
    assert "matmul" not in _names(q) and "gather" in _names(q) and "one_hot" not in _names(q)
    _same(p, q, RNG.normal(size=(3, 3)))


def test_products_with_ones_and_ordered_gathers_are_dropped():
    ones = pj.constant(np.ones((3, 4)))
    rows = pj.constant(np.arange(3, dtype=np.int32))
    p = make_program(lambda x: pj.gather(pj.exp(x) * ones, rows, axis=0) + 1.0,
                     [((3, 4), np.float64)])
    q = drop_identities(p)
    assert _names(p) == ["exp", "multiply", "gather", "add"]
    assert _names(q) == ["exp", "add"]
    assert q.equations[1].params == {"order": "C"}     # writes what it wrote from the copy
    _same(p, q, RNG.normal(size=(3, 4)))


def test_an_ordered_gather_of_a_transposed_view_read_by_ufuncs_is_dropped():
    rows = pj.constant(np.arange(4, dtype=np.int32))

    def f(x):
        g = pj.gather(pj.transpose(x), rows, axis=0)
        return (g * 1.7 + 1.0) @ x
    p = make_program(f, [((20, 4), np.float64)])
    q = simplify(p)
    assert "gather" not in _names(q)
    _same(p, q, np.random.default_rng(7).normal(size=(20, 4)))    # the product's bits too
    assert [e.params.get("order") for e in q.equations if e.prim.name == "multiply"] == ["C"]


def test_an_ordered_gather_of_a_transposed_view_keeps_its_rounding():
    """gather(x.T, arange) is a C-ordered copy of x.T: the product and the sum after it
    round as they do on that copy, not as on the transposed view (a Hessian's compiled
    code differed from eager in the last bit when the gather was dropped)."""
    rows = pj.constant(np.arange(4, dtype=np.int32))

    def f(x):
        g = pj.gather(pj.transpose(x), rows, axis=0) * 1.7
        return g @ x, pj.sum(g, axis=1)
    p = make_program(f, [((20, 4), np.float64)])
    x = np.random.default_rng(7).normal(size=(20, 4))
    _same(p, simplify(p), x)


def test_ones_like_is_a_constant_whatever_its_input_holds():
    p = make_program(lambda x: pj.exp(x) * pj.ones_like(pj.sin(x)) + pj.zeros_like(x),
                     [((3, 4), np.float64)])
    q = fold_constants(p)
    assert "ones_like" in _names(p) and "zeros_like" in _names(p)
    assert "ones_like" not in _names(q) and "zeros_like" not in _names(q) and "sin" not in _names(q)
    x = RNG.normal(size=(3, 4))
    x[0, 0] = np.nan                             # ones_like(nan) is still 1
    _same(p, q, x)
    assert _names(simplify(p)) == ["exp", "add"]


@pytest.mark.parametrize("ones_first", [True, False])
def test_outer_product_with_ones_is_a_broadcast(ones_first):
    ones = pj.constant(np.ones((5, 1)) if ones_first else np.ones((1, 3)))

    def f(x):
        row = pj.reshape(pj.exp(x), (1, 3) if ones_first else (5, 1))
        return ((ones @ row) if ones_first else (row @ ones)) * 2.0
    shape = (3,) if ones_first else (5,)
    p = make_program(f, [(shape, np.float64)])
    q = drop_identities(p)
    assert "matmul" in _names(p) and "matmul" not in _names(q) and "broadcast_to" in _names(q)
    x = RNG.normal(size=shape)
    x[0] = np.inf                                # 1 * inf: the same inf either way
    _same(p, q, x)


def test_a_product_with_ones_that_only_stretches_is_a_broadcast():
    ones = pj.constant(np.ones((4, 3, 1)))
    p = make_program(lambda x: pj.sin(pj.reshape(x, (4, 1, 5)) * ones) * 2.0, [((20,), np.float64)])
    q = drop_identities(p)
    assert "multiply" in _names(p) and _names(q).count("multiply") == 1   # only the `* 2.0`
    assert "broadcast_to" in _names(q)
    x = RNG.normal(size=20)
    x[3] = np.nan                                # nan * 1 is nan either way
    with np.errstate(invalid="ignore"):
        _same(p, q, x)


def test_an_outer_product_with_ones_read_with_a_leading_unit_axis_is_a_broadcast():
    """The seed's batch_jacobian: ones(n, 1) @ w(1, k), reshaped to (1, n, k), times a
    C-ordered (n, k) value: that operand decides the result's layout either way."""
    ones, t = pj.constant(np.ones((6, 1))), pj.constant(RNG.normal(size=(3, 4)))

    def f(x, w):
        s = pj.sin(x @ t[:, :3])                         # surely C-ordered (an input may not be)
        rows = pj.reshape(pj.reshape(ones @ w, (1, 6, 3)) * s, (6, 3))
        return rows @ t
    p = make_program(f, [((6, 3), np.float64), ((1, 3), np.float64)])
    q = drop_identities(p)
    assert _names(p).count("matmul") == 3 and _names(q).count("matmul") == 2
    assert "broadcast_to" in _names(q)
    x, w = RNG.normal(size=(6, 3)), RNG.normal(size=(1, 3))
    w[0, 1] = -0.0                                       # 1 * -0 + 0 * ...: +0, as b + 0 gives
    for a, b in zip(_run(p, x, w), _run(q, x, w)):
        np.testing.assert_array_equal(a, b)
        assert a.flags.c_contiguous and b.flags.c_contiguous


def test_a_result_is_never_replaced_by_a_broadcast_view():
    ones = pj.constant(np.ones((5, 1)))
    p = make_program(lambda x: ones @ pj.reshape(x, (1, 3)), [((3,), np.float64)])
    q = drop_identities(p)
    assert "matmul" in _names(q)
    assert _run(q, RNG.normal(size=3))[0].flags.writeable

W8 = pj.constant(RNG.normal(size=(5, 8)))


def _rows_first_product(e, d):
    """batch_jacobian's shape of work: (A, B, K) rows-first, a product, batch-first out."""
    rows = pj.reshape(e * d, (e.shape[0] * e.shape[1], e.shape[2])) @ W8
    return pj.transpose(pj.reshape(rows, (e.shape[0], e.shape[1], 8)), (1, 0, 2))


@pytest.mark.parametrize("d_shape", [(3, 4, 5), (4, 5), (1, 4, 5), (5,)])
def test_a_swapped_product_is_computed_batch_first(d_shape):
    p = make_program(_rows_first_product, [((3, 4, 5), np.float32), (d_shape, np.float32)])
    q = batch_major_products(p)
    assert _names(p)[-1] == "transpose" and "transpose" not in _names(q)[-3:]
    e, d = RNG.normal(size=(3, 4, 5)).astype(np.float32), RNG.normal(size=d_shape).astype(np.float32)
    (want,), (got,) = _run(p, e, d), _run(q, e, d)
    assert got.shape == (4, 3, 8) and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)           # the same gemm rows, in another order


def test_a_swapped_operand_stretched_by_ones_is_a_broadcast_view():
    ones = pj.constant(np.ones((3, 4, 1), np.float32))   # the per-example seed's compact form

    def f(row, d):
        return _rows_first_product(ones * pj.reshape(row, (3, 1, 5)), d)
    p = make_program(f, [((3, 5), np.float32), ((4, 5), np.float32)])
    q = batch_major_products(p)
    assert _names(p).count("multiply") == 2 and _names(q).count("multiply") == 1
    assert "broadcast_to" in _names(q)
    (rows_eqn,) = [e for e in q.equations if e.prim.name == "multiply"]
    assert rows_eqn.params == {"order": "C"}        # written C-ordered: rows for the product
    row, d = RNG.normal(size=(3, 5)).astype(np.float32), RNG.normal(size=(4, 5)).astype(np.float32)
    row[1, 2], row[2, 0] = np.inf, -0.0                  # inf * 1 and -0 * 1 as before
    with np.errstate(invalid="ignore"):
        (want,), (got,) = _run(p, row, d), _run(q, row, d)
    assert got.shape == (4, 3, 8) and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


def test_a_broadcast_operand_of_a_c_ordered_ufunc_is_read_unbroadcast():
    ones = pj.constant(np.ones((3, 4, 1), np.float32))

    def f(row, d):
        return _rows_first_product(ones * pj.reshape(row, (3, 1, 5)), d)
    q = batch_major_products(make_program(f, [((3, 5), np.float32), ((4, 5), np.float32)]))
    r = broadcasts_into_ufuncs(q)       # transpose(broadcast_to(row, (3, 4, 5))) is row (1, 3, 5)
    assert "broadcast_to" in _names(q) and "broadcast_to" not in _names(r)
    assert _names(r).count("transpose") == _names(q).count("transpose") - 1
    row, d = RNG.normal(size=(3, 5)).astype(np.float32), RNG.normal(size=(4, 5)).astype(np.float32)
    row[1, 2], row[2, 0], d[0, 0] = np.inf, -0.0, -0.0
    with np.errstate(invalid="ignore"):
        (want,), (got,) = _run(q, row, d), _run(r, row, d)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)


def _c_ordered_multiply(f, shapes):
    from dataclasses import replace
    p = make_program(f, [(s, np.float64) for s in shapes])
    return replace(p, equations=[replace(e, params={"order": "C"}) if e.prim.name == "multiply" else e
                                 for e in p.equations])


@pytest.mark.parametrize("case", ["stretch makes the shape", "axes reordered", "no order"])
def test_a_broadcast_a_ufunc_needs_is_kept(case):
    if case == "stretch makes the shape":      # no other operand has the leading 4
        p = _c_ordered_multiply(lambda x, y: pj.broadcast_to(x, (4, 3, 5)) * y, [(3, 5), (3, 5)])
    elif case == "axes reordered":             # x's own axes swap: not a reshape of x
        p = _c_ordered_multiply(lambda x, y: pj.transpose(pj.broadcast_to(x, (2, 3, 5)), (0, 2, 1)) * y,
                                [(3, 5), (2, 5, 3)])
    else:      # numpy picks the layout (y's may be any) and a product reads it: keep the view
        p = make_program(lambda x, y, w: pj.matmul(pj.broadcast_to(x, (4, 3, 5)) * y, w),
                         [((3, 5), np.float64), ((4, 3, 5), np.float64), ((5, 2), np.float64)])
    q = broadcasts_into_ufuncs(p)
    assert _names(q) == _names(p)
    args = [RNG.normal(size=v.shape) for v in p.inputs]
    _same(p, q, *args)


@pytest.mark.parametrize("case", ["C-ordered operand", "result nothing reads the layout of"])
def test_a_broadcast_into_a_ufunc_whose_result_is_c_ordered_is_dropped(case):
    """A full-size C-ordered operand makes numpy's result C-ordered whatever the broadcast
    view's strides; a result whose layout no value reads may be laid out as numpy likes."""
    if case == "C-ordered operand":   # a product's rows are C-ordered; a product reads the result
        def f(x, y, w):
            rows = pj.reshape(pj.matmul(pj.reshape(y, (12, 5)), w[:, :5]), (4, 3, 5))
            return pj.matmul(pj.broadcast_to(x, (4, 3, 5)) * rows, w)
    else:
        def f(x, y, w):
            return pj.broadcast_to(x, (4, 3, 5)) * y + w[0, 0]
    p = make_program(f, [((3, 5), np.float64), ((4, 3, 5), np.float64), ((5, 6), np.float64)])
    q = broadcasts_into_ufuncs(p)
    assert "broadcast_to" in _names(p) and "broadcast_to" not in _names(q)
    x, y, w = (RNG.normal(size=v.shape) for v in p.inputs)
    y = np.asfortranarray(y)                  # (an input laid out otherwise)
    x[1, 2], y[0, 1, 3] = -0.0, np.inf
    _same_bits(p, q, x, y, w)


def test_a_broadcast_another_operand_covers_is_dropped_with_the_same_numbers():
    p = _c_ordered_multiply(lambda x, y: pj.transpose(pj.broadcast_to(x, (2, 4, 5)), (1, 0, 2)) * y,
                            [(2, 1, 5), (4, 1, 5)])
    q = broadcasts_into_ufuncs(p)
    assert "broadcast_to" not in _names(q)
    x, y = RNG.normal(size=(2, 1, 5)), RNG.normal(size=(4, 1, 5))
    _same(p, q, x, y)
    assert _run(q, x, y)[0].shape == (4, 2, 5)


def test_batch_major_products_is_the_one_pass_a_path_may_leave_out():
    """One pass list for every compiled path: pass_list(batch_major=False), which the loop
    cache runs, is PASSES in order without batch_major_products."""
    from pforjac.compiled.loopcache import _PASSES
    from pforjac.compiled.passes import pass_list
    assert pass_list(batch_major=True) == PASSES and _PASSES == pass_list(batch_major=False)
    assert _PASSES == tuple(p for p in PASSES if p is not batch_major_products) != PASSES


def test_a_swapped_product_whose_parts_are_read_twice_is_left_alone():
    def f(e, d):
        prod = e * d                                     # read twice: by the product and sum
        rows = pj.reshape(prod, (12, 5)) @ W8
        return pj.transpose(pj.reshape(rows, (3, 4, 8)), (1, 0, 2)), pj.sum(prod)
    p = make_program(f, [((3, 4, 5), np.float32), ((4, 5), np.float32)])
    assert _names(batch_major_products(p)) == _names(p)


def test_a_compiled_per_example_jacobian_is_c_ordered_and_equals_eager():
    w1, w2 = pj.Variable(RNG.normal(size=(6, 16))), pj.Variable(RNG.normal(size=(16, 3)))

    def jac(x):
        with pj.GradientTape() as tape:
            tape.watch(x)
            y = pj.tanh(x @ w1) @ w2
        return tape.batch_jacobian(y, x)
    x = RNG.normal(size=(8, 6))
    got = np.asarray(pj.function(jac)(x))
    from pforjac.compiled.loopcache import caching
    with caching(False):
        want = jac(pj.constant(x)).numpy()
    assert got.flags.c_contiguous and want.flags.c_contiguous      # (eager was a transposed view)
    np.testing.assert_array_equal(got, want)



@pytest.mark.parametrize("kind", ["jacobian", "batch_jacobian"])
def test_all_passes_keep_jacobian_results(kind):
    w = pj.constant(RNG.normal(size=(4, 6)))

    def f(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.softmax(pj.tanh(x @ w), axis=-1)
        return getattr(g, kind)(y, x)
    p = make_program(f, [((3, 4), np.float64)])
    x = RNG.normal(size=(3, 4))
    q = simplify(p)
    views = ("reshape", "transpose", "broadcast_to")    # batch-major swaps add views, no work
    assert len([n for n in _names(q) if n not in views]) < len([n for n in _names(p) if n not in views])
    for a, b in zip(_run(p, x), _run(q, x)):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    for single in PASSES:
        _same(p, single(p), x)


def test_a_product_whose_rows_are_merged_otherwise_is_left_alone():
    w = pj.constant(RNG.normal(size=(8, 3)))

    def f(e):          # (2, 3, 4) merged as (3, 8), not (6, 4): not rows of a swapped product
        rows = pj.reshape(pj.exp(e), (3, 8)) @ w
        return pj.transpose(pj.reshape(rows, (3, 1, 3)), (1, 0, 2))
    p = make_program(f, [((2, 3, 4), np.float64)])
    assert _names(batch_major_products(p)) == _names(p)


def test_equal_scalar_constants_are_one_value_for_cse():
    """Two ops' own scalar constants of equal bits are merged, so the chains that read them
    are shared (logsumexp's and log_softmax's stable shifts both compare with their own
    `inf`); -0.0 and 0.0 stay apart, and Variables are never merged."""
    v, w = pj.Variable(2.0), pj.Variable(2.0)

    def f(x):
        a = pj.exp(pj.minimum(x, pj.constant(np.inf)) + pj.constant(np.float64(1.5)))
        b = pj.exp(pj.minimum(x, pj.constant(np.inf)) + pj.constant(np.float64(1.5)))
        return a + b + x * pj.constant(-0.0) + x * pj.constant(0.0) + v * x + w * x
    p = make_program(f, [((3, 4), np.float64)], lift_variables=True)
    q = eliminate_dead_code(eliminate_common_subexpressions(p))
    assert _names(p).count("exp") == 2 and _names(q).count("exp") == 1
    scalars = [c.numpy() for c in q.const_values if not isinstance(c, pj.Variable) and c.shape == ()]
    assert sum(1 for c in scalars if c == 0) == 2                    # +0 and -0 both kept
    assert sum(isinstance(c, pj.Variable) for c in q.const_values) == 2
    x = RNG.normal(size=(3, 4))
    _same(p, q, x)


def test_equal_array_constants_are_one_value_for_cse():
    """Array constants of equal dtype, shape and bits are merged too: the Jacobian of
    log_softmax beside logsumexp then computes one exp and one sum (each op's stable shift
    falls back to zeros that fold into an array of their own); arrays differing only in a
    zero's sign stay apart."""
    def f(z):
        with pj.GradientTape() as tape:
            tape.watch(z)
            y = pj.concat([pj.log_softmax(z, -1), pj.logsumexp(z, -1, keepdims=True)], -1)
        return tape.batch_jacobian(y, z)
    z = RNG.normal(size=(4, 5))
    z[1] = -np.inf
    compiled = pj.function(f)
    assert _names(compiled.program(z)).count("exp") == 1
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_array_equal(compiled(z), f(pj.constant(z)).numpy())

    def g(x):
        plus, minus = np.zeros((3, 4)), np.zeros((3, 4))
        minus[1, 2] = -0.0
        return pj.exp(x * pj.constant(plus)) + pj.exp(x * pj.constant(minus)) \
            + pj.exp(x * pj.constant(plus.copy()))
    r = eliminate_dead_code(eliminate_common_subexpressions(make_program(g, [((3, 4), np.float64)])))
    assert _names(r).count("exp") == 2


# -- compact_constants ------------------------------------------------------------------------
def _bits(a):
    # every byte, NaN payloads too (loopcache.same_bits lets any NaN equal any other): what
    # compact_constants stores must be the constant's own bits
    a = np.ascontiguousarray(a)
    return a.dtype.str, a.shape, a.tobytes()


def _same_bits(before, after, *args):
    with np.errstate(invalid="ignore"):
        for a, b in zip(_run(before, *args), _run(after, *args)):
            assert _bits(a) == _bits(b)


def _const_shapes(program):
    return [tuple(c.shape) for c in program.consts]


def test_a_constant_repeated_along_an_axis_is_stored_once_and_broadcast():
    row = RNG.normal(size=(6, 1, 100))
    row[0, 0, :3] = [-0.0, np.nan, np.inf]                # stored and read back bit for bit
    seed = pj.constant(np.repeat(row, 16, axis=1))       # (6, 16, 100): one slice per example

    def f(x):
        return pj.sin(x) + seed
    p = make_program(f, [((6, 16, 100), np.float64)])
    q = compact_constants(p)
    assert (6, 16, 100) in _const_shapes(p) and _const_shapes(q) == [(6, 1, 100)]
    assert _names(q) == ["broadcast_to", "sin", "add"]
    x = RNG.normal(size=(6, 16, 100))
    x[1, 2, 3], x[0, 0, 0] = -0.0, 0.0
    _same_bits(p, q, x)
    assert (6, 1, 100) in _const_shapes(simplify(p))      # one of the passes simplify runs


def test_slices_differing_in_the_sign_of_zero_are_not_the_same():
    value = np.zeros((4, 8, 128))
    value[2, 5, 7] = -0.0
    p = make_program(lambda x: x * pj.constant(value), [((4, 8, 128), np.float64)])
    assert compact_constants(p) is p                       # no axis repeats...
    value[...] = 0.0
    value[:, 5, :] = -0.0                                  # ... when axis 1 differs in sign bits
    p = make_program(lambda x: x * pj.constant(value), [((4, 8, 128), np.float64)])
    q = compact_constants(p)
    assert _const_shapes(q) == [(1, 8, 128)]              # axis 0 repeats; axis 1 does not
    x = -np.abs(RNG.normal(size=(4, 8, 128)))
    _same_bits(p, q, x)


def test_a_short_run_after_the_repeated_axis_is_left_dense():
    # numpy's loop over the broadcast would run over 10 elements at a time: slower than dense
    seed = pj.constant(np.repeat(RNG.normal(size=(20, 1, 10)), 500, axis=1))
    p = make_program(lambda x: x * seed, [((20, 500, 10), np.float64)])
    q = compact_constants(p)
    assert _const_shapes(q) == [(20, 500, 10)] and q.const_values[0] is p.const_values[0]


def test_a_strided_constant_is_stored_c_ordered():
    base = pj.constant(RNG.normal(size=(64, 101, 100)).astype(np.float32))
    # made by an op on constants while tracing (as densify's moveaxis of the one-hot seed):
    # captured as the transposed view it is
    p = make_program(lambda x: x + pj.transpose(base, (1, 0, 2)), [((101, 64, 100), np.float32)])
    assert not p.const_values[0].numpy().flags.c_contiguous
    q = compact_constants(p)
    assert q.const_values[0].numpy().flags.c_contiguous and _const_shapes(q) == [(101, 64, 100)]
    _same_bits(p, q, RNG.normal(size=(101, 64, 100)).astype(np.float32))


def test_a_constant_a_product_reads_keeps_its_layout():
    # a product rounds by its operands' layout: a broadcast view in its place is not the same
    w = pj.constant(np.repeat(RNG.normal(size=(1, 128)), 64, axis=0))
    p = make_program(lambda x: x @ w, [((3, 64), np.float64)])
    assert compact_constants(p) is p


def test_a_swap_reaches_back_through_a_chain_of_ufuncs():
    """The log-softmax head's shape of work: the rows-first product's operand is a sum of
    ufunc results of broadcasts; each is computed batch-first, so no ufunc reads a transposed
    full-size operand."""
    def f(s, l):                                           # s (A, B, 1), l (B, K)
        e = (s * l) + pj.exp(s * l)
        return _rows_first_product(e, pj.ones((5,), np.float32))
    p = make_program(f, [((3, 4, 1), np.float32), ((4, 5), np.float32)])
    q = batch_major_products(p)
    produced = {id(v): e for e in q.equations for v in e.outputs}
    for eqn in q.equations:
        if eqn.prim.name in ("multiply", "add", "exp"):
            assert eqn.params.get("order") == "C"
            for v in eqn.inputs:          # no operand is a transposed view of a full-size value
                src = produced.get(id(v))
                assert not (src is not None and src.prim.name == "transpose"
                            and np.prod(v.shape) == np.prod(eqn.outputs[0].shape))
    s, l = RNG.normal(size=(3, 4, 1)).astype(np.float32), RNG.normal(size=(4, 5)).astype(np.float32)
    s[0, 1, 0], l[2, 3] = -0.0, np.inf
    _same_bits(p, q, s, l)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_compact_constants_keeps_every_bit(data):
    """Random constants repeated along random axes, with -0, NaN and inf among their
    values, added to or multiplying an input: compacted (or not), the same bits."""
    middle = tuple(data.draw(st.lists(st.integers(1, 6), min_size=0, max_size=2)))
    last = data.draw(st.sampled_from([1, 7, 64, 130]))
    lead = -(-4096 // (int(np.prod(middle)) * last)) + data.draw(st.integers(0, 3))
    shape = (lead,) + middle + (last,)         # at least _COMPACT_MIN elements
    ndim = len(shape)
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    repeated = data.draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim))
    base_shape = tuple(1 if r else n for r, n in zip(repeated, shape))
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    base = rng.normal(size=base_shape).astype(dtype)
    specials = np.array([-0.0, 0.0, np.nan, np.inf, -np.inf], dtype)
    mask = rng.random(base_shape) < 0.2
    base[mask] = rng.choice(specials, size=int(mask.sum()))
    value = np.broadcast_to(base, shape).copy()
    if data.draw(st.booleans()) and value.size > 1:     # one bit apart: no longer repeated
        flat = value.reshape(-1)
        k = int(rng.integers(flat.size))
        flat[k] = -flat[k] if flat[k] != 0 else (-0.0 if not np.signbit(flat[k]) else 0.0)
    op = data.draw(st.sampled_from([pj.add, pj.multiply]))
    c = pj.constant(value)
    p = make_program(lambda x: op(pj.sin(x), c), [(shape, dtype)])
    q = compact_constants(p)
    x = rng.normal(size=shape).astype(dtype)
    x.reshape(-1)[: min(3, x.size)] = [-0.0, np.nan, np.inf][: min(3, x.size)]
    _same_bits(p, q, x)
    # the stored constant broadcast back is the value; it repeats along no axis it keeps
    # that has at least _COMPACT_INNER elements after it
    stored = q.const_values[0].numpy()
    assert _bits(np.broadcast_to(stored, shape)) == _bits(value) and stored.flags.c_contiguous
    for axis, n in enumerate(stored.shape):
        if n > 1 and np.prod(shape[axis + 1:]) >= 64:
            bits = stored.view(np.uint8).reshape(stored.shape + (-1,))
            assert not (bits == np.take(bits, [0], axis=axis)).all()
