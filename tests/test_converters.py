"""Every pfor converter against stacking the per-iteration results of `bind`, past what
test_rules.py checks.

test_rules.py runs `pforjac.testing.check_primitive` on every primitive: its converter over
every mix of stacked inputs, on rolled copies of each declared example, to rtol 1e-5. The
cases here come from the same facts (`examples_of(prim)`; for elementwise primitives, inputs
drawn from `prim.domain`) plus shapes and parameters the examples leave out, and check:

- that every iteration may hold its own values: each draws the example afresh, and the
  converter must agree with stacking the per-iteration results to 1e-12, in shape and dtype;
- that the broadcasting converters (the elementwise family's, matmul's, gather's, einsum's)
  pass unstacked operands on without a stacked copy (a spy on the primitives they apply);
- that `pforjac.pfor` drives every case without falling back;
- the structure-aware converters (structure.py, one-hot values kept compact), against
  densified inputs.
"""
from __future__ import annotations

import itertools
import warnings
import zlib

import numpy as np
import pytest

import pforjac as pj
from pforjac import core, structure
from pforjac.pfor import LoopContext, converter_for, converters
from pforjac.testing import examples_of, sample

N = 3
PRIMITIVES = sorted(core.primitives.values(), key=lambda p: p.name)


# -- the cases: each primitive's declared examples, and a few more ----------------------
class Case:
    """One call of `prim`: `draw(seed)` gives it as a `core.Example` with fresh values and,
    for every seed, the same shapes and params."""

    def __init__(self, prim: core.Primitive, draw, label: str):
        self.prim, self.draw = prim, draw
        self.shown = f"{prim.name}{label}{draw(0)!r}"

    def __repr__(self) -> str:
        return self.shown


def _declared(prim) -> list[Case]:
    try:
        count = len(examples_of(prim))
    except AssertionError:                 # it declares none: test_rules.py says so
        return []
    return [Case(prim, lambda seed, prim=prim, k=k: examples_of(prim, seed)[k], f"#{k}")
            for k in range(count)]


# broadcasts the declared examples of binary elementwise ops leave out: both operands
# gaining axes, and two scalars
_MORE_BROADCASTS = [((4, 1, 3), (2, 1)), ((), ())]


def _more_broadcasts(prim) -> list[Case]:
    if not (prim.elementwise and prim.domain and len(prim.domain) == 2):
        return []

    def draw(seed, shapes):
        rng = np.random.default_rng(seed)
        return core.Example(*(sample(d, s, rng) for d, s in zip(prim.domain, shapes)))
    return [Case(prim, lambda seed, s=shapes: draw(seed, s), f"+{k}")
            for k, shapes in enumerate(_MORE_BROADCASTS)]


def _real(rng, *shape):
    return rng.uniform(-1.5, 1.5, shape)


def _ints(rng, lo, hi, *shape):
    return rng.integers(lo, hi, shape).astype(np.int32)


_MORE_KEYS = [(None, slice(1, None), slice(None, 2), slice(None, None, 2)), (slice(None), -2, None),
              (None, None), (slice(None), None, slice(None)), (slice(None), None)]
_REDUCED = [lambda rng, k=k: core.Example(_real(rng, 2, 3, 4), axes=(0, 2), keepdims=k) for k in (False, True)]

