"""Repeated eager jacobians run cached compiled code, with results identical to the uncached path."""
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import extend
from pforjac.compiled import loopcache
from pforjac.testing import isolated_registries

# the loop cache's own behaviour (compiled at the second sight, warnings replayed): not
# conftest's verification, which compiles at the first
pytestmark = pytest.mark.unverified

RNG = np.random.default_rng(11)
W1 = pj.constant(RNG.normal(size=(6, 8)))
W2 = pj.constant(RNG.normal(size=(8, 3)))

BODIES = {
    "mlp": lambda x: pj.tanh(pj.sigmoid(x @ W1) @ W2),
    "elementwise": lambda x: pj.sin(x) * pj.exp(x) + x ** 2,
    "softmax": lambda x: pj.softmax(x @ W1, axis=-1),
    "reducer": lambda x: pj.exp(x).sum(axis=1),
    "hessian_like": lambda x: pj.sum(pj.softplus(x @ W1)),
}


def _jac(f, x, kind):
    with pj.GradientTape() as g:
        g.watch(x)
        y = f(x)
    if kind == "batch_jacobian" and (y.ndim < 2):
        return None
    return getattr(g, kind)(y, x).numpy()


@pytest.mark.parametrize("name", sorted(BODIES))
@pytest.mark.parametrize("kind", ["jacobian", "batch_jacobian"])
def test_cached_results_equal_uncached(name, kind):
    loopcache.clear_cache()
    f = BODIES[name]
    for trial in range(3):   # first sighting, build, cached run
        x = pj.constant(RNG.normal(size=(4, 6)))
        if trial == 2:
            x = pj.constant(np.where(RNG.random((4, 6)) < 0.2, np.nan, x.numpy()))
        with loopcache.caching(False):
            want = _jac(f, x, kind)
        got = _jac(f, x, kind)
        if want is None:
            return
        np.testing.assert_array_equal(got, want)
    assert loopcache.cache_info()["compiled"] >= 1


def test_cache_is_not_used_while_a_tape_records():
    loopcache.clear_cache()
    x = pj.constant(np.array([[4.0, 2.0], [1.0, 3.0]], np.float32))
    for _ in range(3):
        with pj.GradientTape() as outer:
            outer.watch(x)
            with pj.GradientTape() as inner:
                inner.watch(x)
                y = x * x * x
            first = inner.jacobian(y, x)
        second = outer.jacobian(first, x)
    assert second.numpy()[0, 0, 0, 0, 0, 0] == 24 and second.numpy()[1, 1, 1, 1, 1, 1] == 18


