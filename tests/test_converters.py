"""Every pfor converter against stacking the per-iteration results of `bind`.

One generic checker runs over a table of examples (op, per-iteration inputs,
params). For each example it tries every mix of stacked/unstacked inputs (at
least one stacked); stacked inputs hold different data for each of the n = 3
iterations. A second check spies on the primitives the converter applies and
asserts that unstacked operands of broadcasting ops reach the op as they are
(no stacked copy). A coverage test fails when a primitive lacks a converter or
a converter lacks an example here. The structure-aware converters (structure.py,
one-hot values kept compact) get the same check against densified inputs.
"""
from __future__ import annotations

import itertools
import warnings
import zlib

import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from pforjac.ops.elementwise import BINARY, UNARY
from pforjac.pfor import converter_for, converters

N = 3


# -- input makers: rng -> one iteration's array ------------------------------------------
def F(*shape):
    return lambda rng: rng.standard_normal(shape)


def P(*shape):
    """Positive floats (log, sqrt, power bases, divisors)."""
    return lambda rng: rng.uniform(0.5, 2.0, shape)


def U(*shape):
    """Floats inside (-1, 1) (arcsin, arccos, arctanh)."""
    return lambda rng: rng.uniform(-0.9, 0.9, shape)


def G(*shape):
    """Floats above 1 (arccosh)."""
    return lambda rng: rng.uniform(1.5, 3.0, shape)


def I(*shape, lo=-3, hi=3):
    return lambda rng: rng.integers(lo, hi, shape).astype(np.int32)


def B(*shape):
    return lambda rng: rng.random(shape) < 0.5


class Ex:
    def __init__(self, op: str, inputs, tag: str = "", **params):
        self.op, self.inputs, self.params, self.tag = op, list(inputs), params, tag

    def __repr__(self) -> str:
        return f"{self.op}[{','.join(map(_describe_input, self.inputs))}]{self.tag}{self._params()}"

    def _params(self) -> str:
        shown = {k: v for k, v in self.params.items() if k in ("axes", "keepdims", "shape", "perm", "key")}
        return "-" + ";".join(f"{k}={v}" for k, v in shown.items()) if shown else ""


def _describe_input(spec) -> str:
    if callable(spec):
        return "x".join(map(str, spec(np.random.default_rng(0)).shape)) or "()"
    if spec[0] == "oh":
        return f"oh{_describe_input(spec[1])}@{spec[2]}:{spec[3]}"
    if spec[0] == "index":
        return "i"
    return spec[0] + _describe_input(spec[1])


# -- the table ----------------------------------------------------------------------------
_POSITIVE = {"log", "sqrt", "log1p", "reciprocal", "log2", "log10"}
_DOMAIN = {**{name: P for name in _POSITIVE}, "arcsin": U, "arccos": U, "arctanh": U, "arccosh": G}
_BROADCAST_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((3,), (2, 3)), ((2, 1), (1, 3)),
                    ((), (2, 3)), ((2, 3), ()), ((4, 1, 3), (2, 1)), ((), ())]


def _elementwise_examples():
    out = []
    for name in sorted(UNARY):
        maker = B if name == "logical_not" else _DOMAIN.get(name, F)
        out += [Ex(name, [maker(2, 3)]), Ex(name, [maker()])]
    for name in sorted(BINARY):
        for sx, sy in _BROADCAST_PAIRS:
            if name in ("logical_and", "logical_or"):
                mx, my = B, B
            elif name == "power":
                mx, my = P, F
            elif name == "divide":
                mx, my = F, P
            else:
                mx, my = F, F
            out.append(Ex(name, [mx(*sx), my(*sy)]))
    out += [
        Ex("where", [B(2, 3), F(2, 3), F(3)]),
        Ex("where", [B(3), F(2, 1), F()]),
        Ex("where", [B(), F(2, 3), F(2, 3)]),
        Ex("cast", [F(2, 3)], dtype=np.dtype(np.int32)),
        Ex("cast", [F(2, 3)], dtype=np.dtype(np.float32)),
        Ex("cast", [B(3)], dtype=np.dtype(np.float64)),
        Ex("stop_gradient", [F(2, 3)]),
        Ex("zeros_like", [F(2, 3)]),
        Ex("ones_like", [I(3)]),
    ]
    return out


