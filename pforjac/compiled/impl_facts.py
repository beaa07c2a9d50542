"""What codegen and the passes ask of a primitive's numpy forward: does it make a fresh
array (a ufunc, or an impl marked `elementwise_out`), work elementwise, take `out=` and
`order=`. The layout analyses ask it of every reader of every value in every pass, so it is
read from the impl once per primitive and rules generation (a registration may replace it).
"""
from __future__ import annotations

import numpy as np

from .. import core

__all__ = ["plain_ufunc"]


def _fresh_result(eqn) -> bool:
    """The impl is a numpy ufunc, or says it behaves like one (`impl.elementwise_out =
    True`): its result is a new array (or the `out=` buffer it was given), never a view."""
    return _impl_facts(eqn.prim)[0]


def _elementwise(eqn) -> bool:
    """A fresh-result impl that works elementwise and takes `out=`: no parameters (but
    `order='C'`, which a C-ordered `out=` buffer honours), and for a ufunc no core signature."""
    return _impl_facts(eqn.prim)[1] and (not eqn.params or eqn.params.keys() <= {"order"})


def plain_ufunc(eqn) -> bool:
    """An elementwise numpy ufunc (it takes `out=` as well as `order=`)."""
    return _impl_facts(eqn.prim)[2] and _elementwise(eqn)


_IMPL_FACTS: dict = {}
_FACTS_OF = [-1]                 # the rules generation _IMPL_FACTS holds


def _impl_facts(prim: core.Primitive) -> tuple[bool, bool, bool]:
    """(fresh result, fresh with values elementwise: no core signature, a numpy ufunc)."""
    if _FACTS_OF[0] != core.rules_generation:
        _IMPL_FACTS.clear()
        _FACTS_OF[0] = core.rules_generation
    facts = _IMPL_FACTS.get(prim)
    if facts is None:
        impl = core.impl_rules[prim]
        ufunc = isinstance(impl, np.ufunc)
        fresh = (ufunc or bool(getattr(impl, "elementwise_out", False))) and not prim.multiple_results
        elementwise = fresh and getattr(impl, "signature", None) is None
        facts = _IMPL_FACTS[prim] = (fresh, elementwise, ufunc and elementwise)
    return facts


def _ufunc(eqn) -> bool:
    """A ufunc, or an impl that works as one (`elementwise_out`): values elementwise (not
    np.matmul, a ufunc with a core signature)."""
    return _impl_facts(eqn.prim)[1]