# Shapes, dtypes and parameters past the declared examples that the converters' axis and
# index arithmetic must handle (the examples stay few: test_rules differentiates each twice).
_MORE = {
    "sum": _REDUCED + [lambda rng: core.Example(rng.random((2, 3)) < 0.5, axes=(1,), keepdims=False)],
    "max": _REDUCED, "min": _REDUCED, "prod": _REDUCED,
    "cumsum": [lambda rng: core.Example(_ints(rng, -3, 3, 5), axis=0)],
    "cast": [lambda rng: core.Example(_real(rng, 2, 3), dtype=np.dtype(np.float32))],
    "ones_like": [lambda rng: core.Example(_ints(rng, -3, 3, 3))],
    "reshape": [lambda rng: core.Example(_real(rng, 2, 3, 4), shape=(24,))],
    "transpose": [lambda rng: core.Example(_real(rng, 2, 3, 4), perm=(1, 0, 2))],
    "concat": [lambda rng: core.Example(_ints(rng, -3, 3, 2), _ints(rng, -3, 3, 3), axis=0)],
    "split": [lambda rng: core.Example(_real(rng, 6, 4), indices=(1,), axis=1)],
    "tile": [lambda rng: core.Example(_real(rng, 2, 3), reps=(1, 3))],
    "getitem": [lambda rng, k=k: core.Example(_real(rng, 4, 5, 3), key=k) for k in _MORE_KEYS],
    "setitem_zeros": [lambda rng, k=k: core.Example(_real(rng, *np.empty((4, 5, 3))[k].shape), key=k,
                                                    shape=(4, 5, 3)) for k in _MORE_KEYS],
    "gather": [lambda rng: core.Example(_real(rng, 2, 5, 3), _ints(rng, 0, 3, 3, 2), axis=2),
               lambda rng: core.Example(_ints(rng, 0, 9, 5), _ints(rng, -5, 5, 4), axis=0)],
    "scatter_add": [lambda rng: core.Example(_real(rng, 2, 4), _ints(rng, -3, 3), axis=1, size=3)],
    "one_hot": [lambda rng: core.Example(_ints(rng, 0, 3), depth=3, dtype=np.dtype(np.float64))],
    "matmul": [lambda rng, a=a, b=b: core.Example(_real(rng, *a), _real(rng, *b))
               for a, b in [((2, 3), (5, 3, 4)), ((3,), (5, 3, 2)), ((5, 2, 3), (3,)), ((1, 3), (3, 1))]],
    "einsum": [lambda rng: core.Example(_real(rng, 2, 3, 4), _real(rng, 4, 2), subscripts="abc,cd->abd")],
}


def _more(prim) -> list[Case]:
    return [Case(prim, lambda seed, make=make: make(np.random.default_rng(seed)), f"+{k}")
            for k, make in enumerate(_MORE.get(prim.name, []))]


CASES = [case for prim in PRIMITIVES for case in _declared(prim) + _more_broadcasts(prim) + _more(prim)]


# -- the generic checker ------------------------------------------------------------------
def _mixes(example: core.Example):
    """Every stacked/unstacked mix (at least one stacked) the example allows."""
    return [m for m in itertools.product([False, True], repeat=len(example.args))
            if any(m) and all(ok or not s for s, ok in zip(m, example.stackable))]


def _draws(case: Case, seed: int):
    """N per-iteration examples, each drawn afresh, and one for the unstacked inputs."""
    examples = [case.draw(seed + k) for k in range(N + 1)]
    return examples[:N], examples[N]


def _expected(prim, per_iter, unstacked, mix) -> list[np.ndarray]:
    results = []
    for k in range(N):
        args = [pj.constant(p if s else u) for p, u, s in zip(per_iter[k].args, unstacked.args, mix)]
        out = core.bind(prim, *args, **unstacked.params)
        results.append([o.numpy() for o in out] if prim.multiple_results else [out.numpy()])
    return [np.stack([r[j] for r in results]) for j in range(len(results[0]))]


def _stacked_args(per_iter, unstacked, mix) -> list:
    return [pj.constant(np.stack([e.args[j] for e in per_iter]) if s else u)
            for j, (u, s) in enumerate(zip(unstacked.args, mix))]


def _run_converter(prim, per_iter, unstacked, mix):
    out, out_stacked = converter_for(prim)(N, _stacked_args(per_iter, unstacked, mix), list(mix),
                                           **unstacked.params)
    outs = list(out) if prim.multiple_results else [out]
    if not out_stacked:
        outs = [np.broadcast_to(o.numpy(), (N,) + tuple(o.shape)) for o in outs]
    return [np.asarray(o.numpy() if isinstance(o, pj.Tensor) else o) for o in outs]


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_converter_matches_stacked_iterations(case):
    prim = case.prim
    assert converter_for(prim) is not None, f"primitive '{prim.name}' has no pfor converter"
    for mix in _mixes(case.draw(0)):
        per_iter, unstacked = _draws(case, seed=zlib.crc32(f"{case!r}{mix}".encode()))
        want = _expected(prim, per_iter, unstacked, mix)
        got = _run_converter(prim, per_iter, unstacked, mix)
        assert len(got) == len(want), (case, mix)
        for g, w in zip(got, want):
            assert g.shape == w.shape, f"{case} mix={mix}: shape {g.shape} != {w.shape}"
            assert g.dtype == w.dtype, f"{case} mix={mix}: dtype {g.dtype} != {w.dtype}"
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{case} mix={mix}")


