"""Structure-aware pfor: one-hot values carried compactly give the same results as dense,
and batch_jacobian proves (or refutes) its row-independence assumption."""
import importlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pforjac as pj
from pforjac.program import make_program
from pforjac.pfor import vectorize
from pforjac import extend
from pforjac.structure import OneHot, structure_tracking
from pforjac.testing import isolated_registries

from helpers import no_fallback

RNG = np.random.default_rng(7)


def _both(f):
    with structure_tracking(True):
        a = f()
    with structure_tracking(False):
        b = f()
    return a, b


def _jac(f, x, kind="jacobian"):
    def run():
        with pj.GradientTape() as g:
            g.watch(x)
            y = f(x)
        return getattr(g, kind)(y, x).numpy()
    return run


def _layer_norm(x):
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / pj.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)


BODIES = {
    "elementwise": lambda x: pj.sin(x) * pj.exp(x) + x ** 2,
    "mlp": lambda x: pj.tanh(pj.sigmoid(x @ W1) @ W2),
    "seed_network": lambda x: pj.sigmoid(pj.sigmoid(x @ W1) @ W2) @ W3,
    "reduce_rows": lambda x: pj.exp(x).sum(axis=1),
    "reduce_all": lambda x: (x * x).sum(),
    "softmax": lambda x: pj.softmax(x, axis=-1),
    "layernorm": lambda x: _layer_norm(x),
    "transpose_slice": lambda x: pj.transpose(x)[::-1, 1:] * 3.0,
    "reshape": lambda x: pj.reshape(pj.relu(x), (-1,))[2:] / 2.0,
    "matmul_left": lambda x: W0 @ x,
    "matvec": lambda x: pj.tanh(W0 @ x[:, 0]) @ W0,
    "vecmat": lambda x: pj.matmul(pj.sin(x[0]), W1) @ W2,
    "logsumexp": lambda x: pj.logsumexp(x, axis=1),
}
W0 = pj.constant(RNG.normal(size=(3, 5)))
W1 = pj.constant(RNG.normal(size=(4, 6)))
W2 = pj.constant(RNG.normal(size=(6, 2)))
W3 = pj.constant(RNG.normal(size=(2, 1)))


def _batched(f) -> bool:
    """The body keeps the batch axis first, so batch_jacobian applies to it."""
    (y,) = pj.make_program(f, [((5, 4), np.float64)]).outputs
    return y.ndim >= 2 and y.shape[0] == 5


@pytest.mark.parametrize("kind, name", [("jacobian", n) for n in sorted(BODIES)]
                         + [("batch_jacobian", n) for n in sorted(BODIES) if _batched(BODIES[n])])
def test_structure_on_and_off_agree(name, kind):
    x = pj.constant(RNG.normal(size=(5, 4)))
    f = BODIES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = _both(_jac(f, x, kind))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_nan_and_inf_propagate_as_in_the_dense_path():
    x = pj.constant(np.array([[1.0, np.inf], [np.nan, 2.0]]))
    with np.errstate(invalid="ignore"):      # inf * 0 in the dense path, as intended
        a, b = _both(_jac(lambda v: pj.exp(v) * v, x))
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.nan_to_num(a), np.nan_to_num(b))


@no_fallback
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


def test_the_seed_stays_compact_through_the_seed_networks_backward_pass():
    x = pj.constant(RNG.normal(size=(5, 4)))
    with pj.GradientTape() as g:
        g.watch(x)
        y = BODIES["seed_network"](x)
    from pforjac.jacobians import _gradients
    program = make_program(lambda i: _gradients(
        g._entries, y, pj.reshape(pj.one_hot(i, y.size, y.dtype), y.shape), [x]), [((), np.int32)])
    P = importlib.import_module("pforjac.pfor")
    seen = []
    original = P._convert_structured

    def spy(eqn, vals, ctx):
        out, flag = original(eqn, vals, ctx)
        seen.append((eqn.prim.name, out is not None and isinstance(out[0], OneHot)))
        return out, flag
    P._convert_structured = spy
    try:
        vectorize(program, pj.constant(np.arange(y.size, dtype=np.int32)))
    finally:
        P._convert_structured = original
    assert seen and all(kept for _, kept in seen), seen


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(sorted(BODIES)),
       st.integers(1, 7), st.booleans())
