"""The numba lowering table, checked from the primitive registry: which primitives lower
(against a recorded list, so that a change is noticed and reviewed), and every lowered
one, on the examples its generated checks use (tests/test_rules.py), computes what the
numpy backend computes, to a few ulps. Examples are compiled 16 to a program; an example
a rule declines (a case it does not cover) is named.

numba compiles about four examples a second, so the default run compiles the first example
each rule accepts, for every third of the primitives the numpy-ufunc rule lowers and every
other primitive (95 of 137), and checks that every other example lowers;
`PFORJAC_TEST_NUMBA_LOWERING=all` compiles and runs all 253."""
import os

import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.compiled.codegen import compile_program
from pforjac.compiled.numba_codegen import numba_source
from pforjac.compiled.numba_lowering import NotLowered, rule_for
from pforjac.program import make_program
from pforjac.testing import examples_of

numba = pytest.importorskip("numba")

LOWERED = sorted("""
abs add all_finite arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort
broadcast_to cast cbrt ceil check_index cholesky concat conj convolve copy copysign cos cosh
cumprod cumsum deg2rad det digamma divide eigh eigvalsh einsum entr equal erf erfc erfcinv
erfinv exp exp2 expm1 floor floor_divide fmax fmin fmod gamma gammaln gammasgn gather getitem
greater greater_equal heaviside hypot imag index_update isfinite isinf isnan kl_div less
less_equal log log10 log1p log2 log_ndtr logaddexp2 logical_and logical_not logical_or logit
matmul max maximum min minimum multiply multiply_no_nan multiply_zero_safe ndtr ndtri neg
not_equal one_hot ones_like pad pinv polygamma power prod put_along_axis_add qr rad2deg
reciprocal rel_entr relu remainder reshape rgamma round scatter_add searchsorted setitem_zeros
sigmoid sign signbit sin sinc sinh slogdet softplus solve sort split sqrt square stop_gradient
subtract sum svd svdvals take_along_axis tan tanh tile transpose triangular_solve trunc where
xlog1py xlogy zeros_like
""".split())

# without a rule: a program holding one runs on numpy, with a warning naming it
NOT_LOWERED = sorted("""
argpartition beta betainc betaln cofactor custom_jvp_call custom_vjp_call eigh_lift
gammainc gammaincc i0 i0e i1 i1e iv ive j0 j1 jv sym_funm tie_divide y0 y1 yn yv
""".split())

PRIMITIVES = sorted(core.primitives.values(), key=lambda p: p.name)


def test_the_primitives_that_lower_are_the_recorded_ones():
    lowered = sorted(p.name for p in PRIMITIVES if p.origin == "built-in" and rule_for(p) is not None)
    assert lowered == LOWERED, (
        f"newly lowered: {sorted(set(lowered) - set(LOWERED))}; "
        f"no longer lowered: {sorted(set(LOWERED) - set(lowered))} (update LOWERED)")


def test_the_primitives_that_do_not_lower_are_named():
    missing = sorted(p.name for p in PRIMITIVES if p.origin == "built-in" and rule_for(p) is None)
    assert missing == NOT_LOWERED, (
        f"without a numba rule: {missing} (update NOT_LOWERED)")


def _single_program(prim, ex):
    avals = [(np.shape(a), np.asarray(a).dtype) for a in ex.args]
    return make_program(lambda *xs: core.bind(prim, *xs, **ex.params), avals)


def _lowered_examples():
    """[(prim, example)]: for every lowered primitive, the examples its rule accepts (an
    elementwise one: the first, its other examples differ only in broadcasting, which is
    numba's), and the names of the declined ones."""
    accepted, declined = [], []
    for prim in PRIMITIVES:
        if prim.name not in LOWERED:
            continue
        for k, ex in enumerate(examples_of(prim)):
            try:
                numba_source(_single_program(prim, ex))
            except NotLowered:
                declined.append(f"{prim.name}{ex!r}")
                continue
            accepted.append((prim, ex))
            if prim.elementwise:
                break
    return accepted, declined