# -- no stacked copies of unstacked operands -------------------------------------------
@pytest.fixture
def spy(monkeypatch):
    """Records every primitive applied: (primitive, input arrays, number of output elements)."""
    calls: list[tuple[core.Primitive, tuple, int]] = []
    for prim, impl in list(core.impl_rules.items()):
        def wrapped(*arrays, _impl=impl, _prim=prim, **params):
            out = _impl(*arrays, **params)
            size = sum(np.size(o) for o in out) if isinstance(out, (list, tuple)) else np.size(out)
            calls.append((_prim, arrays, size))
            return out
        monkeypatch.setitem(core.impl_rules, prim, wrapped)
    return calls


def _stays_as_is(prim, k: int) -> bool:
    """Whether unstacked operand k must reach the op itself as it is: numpy broadcasts it for
    an elementwise op, einsum's subscripts take it, and so does gather's table (matmul may
    fold it into one 2-D product)."""
    return prim.elementwise or prim.name == "einsum" or (prim.name == "gather" and k == 0)


# the broadcasting converters besides the elementwise family's (a parametrization)
_NOT_COPYING = ("matmul", "gather", "einsum")
_SPIED = [c for c in CASES if len(c.draw(0).args) > 1 and (c.prim.elementwise or c.prim.name in _NOT_COPYING)]


@pytest.mark.parametrize("case", _SPIED, ids=repr)
def test_unstacked_operands_are_not_copied(case, spy):
    prim = case.prim
    for mix in _mixes(case.draw(0)):
        if all(mix):
            continue
        per_iter, unstacked = _draws(case, seed=0)
        args = _stacked_args(per_iter, unstacked, mix)
        kept = [a.numpy() for a, s in zip(args, mix) if not s]
        spy.clear()
        converter_for(prim)(N, args, list(mix), **unstacked.params)
        # a stacked copy: an op that moves data (not arithmetic) made n times an unstacked
        # operand's elements from it (matmul may double one row or column into a gemm: see
        # ops._kernels.matmul_no_gemv)
        copies = [(p.name, [np.shape(a) for a in arrays]) for p, arrays, size in spy
                  if p is not prim and not p.elementwise
                  and any(np.may_share_memory(a, u) and size >= N * np.size(u) > 0
                          for a in arrays for u in kept)]
        assert not copies, f"{case} mix={mix}: the converter copied an unstacked operand: {copies}"
        main = [[np.shape(a) for a in arrays] for p, arrays, _ in spy if p is prim]
        assert main, f"{case} mix={mix}: the converter never applied '{prim.name}'"
        for k, (u, s) in enumerate(zip(unstacked.args, mix)):
            if not s and _stays_as_is(prim, k):
                assert any(np.shape(u) in shapes for shapes in main), \
                    f"{case} mix={mix}: unstacked operand {np.shape(u)} reached '{prim.name}' " \
                    f"reshaped: {main}"


# -- the driver ------------------------------------------------------------------------
def test_pfor_drives_every_case_without_falling_back():
    """The same cases through `pforjac.pfor`: a body that indexes stacked inputs with i."""
    for case in CASES:
        prim = case.prim
        per_iter, unstacked = _draws(case, seed=1)
        mix = unstacked.stackable
        tables = _stacked_args(per_iter, unstacked, mix)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = pj.pfor(lambda i: core.bind(prim, *[t[i] if s else t for t, s in zip(tables, mix)],
                                              **unstacked.params), N, fallback_to_while_loop=False)
        got = list(got) if prim.multiple_results else [got]
        for g, w in zip(got, _expected(prim, per_iter, unstacked, mix)):
            assert g.shape == w.shape and g.dtype == w.dtype, case
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12, err_msg=repr(case))