def _reduction_examples():
    out = []
    for name in ("sum", "max", "min", "prod"):
        for axes in [(0,), (1, 2), (0, 2), (0, 1, 2), ()]:
            for keepdims in (False, True):
                out.append(Ex(name, [F(2, 3, 4)], axes=axes, keepdims=keepdims))
        out.append(Ex(name, [F()], axes=(), keepdims=False))
    out.append(Ex("sum", [B(2, 3)], axes=(1,), keepdims=False))
    for name in ("cumsum", "argmax", "argmin"):
        for axis in (0, 1, 2):
            out.append(Ex(name, [F(2, 3, 4)], axis=axis))
    out.append(Ex("cumsum", [I(5)], axis=0))
    return out


def _shape_examples():
    return [
        Ex("reshape", [F(2, 3, 4)], shape=(6, 4)),
        Ex("reshape", [F(2, 3, 4)], shape=(24,)),
        Ex("reshape", [F(2, 3, 4)], shape=(4, 1, 6)),
        Ex("reshape", [F()], shape=(1, 1)),
        Ex("reshape", [F(1)], shape=()),
        Ex("transpose", [F(2, 3, 4)], perm=(2, 0, 1)),
        Ex("transpose", [F(2, 3, 4)], perm=(1, 0, 2)),
        Ex("transpose", [F(2, 3)], perm=(1, 0)),
        Ex("broadcast_to", [F(3)], shape=(2, 3)),
        Ex("broadcast_to", [F(2, 1)], shape=(2, 4)),
        Ex("broadcast_to", [F()], shape=(2, 2)),
        Ex("broadcast_to", [F(1, 3)], shape=(4, 2, 3)),
        Ex("concat", [F(2, 3), F(4, 3)], axis=0),
        Ex("concat", [F(2, 3), F(2, 1), F(2, 2)], axis=1),
        Ex("concat", [I(2), I(3)], axis=0),
        Ex("split", [F(6, 4)], indices=(2, 5), axis=0),
        Ex("split", [F(6, 4)], indices=(1,), axis=1),
        Ex("split", [F(6, 4)], indices=(2, 2), axis=1),
        Ex("tile", [F(2, 3)], reps=(2, 1)),
        Ex("tile", [F(2, 3)], reps=(1, 3)),
        Ex("tile", [F(3)], reps=(2,)),
        Ex("pad", [F(2, 3)], pad_width=((1, 0), (2, 1)), value=0.0),
        Ex("pad", [F(3)], pad_width=((0, 2),), value=1.5),
    ]


_KEYS = [
    (slice(None, None, -1),),
    (slice(3, 0, -2), None, 1),
    (1, slice(None), slice(None, None, -1)),
    (None, slice(1, None), slice(None, 2), slice(None, None, 2)),
    (-1,),
    (slice(None), -2, None),
    (slice(-1, None, -3), slice(4, 1, -1), -3),
    (None, None),
    (2, 4, 0),
    (slice(None), None, slice(None)),
    (slice(None), None),
    (Ellipsis,),
]


