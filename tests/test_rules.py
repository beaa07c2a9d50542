"""Checks generated from the registry: every rule of every registered primitive.

For each primitive, on the examples it declares (or, for an elementwise one, on
inputs drawn from its declared domain): the shape rule against the forward, the
vjp and jvp rules against central differences in float64 to second order, and the
pfor converter over every mix of stacked inputs (`pforjac.testing.check_primitive`).
A primitive added to pforjac is checked here without a line of this file changing.
"""
import numpy as np
import pytest

import pforjac as pj
from pforjac import core, extend
from pforjac.testing import check_primitive, examples_of, isolated_registries

PRIMITIVES = sorted(core.primitives.values(), key=lambda p: p.name)


@pytest.mark.parametrize("prim", PRIMITIVES, ids=[p.name for p in PRIMITIVES])
def test_every_rule_of(prim):
    check_primitive(prim)


def test_every_primitive_declares_examples_or_a_domain():
    lacking = []
    for prim in PRIMITIVES:
        try:
            if not examples_of(prim):
                lacking.append(prim.name)
        except AssertionError:
            lacking.append(prim.name)
    assert not lacking, f"primitives with nothing for their generated checks: {lacking}"


def _cbrt(three: float):
    return extend.defop("planted_cbrt", np.cbrt, extend.same_shape,
                        vjp=lambda g, ans, x: g / (three * pj.square(ans)),
                        jvp=lambda t, ans, x: t / (three * pj.square(ans)),
                        elementwise=True, domain=("positive",))


def test_a_planted_wrong_derivative_is_caught():
    with isolated_registries():
        check_primitive(_cbrt(3.0))                 # right: passes
    with isolated_registries():
        with pytest.raises(AssertionError, match="planted_cbrt.*finite differences"):
            check_primitive(_cbrt(2.0))             # 2 where 3 belongs


def test_a_planted_wrong_converter_is_caught():
    with isolated_registries():
        op = extend.defop("planted_sum_rows", lambda x: x.sum(axis=0), lambda x: (x.shape[1:], x.dtype),
                          vjp=lambda g, ans, x: pj.broadcast_to(g, x.shape),
                          jvp=lambda t, ans, x: pj.sum(t, axis=0),
                          examples=lambda rng: [core.Example(rng.normal(size=(3, 2)))])
        extend.register_converter(op)(lambda n, args, stacked: (op(args[0]), stacked[0]))  # axis 0 is the loop's
        with pytest.raises(AssertionError, match="converter of op 'planted_sum_rows'"):
            check_primitive(op)


def test_a_planted_wrong_shape_rule_is_caught():
    with isolated_registries():
        op = extend.defop("planted_shape", lambda x: x[:1], extend.same_shape,
                          examples=lambda rng: [core.Example(rng.normal(size=(3,)))])
        with pytest.raises((AssertionError, ValueError), match="planted_shape"):
            check_primitive(op)