# -- coverage ---------------------------------------------------------------------------
def test_every_primitive_has_a_converter():
    missing = sorted(name for name, prim in core.primitives.items() if converter_for(prim) is None)
    assert not missing, f"primitives without a pfor converter: {missing}"


def test_every_converter_has_a_case():
    missing = sorted({p.name for p in converters} - {case.prim.name for case in CASES})
    assert not missing, f"converters of primitives with no examples (see test_rules.py): {missing}"
    unknown = sorted(set(_MORE) - set(core.primitives))
    assert not unknown, f"_MORE holds inputs for ops that are not primitives: {unknown}"


# -- structure-aware converters (structure.py): one-hot values carried compactly -----------
# (lo, hi): the loop indices lo..hi-1; (2, 5) reaches past a block of 4 (rows of zeros)
INDEX_RANGES = [(0, 3), (2, 5)]


def F(*shape):
    return lambda rng: rng.standard_normal(shape)


def D(domain, *shape):
    """Values from one of `core.DOMAINS` (`pforjac.testing.sample`)."""
    return lambda rng: sample(domain, shape, rng)


def I(*shape, lo=-3, hi=3):  # noqa: E743
    return lambda rng: rng.integers(lo, hi, shape).astype(np.int32)


class Ex:
    """A structured converter's call: op name, input specs, params. An input spec is
    ("oh", maker, start, stop) for a one-hot value, ("u", maker) unstacked, ("s", maker)
    stacked dense, or ("index",) for the loop indices; a maker is rng -> array."""

    def __init__(self, op: str, inputs, **params):
        self.op, self.inputs, self.params = op, list(inputs), params

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.params.items() if k in ("axes", "keepdims", "shape", "perm", "key", "dtype")}
        params = "-" + ";".join(f"{k}={v}" for k, v in shown.items()) if shown else ""
        return f"{self.op}[{','.join(map(_describe_input, self.inputs))}]{params}"


def _describe_input(spec) -> str:
    if spec[0] == "index":
        return "i"
    shape = "x".join(map(str, spec[1](np.random.default_rng(0)).shape)) or "()"
    return f"oh{shape}@{spec[2]}:{spec[3]}" if spec[0] == "oh" else spec[0] + shape


def OH(*shape, start, stop, domain="real", maker=None):
    """A one-hot input: compact data of `shape` (from `maker`, or drawn from `domain`), tied
    on axes [start, stop)."""
    return ("oh", maker(*shape) if maker else D(domain, *shape), start, stop)


def _blocks(rank: int):
    return [(a, b) for a in range(rank) for b in range(a + 1, rank + 1)]


def _dense_one_hot(compact: np.ndarray, start: int, stop: int, indices) -> np.ndarray:
    """The definition: iteration k keeps compact where the ravelled block index is k."""
    block = compact.shape[start:stop]
    out = []
    for k in indices:
        mask = (np.arange(int(np.prod(block))) == k).reshape(block)
        mask = mask.reshape((1,) * start + block + (1,) * (compact.ndim - stop))
        out.append(compact * mask)
    return np.stack(out)


def _float_params(prim) -> list[dict]:
    """The distinct params of `prim`'s examples on a float input ({} for most ops)."""
    seen = {}
    for ex in examples_of(prim):
        if np.asarray(ex.args[0]).dtype.kind == "f":
            seen.setdefault(repr(sorted(ex.params.items())), ex.params)
    return list(seen.values()) or [{}]