def _indexing_examples():
    shape = (4, 5, 3)
    out = []
    for key in _KEYS:
        out.append(Ex("getitem", [F(*shape)], key=key))
        g_shape = np.empty(shape)[key].shape
        out.append(Ex("setitem_zeros", [F(*g_shape)], key=key, shape=shape))
    out += [
        Ex("gather", [F(4, 3), I(2, lo=-4, hi=4)], axis=0),
        Ex("gather", [F(4, 3), I(2, 2, lo=-3, hi=3)], axis=1),
        Ex("gather", [F(2, 5, 3), I(lo=-5, hi=5)], axis=1),
        Ex("gather", [F(2, 5, 3), I(3, 2, lo=0, hi=3)], axis=2),
        Ex("gather", [I(5, lo=0, hi=9), I(4, lo=-5, hi=5)], axis=0),
        Ex("scatter_add", [F(2, 3), I(2, lo=-4, hi=4)], axis=0, size=4),
        Ex("scatter_add", [F(3, 2, 2), I(2, 2, lo=0, hi=5)], axis=1, size=5),
        Ex("scatter_add", [F(5, 2), I(5, lo=0, hi=2)], axis=0, size=3),
        Ex("scatter_add", [F(2, 4), I(lo=-3, hi=3)], axis=1, size=3),
        Ex("check_index", [I(3, 2, lo=-4, hi=4)], size=4),
        Ex("one_hot", [I(3, lo=-1, hi=5)], depth=4, dtype=np.dtype(np.float32)),
        Ex("all_finite", [F(2, 3)], axes=(0, 1), nonzero=False),
        Ex("all_finite", [F(2, 3)], axes=(1,), nonzero=True),
        Ex("one_hot", [I(lo=0, hi=3)], depth=3, dtype=np.dtype(np.float64)),
        Ex("one_hot", [I(2, 2, lo=0, hi=3)], depth=3, dtype=np.dtype(np.int32)),
    ]
    return out


_MATMUL_SHAPES = [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)),
                  ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)),
                  ((5, 1, 2, 3), (4, 3, 2)), ((3,), (5, 3, 2)), ((5, 2, 3), (3,)),
                  ((1, 3), (3, 1))]
_EINSUMS = [("ij,jk->ik", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]), ("ii->i", [(3, 3)]),
            ("ij,ij->", [(2, 3), (2, 3)]), ("abc,cd->abd", [(2, 3, 4), (4, 2)]),
            ("i,j->ij", [(2,), (3,)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
            ("bqd,bkd->bqk", [(2, 3, 4), (2, 5, 4)])]


def _linalg_examples():
    out = [Ex("matmul", [F(*a), F(*b)]) for a, b in _MATMUL_SHAPES]
    out += [Ex("einsum", [F(*s) for s in shapes], subscripts=sub) for sub, shapes in _EINSUMS]
    return out


EXAMPLES = (_elementwise_examples() + _reduction_examples() + _shape_examples()
            + _indexing_examples() + _linalg_examples())


# -- the generic checker ------------------------------------------------------------------
def _mixes(k: int):
    return [m for m in itertools.product([False, True], repeat=k) if any(m)]


def _data(ex: Ex, seed: int):
    """Per input: N different per-iteration arrays, and one unstacked array."""
    rng = np.random.default_rng(seed)
    per_iter = [[m(rng) for _ in range(N)] for m in ex.inputs]
    unstacked = [m(rng) for m in ex.inputs]
    return per_iter, unstacked


def _expected(prim, per_iter, unstacked, mix, params):
    results = []
    for k in range(N):
        args = [pj.constant(p[k] if s else u) for p, u, s in zip(per_iter, unstacked, mix)]
        out = core.bind(prim, *args, **params)
        results.append([o.numpy() for o in out] if prim.multiple_results else [out.numpy()])
    return [np.stack([r[j] for r in results]) for j in range(len(results[0]))]


def _run_converter(prim, per_iter, unstacked, mix, params):
    args = [pj.constant(np.stack(p) if s else u) for p, u, s in zip(per_iter, unstacked, mix)]
    out, out_stacked = converter_for(prim)(N, args, list(mix), **params)
    outs = list(out) if prim.multiple_results else [out]
    if not out_stacked:
        outs = [np.broadcast_to(o.numpy(), (N,) + tuple(o.shape)) for o in outs]
    return [np.asarray(o.numpy() if isinstance(o, pj.Tensor) else o) for o in outs], out_stacked


@pytest.mark.parametrize("ex", EXAMPLES, ids=repr)
def test_converter_matches_stacked_iterations(ex):
    prim = core.primitives[ex.op]
    for mix in _mixes(len(ex.inputs)):
        per_iter, unstacked = _data(ex, seed=zlib.crc32(f"{ex!r}{mix}".encode()))
        want = _expected(prim, per_iter, unstacked, mix, ex.params)
        got, _ = _run_converter(prim, per_iter, unstacked, mix, ex.params)
        assert len(got) == len(want), (ex, mix)
        for g, w in zip(got, want):
            assert g.shape == w.shape, f"{ex} mix={mix}: shape {g.shape} != {w.shape}"
            assert g.dtype == w.dtype, f"{ex} mix={mix}: dtype {g.dtype} != {w.dtype}"
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=f"{ex} mix={mix}")


