"""Generated code adds the terms of a sum of scatters into one buffer (`add_at`), with the
bits of the whole-array adds: zeros' signs included, where terms overlap, leave entries
alone or cover them all, and where a later equation could reuse a term's buffer."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled import codegen
from pforjac.compiled.loopcache import caching, same_bits
from pforjac.ops.indexing import setitem_zeros_p

RNG = np.random.default_rng(5)


def _scatter(g, key, shape):
    return setitem_zeros_p.bind(g, key=key, shape=shape)


def _signed_zeros_and_numbers(shape):
    """Entries of ±0 and ±1.5 (sums of them are exact zeros of either sign, or numbers)."""
    return RNG.choice([0.0, -0.0, 1.5, -1.5, 0.0, -0.0], size=shape)


def _check(body, *shapes, fused=True, rounds=40):
    compiled = pj.function(body)
    args = [_signed_zeros_and_numbers(s) for s in shapes]
    compiled(*args)
    assert ("add_at(" in compiled.source(*args)) == fused
    for _ in range(rounds):
        args = [_signed_zeros_and_numbers(s) for s in shapes]
        with caching(False):
            want = body(*[pj.constant(a) for a in args])
        got = compiled(*args)
        want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
        for w, g in zip(want, got):
            assert same_bits(np.asarray(g), w.numpy()), (args, g, w.numpy())


def test_overlapping_terms_as_the_chained_rosenbrock_makes_them():
    def body(a, b, c):          # [:-1], [:-1], [1:]: entry 0 needs the fix, 1..4 have all three
        return (_scatter(a, (slice(0, 5),), (6,)) + _scatter(b, (slice(0, 5),), (6,))) \
            + _scatter(c, (slice(1, 6),), (6,))
    _check(body, (5,), (5,), (5,))


def test_a_running_sum_on_either_side_and_disjoint_terms():
    def body(a, b, c):
        first = _scatter(b, (slice(2, 4),), (6,)) + _scatter(a, (slice(0, 2),), (6,))
        return _scatter(c, (slice(4, 6),), (6,)) + first
    _check(body, (2,), (2,), (2,))


def test_rows_and_an_entry_picked_by_ints():
    def body(a, b, c):
        total = _scatter(a, (slice(0, 2),), (3, 2)) + _scatter(b, (1,), (3, 2))
        return total + _scatter(c, (2, 1), (3, 2))
    _check(body, (2, 2), (2,), ())


def test_entries_that_are_not_one_box_keep_the_whole_array_adds():
    def body(a, b):             # rows 0-1 alone outside columns 1-2: two pieces, no box
        return _scatter(a, (slice(0, 2), slice(None)), (3, 4)) \
            + _scatter(b, (slice(None), slice(1, 3)), (3, 4))
    _check(body, (2, 4), (3, 2), fused=False)


def test_a_sum_read_twice_is_not_written_in_place():
    def body(a, b, c):
        first = _scatter(a, (slice(0, 4),), (6,)) + _scatter(b, (slice(2, 6),), (6,))
        return first + _scatter(c, (slice(1, 5),), (6,)), first * 2.0
    _check(body, (4,), (4,), (4,))


def test_a_terms_values_are_kept_until_their_add(monkeypatch):
    """sin(g) comes after g's scatter, before the add that now reads g: with every buffer
    reusable it must not be written into g's."""
    monkeypatch.setattr(codegen, "_IN_PLACE_MIN", 1)

    def body(a, b):
        g = pj.exp(b)
        total = _scatter(a, (slice(0, 4),), (6,))
        term = _scatter(g, (slice(2, 6),), (6,))
        h = pj.sin(g)
        return total + term, h
    _check(body, (4,), (4,))
    source = pj.function(body).source(np.ones(4), np.ones(4))
    assert [line for line in source.splitlines() if "np_sin(" in line and "out=" not in line]


@pytest.mark.parametrize("n", [2, 3, 50])
def test_the_chained_rosenbrock_gradient_keeps_every_bit(n):
    def f(x):
        return pj.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    grad = pj.grad(f)
    compiled = pj.function(grad)
    for _ in range(30):
        x = RNG.choice([0.0, -0.0, 1.0, -1.0, 2.0, np.inf, np.nan], n) \
            * RNG.choice([1.0, 1.0, 0.5], n)
        with np.errstate(all="ignore"), caching(False):
            want = grad(pj.constant(x)).numpy()
            got = compiled(x)
        assert same_bits(got, want), (x, got, want)
    assert compiled.source(np.zeros(n)).count("setitem_zeros_impl") == 1
    program = compiled.program(np.zeros(n))       # the sum's seed of ones is multiplied by
    ones = {id(c) for c, v in zip(program.consts, program.const_values)    # nothing
            if np.all(v.numpy() == 1)}
    assert not [e for e in program.equations
                if e.prim.name == "multiply" and any(id(v) in ones for v in e.inputs)]