def test_structure_never_changes_results_random(b, f, name, chunk, chunked):
    rows = 5 if name in ("matmul_left", "matvec") else b
    cols = 4 if name in ("mlp", "seed_network", "vecmat") else f
    x = pj.constant(RNG.normal(size=(rows, cols)))
    fn = BODIES[name]

    def run():
        with pj.GradientTape() as g:
            g.watch(x)
            y = fn(x)
        return g.jacobian(y, x, parallel_iterations=chunk if chunked else None).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, c = _both(run)
    np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)


# -- batch_jacobian row-mixing detector -------------------------------------------------
def _batch_norm(x):
    mu = x.mean(axis=0, keepdims=True)
    return (x - mu) / pj.sqrt(((x - mu) ** 2).mean(axis=0, keepdims=True) + 1e-5)


def _attention(x):
    q = pj.reshape(x, (6, 2, 2))
    return pj.reshape(pj.softmax(q @ pj.swapaxes(q, -1, -2), axis=-1) @ q, (6, 4))


def _gram_vectors(x):
    """eigh's vectors of the rows' Gram matrix: every entry mixes all rows."""
    return pj.eigh(x @ pj.swapaxes(x, 0, 1) + np.diag(np.arange(6.0) + 6.0))[1]


A = pj.constant(RNG.normal(size=(6, 6)))
W = pj.constant(RNG.normal(size=(4, 3)))
INDEPENDENT = {"mlp": lambda x: pj.tanh(x @ W), "softmax": lambda x: pj.softmax(x @ W, axis=-1),
               "layer_norm": _layer_norm, "attention": _attention,
               # gathers of features, with a 2-d index and with a scalar one (whose gradient
               # scatters the batch axis to a new position, mixing nothing)
               "gather_2d_index": lambda x: pj.gather(x, np.array([[3, 0], [1, 1]]), axis=1),
               "gather_scalar_index": lambda x: pj.gather(pj.stack([x, 2.0 * x]), np.array(1), axis=0),
               "einsum_weights": lambda x: pj.einsum("bi,ij->bj", x, W),
               "einsum_per_example": lambda x: pj.einsum("bi,bi->b", x, x)[:, None] * x,
               # every row kept, spelled with bounds (pad's gradient slices like this)
               "pad_features": lambda x: pj.pad(x, [(0, 0), (1, 1)]),
               "rows_sliced_whole": lambda x: x[0:6, 1:] * 2.0 + x[0:, :3],
               # signs taken from values of all rows: copysign's derivative in its sign
               # operand is a zeros_like, which carries no row through the mixing ops
               "copysign_by_all_rows": lambda x: pj.copysign(x, pj.sum(x, axis=0) @ A[:4, :4]),
               "copysign_by_gram_eigh": lambda x: pj.copysign(x, _gram_vectors(x)[:, :4]),
               # pfor's x[i] is a gather of 0..n-1 (its gradient a scatter back)
               "vectorized_map": lambda x: pj.vectorized_map(lambda r: r * r, x),
               "pfor_rows": lambda x: pj.pfor(lambda i: pj.sin(x[i]) * x[i], 6)}
MIXING = {"batch_norm": (_batch_norm, "divide"), "batch_matmul": (lambda x: A @ x, "matmul"),
          # batch rows permuted by a gather with a 2-d index (its gradient scatters along them)
          "einsum_over_the_batch": (lambda x: pj.einsum("bi,cj->bi", x, x), "einsum"),
          "gather_rows_2d_index": (lambda x: pj.transpose(
              pj.gather(pj.transpose(x), np.array([[5, 0, 1, 2, 3, 4]]), axis=1), (2, 0, 1)), "gather")}


def _batch_jac(f, x=None, **kw):
    x = pj.constant(RNG.normal(size=(6, 4))) if x is None else x
    with pj.GradientTape() as g:
        g.watch(x)
        y = f(x)
    return g.batch_jacobian(y, x, **kw)