# -- no stacked copies of unstacked operands -------------------------------------------
_COPYING = {"broadcast_to", "tile", "concat"}
# ops whose unstacked operands should reach the op itself untouched (numpy broadcasts them)
_AS_IS = {*UNARY, *BINARY, "where", "cast", "einsum"}


@pytest.fixture
def spy(monkeypatch):
    calls: list[tuple[str, tuple]] = []
    for prim, impl in list(core.impl_rules.items()):
        def wrapped(*arrays, _impl=impl, _name=prim.name, **params):
            calls.append((_name, tuple(np.shape(a) for a in arrays)))
            return _impl(*arrays, **params)
        monkeypatch.setitem(core.impl_rules, prim, wrapped)
    return calls


_SPIED = [ex for ex in EXAMPLES if len(ex.inputs) > 1 and ex.op in _AS_IS | {"matmul", "gather"}]


@pytest.mark.parametrize("ex", _SPIED, ids=repr)
def test_unstacked_operands_are_not_copied(ex, spy):
    prim = core.primitives[ex.op]
    for mix in _mixes(len(ex.inputs)):
        if all(mix):
            continue
        per_iter, unstacked = _data(ex, seed=0)
        spy.clear()
        _run_converter(prim, per_iter, unstacked, mix, ex.params)
        # matmul may double a single row or column into a gemm (see ops._kernels.matmul_no_gemv)
        copies = [c for c in spy if c[0] in _COPYING and not (
            ex.op == "matmul" and c[0] == "concat" and all(len(s) == 2 and 1 in s for s in c[1]))]
        assert not copies, f"{ex} mix={mix}: the converter copied an operand: {copies}"
        main = [shapes for name, shapes in spy if name == ex.op]
        assert main, f"{ex} mix={mix}: the converter never applied '{ex.op}'"
        if ex.op in _AS_IS or (ex.op == "gather" and not mix[0]):
            for u, s in zip(unstacked, mix):
                if not s:
                    assert any(np.shape(u) in shapes for shapes in main), \
                        f"{ex} mix={mix}: unstacked operand {np.shape(u)} reached '{ex.op}' " \
                        f"reshaped: {main}"


# -- the driver ------------------------------------------------------------------------
def test_pfor_drives_every_example_without_falling_back():
    """The same table through `pforjac.pfor`: a body that indexes stacked inputs with i."""
    for ex in EXAMPLES:
        prim = core.primitives[ex.op]
        per_iter, unstacked = _data(ex, seed=1)
        mix = (True,) * len(ex.inputs)
        tables = [pj.constant(np.stack(p)) for p in per_iter]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = pj.pfor(lambda i: core.bind(prim, *[t[i] for t in tables], **ex.params), N,
                          fallback_to_while_loop=False)
        got = list(got) if prim.multiple_results else [got]
        for g, w in zip(got, _expected(prim, per_iter, unstacked, mix, ex.params)):
            assert g.shape == w.shape and g.dtype == w.dtype, ex
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-12, err_msg=repr(ex))