def _elementwise_one_hot_examples(prim) -> list[Ex]:
    """A one-hot operand, over every block, for each elementwise primitive that has a
    structured converter (a registered one, or zero-preserving's), from its domain."""
    domain = prim.domain or ("positive",) * len(examples_of(prim)[0].args)
    out = []
    for a, b in _blocks(2):
        if len(domain) == 1:
            out += [Ex(prim.name, [OH(3, 4, start=a, stop=b, domain=domain[0])], **params)
                    for params in _float_params(prim)]
            continue
        x, y = domain
        for other in [(), (4,), (3, 1), (1,), (2, 3, 4), (2, 1, 1)]:
            out.append(Ex(prim.name, [OH(3, 4, start=a, stop=b, domain=x), ("u", D(y, *other))]))
            out.append(Ex(prim.name, [("u", D(x, *other)), OH(3, 4, start=a, stop=b, domain=y)]))
        out.append(Ex(prim.name, [OH(3, 4, start=a, stop=b, domain=x), OH(3, 4, start=a, stop=b, domain=y)]))
        out.append(Ex(prim.name, [OH(3, 4, start=a, stop=b, domain=x), ("s", D(y, 3, 4))]))
    return out


_STRUCTURED_KEYS = [ex.params["key"] for ex in examples_of(core.primitives["getitem"])] + _MORE_KEYS


def _structural_one_hot_examples() -> list[Ex]:
    """One-hot operands of the non-elementwise ops with structured converters."""
    out = []
    for a, b in _blocks(3):
        for axes in [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2), (0, 1, 2)]:
            for keepdims in (False, True):
                out.append(Ex("sum", [OH(4, 3, 2, start=a, stop=b)], axes=axes, keepdims=keepdims))
        for shape in [(24,), (4, 6), (12, 2), (2, 2, 3, 2), (1, 4, 3, 2), (4, 3, 2, 1), (4, 1, 3, 2),
                      (2, 12), (8, 3), (4, 3, 1, 2), (6, 4)]:
            out.append(Ex("reshape", [OH(4, 3, 2, start=a, stop=b)], shape=shape))
        for perm in itertools.permutations(range(3)):
            out.append(Ex("transpose", [OH(4, 3, 2, start=a, stop=b)], perm=perm))
        for key in _STRUCTURED_KEYS:
            out.append(Ex("getitem", [OH(4, 5, 3, start=a, stop=b)], key=key))
        out.append(Ex("matmul", [OH(2, 3, 4, start=a, stop=b), ("u", F(4, 2))]))
    for a, b in _blocks(2):
        out.append(Ex("broadcast_to", [OH(3, 1, start=a, stop=b)], shape=(2, 3, 1)))
        out.append(Ex("broadcast_to", [OH(3, 1, start=a, stop=b)], shape=(2, 3, 4)))
        out.append(Ex("matmul", [OH(3, 4, start=a, stop=b), ("u", F(4, 2))]))
        out.append(Ex("matmul", [("u", F(2, 3)), OH(3, 4, start=a, stop=b)]))
        out.append(Ex("matmul", [OH(3, 4, start=a, stop=b), ("s", F(4, 2))]))
    out.append(Ex("broadcast_to", [OH(1, 3, start=1, stop=2)], shape=(4, 3)))
    out += [Ex("matmul", [OH(4, start=0, stop=1), ("u", F(4, 2))]),
            Ex("matmul", [("u", F(2, 4)), OH(4, start=0, stop=1)]),
            Ex("matmul", [OH(4, start=0, stop=1), ("u", F(4))]),
            # tied rows and contracted axis, small blocks: loop indices past the block
            Ex("matmul", [OH(2, 2, start=0, stop=2), ("u", F(2, 3))]),
            Ex("matmul", [OH(2, 1, 2, start=1, stop=3), ("u", F(2, 3))]),
            Ex("matmul", [("u", F(3, 2, 4)), OH(4, 2, start=0, stop=1)]),
            Ex("matmul", [OH(3, 4, start=0, stop=1), ("u", lambda rng: np.array([[1.0], [np.nan], [0], [2]]))]),
            Ex("one_hot", [("index",)], depth=4, dtype=np.dtype(np.float64)),
            Ex("one_hot", [("index",)], depth=1, dtype=np.dtype(np.float64)),
            Ex("one_hot", [("s", I(lo=0, hi=3))], depth=3, dtype=np.dtype(np.float32))]
    return out