@pytest.mark.parametrize("name", sorted(INDEPENDENT))
def test_independent_rows_are_not_flagged(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _batch_jac(INDEPENDENT[name], strict=True)


@pytest.mark.parametrize("name", sorted(MIXING))
def test_row_mixing_is_flagged_naming_the_op(name):
    f, op = MIXING[name]
    with pytest.raises(ValueError, match=f"forward op '{op}' mixes rows"):
        _batch_jac(f, strict=True)
    importlib.import_module("pforjac.pfor")._warned.clear()
    with pytest.warns(RuntimeWarning, match="batch_jacobian assumes row b"):
        _batch_jac(f)


MOVING = {"reversed": (lambda x: x[::-1] * 1.0, "getitem"),
          "rolled_by_concat": (lambda x: pj.concat([x[1:], x[:1]], axis=0), "getitem"),
          "reversed_times_rows": (lambda x: x[::-1] * x, "getitem"),
          "shifted_by_pad": (lambda x: pj.pad(x, [(1, 0), (0, 0)])[:6], "pad"),
          "rolled_by_gather": (lambda x: pj.gather(x, np.array([1, 2, 3, 4, 5, 0]), axis=0), "gather"),
          "one_row_everywhere": (lambda x: x * x[2], "multiply")}


@pytest.mark.parametrize("name", sorted(MOVING))
def test_rows_moved_to_other_rows_are_flagged(name):
    """Rows reversed, rolled, shifted or broadcast: entry b of the target comes from
    another row of the source, so its per-example block is not the Jacobian's."""
    f, op = MOVING[name]
    with pytest.raises(ValueError, match=f"forward op '{op}' mixes rows"):
        _batch_jac(f, strict=True)
    with pytest.warns(RuntimeWarning, match="batch_jacobian assumes row b"):
        got = _batch_jac(f).numpy()
    x = pj.constant(RNG.normal(size=(6, 4)))     # and indeed: not the diagonal blocks
    with pj.GradientTape() as g:
        g.watch(x)
        y = f(x)
    full = g.jacobian(y, x).numpy()
    assert not np.allclose(got, np.stack([full[b, :, b, :] for b in range(6)]))


def test_rows_permuted_and_put_back_are_not_flagged():
    perm = np.array([3, 0, 5, 1, 4, 2])
    back = np.argsort(perm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _batch_jac(lambda x: pj.gather(pj.sin(pj.gather(x, perm, axis=0)), back, axis=0) * x,
                   strict=True)
        _batch_jac(lambda x: pj.concat([x[3:], x[:3]], axis=0)[np.r_[3:6, 0:3]] * x, strict=True)


def test_rows_built_one_by_one_are_not_flagged():
    x = pj.constant(RNG.normal(size=(3, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pj.GradientTape() as outer:
            outer.watch(x)
            with pj.GradientTape() as inner:
                inner.watch(x)
                y = pj.stack([pj.sin(x[b]) * x[b].sum() for b in range(3)])
            first = inner.batch_jacobian(y, x)
        second = outer.batch_jacobian(first, x)
    assert second.shape == (3, 4, 4, 4)


# -- the check against the full Jacobian, over random programs that move rows ------------
_ROW_STEPS = ["sin", "reverse", "roll", "shift", "permute", "permute_back", "times_row",
              "batch_sum", "batch_matmul", "transpose_twice", "features", "pick_and_stack",
              "row_broadcast"]


def _row_program(steps, perm):
    def f(x):
        v = x
        for step in steps:
            if step == "sin":
                v = pj.sin(v) * x
            elif step == "reverse":
                v = v[::-1]
            elif step == "roll":
                v = pj.concat([v[2:], v[:2]], axis=0)
            elif step == "shift":
                v = pj.pad(v, [(1, 0), (0, 0)])[:6] + 0.5 * v   # (no zero rows: see below)
            elif step == "permute":
                v = pj.gather(v, perm, axis=0)
            elif step == "permute_back":
                v = pj.gather(pj.gather(v, perm, axis=0), np.argsort(perm), axis=0)
            elif step == "times_row":
                v = v * (v[1] + 1.5)            # (never a zero row: shifts pad zeros)
            elif step == "batch_sum":
                v = v + 0.2 * pj.sum(v, axis=0)
            elif step == "batch_matmul":
                v = A @ v
            elif step == "transpose_twice":
                v = pj.transpose(pj.sin(pj.transpose(v)))    # (bounded, never flat)
            elif step == "row_broadcast":          # one row stretched over the batch
                v = (v[1:2] * pj.constant(np.linspace(1, 2, 24).reshape(6, 4)))[::-1][::-1]
            elif step == "features":
                v = pj.concat([v[:, 1:], v[:, :1]], axis=1) + pj.tile(v[:, :2], (1, 2))
            else:
                v = pj.stack([pj.tanh(v[b]) for b in range(6)])
        return v
    return f


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(_ROW_STEPS), min_size=1, max_size=4),
       st.permutations(range(6)))
def test_the_row_check_agrees_with_the_full_jacobian(steps, perm):
    """Mixing flagged exactly where some row of the target depends on another row of the
    source (the full Jacobian has a non-zero off-diagonal block); where the check proves
    independence the per-example blocks are the full Jacobian's diagonal ones. (The check
    follows structure, not values: rows combined into a row of zeros that is then cut
    off, or multiplied by such a row, would be flagged; the programs have no zero rows.)"""
    f = _row_program(steps, np.array(perm))
    x = pj.constant(np.random.default_rng(len(steps)).normal(size=(6, 4)))
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = f(x)
    full = g.jacobian(y, x).numpy()
    crossing = any(np.any(full[b, :, c, :] != 0) for b in range(6) for c in range(6) if b != c)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        per_example = g.batch_jacobian(y, x).numpy()
    flagged = any("batch_jacobian assumes row b" in str(w.message) for w in caught)
    try:
        g.batch_jacobian(y, x, strict=True)
        proven = True
    except ValueError:
        proven = False
    assert flagged == crossing or (not flagged and not proven), (steps, crossing, flagged)
    if proven:
        assert not crossing
        np.testing.assert_allclose(per_example, np.stack([full[b, :, b, :] for b in range(6)]),
                                   rtol=1e-12, atol=1e-12)


# -- proofs that were false --------------------------------------------------------------------
def test_scatter_add_with_a_negative_axis_is_checked_and_vectorized_on_that_axis():
    # the axis was kept negative: the check took it for another axis than the batch's and
    # proved a permutation independent, and pfor's gather converter shifted it wrongly
    perm = np.array([2, 0, 1])
    for d in (3, 4):
        x = pj.constant(RNG.normal(size=(3, d)))
        with pj.GradientTape(persistent=True) as g:
            g.watch(x)
            y = pj.scatter_add(x * x, perm, axis=-2, size=3)
        with pytest.raises(ValueError, match="forward op 'scatter_add' mixes rows"):
            g.batch_jacobian(y, x, strict=True)
        np.testing.assert_array_equal(g.jacobian(y, x).numpy(),
                                      g.jacobian(y, x, experimental_use_pfor=False).numpy())


@pytest.mark.parametrize("f", [
    lambda x: pj.concat([pj.tanh(x[b])[None] for b in range(6)], 0),     # rows one by one
    lambda x: pj.concat([pj.transpose(x[0][:, None]), x[1:]], 0) ** 2,   # (crashed)
])
def test_a_batch_axis_on_a_new_unit_axis_is_not_taken_for_another(f):
    """x[b][None]'s gradient drops the unit axis the row sits on: it used to be put on
    the next axis (a false warning) or past the last (an IndexError)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _batch_jac(f).numpy()
    x = pj.constant(RNG.normal(size=(6, 4)))
    with pj.GradientTape() as g:
        g.watch(x)
        y = f(x)
    full = g.jacobian(y, x).numpy()
    np.testing.assert_allclose(_batch_jac(f, x).numpy(),
                               np.stack([full[b, :, b, :] for b in range(6)]))
    assert got.shape == (6, 4, 4)


def test_indices_known_only_when_compiled_code_runs_are_not_read_by_the_check():
    @pj.function
    def per_example(x, idx, strict):
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.gather(x, idx) * x
        return g.batch_jacobian(y, x, strict=strict)
    x = RNG.normal(size=(3, 4))
    with pytest.warns(RuntimeWarning, match="could not check .* 'gather'"):   # never silent
        assert per_example(x, np.array([0, 1, 2]), False).shape == (3, 4, 4)
    with pytest.raises(ValueError, match="could not check"):
        per_example(x, np.array([0, 1, 2]), True)


RNG_DENSE = np.random.default_rng(3)


@pytest.mark.parametrize("index_dtype", [np.int8, np.int32])
def test_densify_writes_rows_at_their_positions(index_dtype):
    """Each iteration's row lands at its index (none past the block); positions past the
    index dtype's range (4*40 + 30 > 127 for int8) are computed in int64."""
    from pforjac.structure import densify
    compact = RNG_DENSE.normal(size=(3, 40, 2)).astype(np.float32)
    idx = np.array([4, 0, 39, 45, 30], index_dtype)       # 45: past the block, a zero row
    oh = OneHot(pj.constant(compact), 1, 2, pj.constant(idx), (0, 46))
    got = densify(oh).numpy()
    want = np.zeros((5, 3, 40, 2), np.float32)
    for k, i in enumerate(idx):
        if i < 40:
            want[k, :, i, :] = compact[:, i, :]
    assert np.array_equal(got, want)


def test_an_elementwise_batch_jacobian_comes_out_row_major():
    """The densified diagonal is laid out so that batch_jacobian's swap of the leading axes
    gives a C-ordered result, eager and compiled: no copy of the (64, 512, 512) Jacobian."""
    x = RNG_DENSE.normal(size=(16, 128)).astype(np.float32)

    def f(x):
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.sin(x) * pj.exp(x) + x ** 2
        return g.batch_jacobian(y, x)
    eager = f(pj.constant(x)).numpy()
    compiled = np.asarray(pj.function(f)(x))
    assert eager.flags.c_contiguous and compiled.flags.c_contiguous
    np.testing.assert_array_equal(eager, compiled)


# -- the row check knows every primitive ----------------------------------------------------
def _row_warnings(f, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pj.GradientTape() as g:
            g.watch(x)
            y = f(x)
        g.batch_jacobian(y, x)
    return [str(w.message) for w in caught if "batch_jacobian" in str(w.message)]


@pytest.mark.parametrize("f", [
    lambda t: pj.cumsum(t, axis=1) - pj.mean(t, axis=0, keepdims=True),   # mixing elsewhere
    lambda t: pj.cumsum(t, axis=0),                                        # along the batch
], ids=["cumsum_then_mean", "cumsum_batch_axis"])
def test_cumsum_does_not_stop_the_row_check(f):
    assert any("mixes rows" in m for m in _row_warnings(f, pj.constant(RNG.normal(size=(3, 2)))))


def test_cumsum_along_features_keeps_rows():
    assert _row_warnings(lambda t: pj.cumsum(t, axis=1) * t, pj.constant(RNG.normal(size=(3, 2)))) == []


def test_an_op_the_row_check_cannot_follow_warns():
    with isolated_registries():
        twice = extend.defop("rows_opaque", lambda g: 2.0 * g, extend.same_shape,
                             vjp=lambda g, ans, x: twice(g))      # not declared elementwise
        op = extend.defop("doubled", lambda x: 2.0 * x, extend.same_shape,
                          vjp=lambda g, ans, x: twice(g))
        messages = _row_warnings(lambda t: op(t) * 2.0, pj.constant(RNG.normal(size=(3, 2))))
    assert any("could not check" in m and "rows_opaque" in m for m in messages), messages


def test_every_builtin_primitive_has_a_row_rule():
    from pforjac import core, rowmix
    missing = sorted(p.name for p in core.primitives.values() if not rowmix.has_rule(p))
    assert not missing, f"primitives batch_jacobian's row check cannot follow: {missing}"


def test_an_empty_batch_through_a_reshape_the_rows_cannot_follow():
    x = pj.constant(np.zeros((0, 3)))
    with pj.GradientTape() as g:
        g.watch(x)
        y = pj.tile(x, (1, 2))
    assert g.batch_jacobian(y, x).shape == (0, 6, 3)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_zero_cotangent_through_row_mixing_ops_is_not_flagged(dtype):
    """copysign(x, eigh(gram of all rows)): the eigh mixes rows, but d/d(sign) is zero, so
    the per-example blocks are the Jacobian's (the fuzzer's seed 103856, float16 eigh)."""
    x = pj.constant(RNG.uniform(-1.5, 1.5, size=(2, 2)).astype(dtype))

    def f(t):
        v = pj.eigh(t @ pj.swapaxes(t, 0, 1) + pj.constant(np.diag([2.0, 2.7]).astype(dtype)))[1]
        return pj.expand_dims(pj.copysign(t, v * v), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pj.GradientTape(persistent=True) as g:
            g.watch(x)
            y = f(x)
        per_example = g.batch_jacobian(y, x, strict=True).numpy()
    full = g.jacobian(y, x).numpy()
    assert per_example.dtype == dtype
    np.testing.assert_array_equal(per_example, np.stack([full[b, :, :, b] for b in range(2)]))
    signs = np.where(np.signbit(x.numpy()) == np.signbit(y.numpy()[..., 0]), 1.0, -1.0)
    np.testing.assert_array_equal(per_example[..., 0, :], np.stack([np.diag(s) for s in signs]))