# -- coverage ---------------------------------------------------------------------------
def test_every_primitive_has_a_converter():
    missing = sorted(name for name, prim in core.primitives.items() if converter_for(prim) is None)
    assert not missing, f"primitives without a pfor converter: {missing}"


def test_every_converter_has_an_example():
    covered = {ex.op for ex in EXAMPLES}
    missing = sorted({p.name for p in converters} - covered)
    assert not missing, f"converters with no example in tests/test_converters.py: {missing}"


# -- structure-aware converters (structure.py): one-hot values carried compactly -----------
from pforjac import structure  # noqa: E402
from pforjac.pfor import LoopContext  # noqa: E402

# (lo, hi): the loop indices lo..hi-1; (2, 5) reaches past a block of 4 (rows of zeros)
INDEX_RANGES = [(0, 3), (2, 5)]


def OH(*shape, start, stop, positive=False, maker=None):
    """A one-hot input: compact data of `shape` (from `maker`, or P / F), tied on axes
    [start, stop)."""
    return ("oh", (maker or (P if positive else F))(*shape), start, stop)


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


def _structured_examples():
    out = []
    for name in sorted(p.name for p in core.primitives.values() if p.zero_preserving):
        params = {"dtype": np.dtype(np.float32)} if name == "cast" else {}
        for a, b in _blocks(2):
            out.append(Ex(name, [OH(3, 4, start=a, stop=b, positive=True, maker=_DOMAIN.get(name))],
                          **params))
    for name in ("multiply", "multiply_no_nan", "divide", "add", "subtract"):
        for a, b in _blocks(2):
            for other in [(), (4,), (3, 1), (1,), (2, 3, 4), (2, 1, 1)]:
                out.append(Ex(name, [OH(3, 4, start=a, stop=b), ("u", P(*other))]))
                out.append(Ex(name, [("u", P(*other)), OH(3, 4, start=a, stop=b)]))
            out.append(Ex(name, [OH(3, 4, start=a, stop=b), OH(3, 4, start=a, stop=b, positive=True)]))
            out.append(Ex(name, [OH(3, 4, start=a, stop=b), ("s", F(3, 4))]))
    out.append(Ex("multiply", [OH(3, 4, start=0, stop=1), ("u", lambda rng: np.array([1.0, np.inf, 0, 2]))]))
    out.append(Ex("divide", [OH(3, 4, start=0, stop=1), ("u", lambda rng: np.array([1.0, 0.0, 3, 2]))]))
    out.append(Ex("multiply_no_nan", [("u", lambda rng: np.array([1.0, np.inf, np.nan, 2])),
                                      OH(3, 4, start=0, stop=1)]))
    for name in ("zeros_like", "ones_like"):
        out.append(Ex(name, [OH(3, 4, start=0, stop=1)]))
    for a, b in _blocks(3):
        for axes in [(0,), (1,), (2,), (0, 1), (1, 2), (0, 2), (0, 1, 2)]:
            for keepdims in (False, True):
                out.append(Ex("sum", [OH(4, 3, 2, start=a, stop=b)], axes=axes, keepdims=keepdims))
        for shape in [(24,), (4, 6), (12, 2), (2, 2, 3, 2), (1, 4, 3, 2), (4, 3, 2, 1), (4, 1, 3, 2),
                      (2, 12), (8, 3), (4, 3, 1, 2), (6, 4)]:
            out.append(Ex("reshape", [OH(4, 3, 2, start=a, stop=b)], shape=shape))
        for perm in itertools.permutations(range(3)):
            out.append(Ex("transpose", [OH(4, 3, 2, start=a, stop=b)], perm=perm))
        for key in _KEYS:
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


STRUCTURED_EXAMPLES = _structured_examples()


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
    conv = structure.structured_converter_for(core.primitives[ex.op])
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