def test_bodies_that_fall_back_are_not_cached():
    from pforjac import extend
    from pforjac.testing import isolated_registries
    loopcache.clear_cache()
    with isolated_registries():
        double = extend.defop("cache_test_double", lambda x: x * 2.0, extend.same_shape,
                              vjp=lambda g, ans, x: double(g))
        x = pj.constant(RNG.normal(size=(3,)))
        for _ in range(3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with pj.fallback_report() as report:
                    with pj.GradientTape() as g:
                        g.watch(x)
                        y = double(double(x))
                    np.testing.assert_array_equal(g.jacobian(y, x).numpy(), 4 * np.eye(3))
            assert "cache_test_double" in report.ops()
    assert loopcache.cache_info()["compiled"] == 0


def test_rules_that_read_concrete_values_are_not_cached():
    # Building the cache traces the backward pass on symbolic values; a user's vjp rule that
    # branches on a concrete value can't be traced there, and the second call used to raise.
    from pforjac import extend
    from pforjac.testing import isolated_registries
    loopcache.clear_cache()
    with isolated_registries():
        def vjp(g, ans, x):
            return g * 0.0 if float(pj.max(x)) > 100 else g * pj.cos(x)
        op = extend.defop("cache_test_concrete_sin", np.sin, extend.same_shape, vjp=vjp)
        x = pj.constant(RNG.normal(size=(2, 3)))
        for _ in range(3):
            with pj.GradientTape() as g:
                g.watch(x)
                y = op(x)
            jac = g.jacobian(y, x).numpy().reshape(6, 6)
            np.testing.assert_allclose(jac, np.diag(np.cos(x.numpy()).ravel()), rtol=1e-12)
    assert loopcache.cache_info()["compiled"] == 0


# -- random programs: the cached compiled path equals the uncached one, bit for bit -------
from hypothesis import assume, given, settings  # noqa: E402

from random_programs import finite_program_value, random_programs  # noqa: E402


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")   # log(0) on the way
@settings(max_examples=150, deadline=None)
@given(random_programs())
def test_random_programs_cached_equal_uncached(program):
    f = program.function()
    x_np = program.x()
    assume(finite_program_value(program, x_np))
    loopcache.clear_cache()
    x = pj.constant(x_np)
    with loopcache.caching(False):
        want = _jac(f, x, "jacobian")
    for _ in range(3):        # first sighting, then build, then a cached run
        np.testing.assert_array_equal(_jac(f, x, "jacobian"), want)
    with loopcache.caching(False):
        empty = f(x).size == 0
    if not empty:             # an empty loop runs no body, so nothing is compiled
        assert loopcache.cache_info()["compiled"] == 1


def test_cached_batch_jacobian_still_refuses_mixing_rows_under_strict():
    loopcache.clear_cache()
    a = pj.constant(RNG.normal(size=(4, 4)))
    for _ in range(3):
        x = pj.constant(RNG.normal(size=(4, 3)))
        with pj.GradientTape() as g:
            g.watch(x)
            y = a @ x
        with pytest.raises(ValueError, match="mixes rows"):
            g.batch_jacobian(y, x, strict=True)


def test_repeated_jacobians_of_new_tapes_run_compiled_code():
    loopcache.clear_cache()
    for _ in range(4):
        x = pj.constant(RNG.normal(size=(4, 6)))
        with pj.GradientTape() as g:
            g.watch(x)
            y = BODIES["mlp"](x)
        got = g.batch_jacobian(y, x).numpy()
        with loopcache.caching(False):
            with pj.GradientTape() as g2:
                g2.watch(x)
                y2 = BODIES["mlp"](x)
            want = g2.batch_jacobian(y2, x).numpy()
        np.testing.assert_array_equal(got, want)
    assert loopcache.cache_info()["compiled"] == 1


# -- what the cache holds -------------------------------------------------------------------
def _mlp_batch_jacobian(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = BODIES["mlp"](x)
    return g.batch_jacobian(y, x).numpy()


def _reversed_linear_jacobian(x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = (x @ W60)[:, ::-1]
    return g.jacobian(y, x).numpy()


W60 = pj.constant(RNG.normal(size=(10, 60)))


def test_an_entry_holding_large_arrays_is_not_kept(monkeypatch):
    # A reversed slice has no structure-aware rule, so the backward pass is traced with its
    # one-hot seed made densely (a (120, 2, 60) float64 array, 115,200 bytes), which the
    # compiled code holds: an entry holding more than the limit is not cached (such seeds
    # kept 1 GiB after the caller was done).
    x = pj.constant(RNG.normal(size=(2, 10)))
    with loopcache.caching(False):
        want = _reversed_linear_jacobian(x)
    for limit, compiled in ((1 << 20, 1), (100_000, 0)):
        monkeypatch.setattr(loopcache, "_MAX_ENTRY_CONST_BYTES", limit)
        loopcache.clear_cache()
        for _ in range(3):
            np.testing.assert_array_equal(_reversed_linear_jacobian(x), want)
        info = loopcache.cache_info()
        assert info["compiled"] == compiled and (info["const_bytes"] > 100_000) == bool(compiled)


def test_entries_are_dropped_oldest_first_beyond_the_byte_limit(monkeypatch):
    loopcache.clear_cache()
    for n in (4, 5):                          # two structures, compiled on their second call
        for _ in range(2):
            _mlp_batch_jacobian(pj.constant(RNG.normal(size=(n, 6))))
    info = loopcache.cache_info()
    assert info["compiled"] == 2 and info["const_bytes"] > 0
    monkeypatch.setattr(loopcache, "_MAX_CONST_BYTES", info["const_bytes"] // 2 + 1)
    for _ in range(2):
        _mlp_batch_jacobian(pj.constant(RNG.normal(size=(6, 6))))
    assert loopcache.cache_info()["compiled"] == 1      # only the newest fits


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")   # inf * 0
def test_the_dense_twin_is_made_only_when_a_guard_fails():
    loopcache.clear_cache()
    w = pj.Variable(RNG.normal(size=(6, 3)))
    f = lambda x: pj.tanh(x @ w)  # noqa: E731
    x = pj.constant(RNG.normal(size=(4, 6)))
    for _ in range(3):
        _jac(f, x, "jacobian")
    (entry,) = [e for e in loopcache._cache.values() if not isinstance(e, loopcache._Uncacheable)]
    assert entry.dense is None
    w.assign(np.full((6, 3), np.inf))                   # a structure guard fails now
    got = _jac(f, x, "jacobian")
    with loopcache.caching(False):
        np.testing.assert_array_equal(got, _jac(f, x, "jacobian"))
    assert entry.dense is not None and not isinstance(entry.dense, loopcache._Uncacheable)


def test_structures_seen_once_leave_room_for_compiled_ones():
    loopcache.clear_cache()
    for n in range(1, 5):
        for _ in range(2):
            _mlp_batch_jacobian(pj.constant(RNG.normal(size=(n, 6))))
    info = loopcache.cache_info()
    assert info["entries"] == info["compiled"] == 4     # no placeholder takes a slot


def test_verifying_compares_every_call_bit_for_bit_and_catches_one_ulp(monkeypatch):
    """conftest runs the suite under `verifying()`: a compiled result one ulp off fails."""
    x = pj.constant(np.array([[0.5, -1.0, 2.0]]))

    def jac():
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.tanh(x) * x
        return g.jacobian(y, x)
    loopcache.clear_cache()
    before = loopcache.verify_info()["compared"]
    with loopcache.verifying():
        want = jac().numpy()                    # compiled at the first call, compared
        assert loopcache.verify_info()["compared"] == before + 1
        run = loopcache._run

        def one_ulp_off(*args):
            (out,) = run(*args)
            return [pj.constant(np.nextafter(out.numpy(), np.inf))]
        monkeypatch.setattr(loopcache, "_run", one_ulp_off)
        with pytest.raises(AssertionError, match=r"jacobian: compiled result 0 differs .* 9 of 9"):
            jac()
    monkeypatch.undo()
    np.testing.assert_array_equal(jac().numpy(), want)


def test_repeated_eager_batch_jacobians_keep_the_first_calls_bits():
    """The cached code leaves a product's rows in eager order (batch_major_products, which
    pforjac.function uses, would round an MLP's float32 rows differently)."""
    from pforjac.compiled.loopcache import same_bits
    rng = np.random.default_rng(5)
    w1, w2, w3 = [pj.constant(rng.standard_normal(s).astype(np.float32))
                  for s in [(10, 33), (33, 33), (33, 6)]]
    x = pj.constant(rng.standard_normal((3, 10)).astype(np.float32))

    def per_example():
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.tanh(pj.tanh(x @ w1) @ w2) @ w3
        return g.batch_jacobian(y, x).numpy()
    loopcache.clear_cache()
    first = per_example()
    for _ in range(3):
        assert same_bits(per_example(), first)
    assert loopcache.cache_info()["compiled"] >= 1


# -- what the loop cache may compile, and its verification -------------------------------
def _diagonal_of_scaled_identity(op, x):
    with pj.GradientTape() as g:
        g.watch(x)
        y = op(x)
    return np.diag(g.jacobian(y, x).numpy())


@pytest.mark.unverified                 # the loop cache's own path: compiled at the second call
def test_the_loop_cache_does_not_freeze_state_a_contributor_vjp_reads():
    scale = {"k": 1.0}
    loopcache.clear_cache()
    with isolated_registries():
        op = extend.defop("reliab_scaled", lambda x: x * 1.0, extend.same_shape,
                          vjp=lambda g, ans, x: g * scale["k"])
        extend.register_converter(op)(extend.elementwise_converter(op))
        for k in (1.0, 2.0, 3.0, 4.0):
            scale["k"] = k
            assert _diagonal_of_scaled_identity(op, pj.constant(np.ones(3))).tolist() == [k] * 3
        pure = extend.defop("reliab_pure", lambda x: x * 2.0, extend.same_shape,
                            vjp=lambda g, ans, x: g * 2.0, pure_rules=True)
        extend.register_converter(pure)(extend.elementwise_converter(pure))
        with loopcache.verifying():
            _diagonal_of_scaled_identity(op, pj.constant(np.ones(3)))
            _diagonal_of_scaled_identity(pure, pj.constant(np.ones(3)))
        declined = " ".join(loopcache.verify_info()["not_compiled"])
        assert "reliab_scaled" in declined and "reliab_pure" not in declined


def test_a_codegen_failure_is_an_error_under_verifying(monkeypatch):
    from pforjac.compiled import codegen

    def broken(program, name="program"):
        module = real(program, name)
        module.body[0].args.args.append(codegen.ast.arg(arg="consts"))   # a repeated argument
        return module
    real = codegen.program_to_ast
    monkeypatch.setattr(codegen, "program_to_ast", broken)
    loopcache.clear_cache()
    x = pj.constant(np.ones((2, 3)))
    with loopcache.verifying(), pytest.raises(Exception, match="generated code"):
        with pj.GradientTape() as g:
            g.watch(x)
            y = pj.tanh(x) * 3.0
        g.jacobian(y, x)