# products with a non-finite or zero unstacked operand: the guards that keep the zeros exact
_NON_FINITE = [Ex("multiply", [OH(3, 4, start=0, stop=1), ("u", lambda rng: np.array([1.0, np.inf, 0, 2]))]),
               Ex("divide", [OH(3, 4, start=0, stop=1), ("u", lambda rng: np.array([1.0, 0.0, 3, 2]))]),
               Ex("multiply_no_nan", [("u", lambda rng: np.array([1.0, np.inf, np.nan, 2])),
                                      OH(3, 4, start=0, stop=1)])]

STRUCTURED_EXAMPLES = [ex for prim in PRIMITIVES if prim.elementwise and structure.structured_converter_for(prim)
                       for ex in _elementwise_one_hot_examples(prim)] + _NON_FINITE + _structural_one_hot_examples()


def _structured_inputs(ex: Ex, lo: int, hi: int, seed: int):
    """(converter args, stacked flags, per-iteration dense values or None if unstacked)."""
    rng = np.random.default_rng(seed)
    indices = pj.constant(np.arange(lo, hi, dtype=np.int32))
    args, stacked, per_iter = [], [], []
    for spec in ex.inputs:
        if spec[0] == "oh":
            _, maker, start, stop = spec
            compact = maker(rng)
            args.append(structure.OneHot(pj.constant(compact), start, stop, indices, (lo, hi)))
            per_iter.append(_dense_one_hot(compact, start, stop, range(lo, hi)))
        elif spec[0] == "index":
            args.append(indices)
            per_iter.append(indices.numpy())
        elif spec[0] == "s":
            value = np.stack([spec[1](rng) for _ in range(hi - lo)])
            args.append(pj.constant(value))
            per_iter.append(value)
        else:
            args.append(pj.constant(spec[1](rng)))
            per_iter.append(None)
        stacked.append(spec[0] != "u")
    return args, stacked, per_iter, indices


def test_densify_matches_the_definition():
    rng = np.random.default_rng(0)
    for shape in [(4,), (3, 4), (4, 3, 2), (2, 0, 3)]:
        for a, b in _blocks(len(shape)):
            if not np.prod(shape[a:b]):       # one_hot makes blocks of depth >= 2 only
                continue
            for lo, hi in INDEX_RANGES:
                compact = rng.standard_normal(shape)
                indices = pj.constant(np.arange(lo, hi, dtype=np.int32))
                oh = structure.OneHot(pj.constant(compact), a, b, indices, (lo, hi))
                got = structure.densify(oh).numpy()
                np.testing.assert_array_equal(got, _dense_one_hot(compact, a, b, range(lo, hi)))


@pytest.mark.parametrize("ex", STRUCTURED_EXAMPLES, ids=repr)
def test_structured_converter_matches_stacked_iterations(ex):
    prim = core.primitives[ex.op]
    conv = structure.structured_converter_for(prim)
    for lo, hi in INDEX_RANGES:
        args, stacked, per_iter, indices = _structured_inputs(ex, lo, hi, zlib.crc32(repr(ex).encode()))
        result = conv(prim, LoopContext(indices, (lo, hi)), args, stacked, **ex.params)
        if result is None:                     # declined: the dense converter takes over
            continue
        out, out_stacked = result
        want = []
        for k in range(hi - lo):
            ins = [pj.constant(p[k] if s else a.numpy())
                   for p, a, s in zip(per_iter, args, stacked)]
            want.append(core.bind(prim, *ins, **ex.params).numpy())
        want = np.stack(want)
        got = structure.densify(out)
        got = got.numpy() if out_stacked else np.broadcast_to(got.numpy(), want.shape)
        assert got.shape == want.shape and got.dtype == want.dtype, \
            f"{ex} range={lo, hi}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{ex} range={lo, hi}")


def test_every_structured_converter_has_an_accepted_example():
    accepted = set()
    for ex in STRUCTURED_EXAMPLES:
        args, stacked, _, indices = _structured_inputs(ex, 0, 3, 0)
        conv = structure.structured_converter_for(core.primitives[ex.op])
        if conv(core.primitives[ex.op], LoopContext(indices, (0, 3)), args, stacked, **ex.params):
            accepted.add(ex.op)
    missing = sorted({p.name for p in structure.structured_converters} - accepted)
    assert not missing, f"structured converters no example exercises: {missing}"