def _chunks(items: list, size: int) -> list:
    return [items[k:k + size] for k in range(0, len(items), size)]


_ACCEPTED, _DECLINED = _lowered_examples()
_ALL = os.environ.get("PFORJAC_TEST_NUMBA_LOWERING") == "all"


def _default_run() -> list:
    """The first accepted example of each primitive; of the 63 primitives that share the
    numpy-ufunc rule (one rule, and numba's own ufunc implementations), every third."""
    firsts = [(p, ex) for k, (p, ex) in enumerate(_ACCEPTED)
              if k == 0 or _ACCEPTED[k - 1][0] is not p]
    ufunc_rule = rule_for(core.primitives["add"])
    shared = [p for p, _ in firsts if rule_for(p) is ufunc_rule]
    return [(p, ex) for p, ex in firsts if rule_for(p) is not ufunc_rule
            or shared.index(p) % 3 == 0]


_RUN = _ACCEPTED if _ALL else _default_run()


def test_every_lowered_primitive_lowers_some_of_its_examples():
    assert {p.name for p, _ in _ACCEPTED} == set(LOWERED), f"lowers no example: {_DECLINED}"


@pytest.mark.parametrize("chunk", _chunks(_RUN, 16),
                         ids=lambda c: f"{c[0][0].name}..{c[-1][0].name}")
def test_every_lowered_primitive_agrees_with_numpy_on_its_examples(chunk):
    """(In programs of 16 equations: numba's compile time grows faster than a program.)"""
    from pforjac.compiled.numba_backend import native_code
    inputs = [np.asarray(a) for _, ex in chunk for a in ex.args]
    avals = [(x.shape, x.dtype) for x in inputs]

    def everything(*xs):
        outs, xs = [], list(xs)
        for prim, ex in chunk:
            args, xs = xs[:len(ex.args)], xs[len(ex.args):]
            out = core.bind(prim, *args, **ex.params)
            outs.extend(out if prim.multiple_results else [out])
        return outs

    program = make_program(everything, avals)
    consts = [c.numpy() for c in program.const_values]
    want = compile_program(program)(*inputs, consts)
    got = native_code(program, "everything")(*inputs, consts)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        what = f"output {k} ({program.outputs[k].name})"
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w), what
        if np.asarray(w).dtype.kind in "fc":
            eps = np.finfo(np.asarray(w).dtype).eps
            np.testing.assert_allclose(g, w, rtol=16 * eps, atol=16 * eps, err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


def test_all_finite_of_a_whole_array_calls_the_kernel_and_of_a_part_loops():
    """The structure guard `all_finite` over an array's values in any order (the array,
    its transpose) is the cached kernel `K.all_finite`; over part of one (a slice) it
    stays a loop nest, which sees only that part: a NaN outside the slice is not its."""
    pytest.importorskip("numba")
    from pforjac.compiled import numba_backend
    from pforjac.ops.reductions import all_finite_p

    def guards(x):
        return (all_finite_p.bind(x.T, axes=(0, 1), nonzero=False),
                all_finite_p.bind(x, axes=(0, 1), nonzero=True),
                all_finite_p.bind(x[1:], axes=(0, 1), nonzero=False))
    f, g = pj.function(guards, backend="numba"), pj.function(guards, backend="numpy")
    x = np.arange(1.0, 13.0).reshape(3, 4)
    source = numba_source(f.program(x), "p", numba_backend._baked_consts(f.program(x)))
    assert source.count("K.all_finite(") == 2 and "np.isfinite(" in source
    for changed, want in ((None, (True, True, True)), ((0, 0, np.nan), (False, False, True)),
                          ((2, 1, 0.0), (True, False, True)), ((1, 3, -np.inf), (False, False, False))):
        y = x.copy()
        if changed is not None:
            y[changed[0], changed[1]] = changed[2]
        got = tuple(bool(v) for v in f(y))
        assert got == want == tuple(bool(v) for v in g(y)), changed
