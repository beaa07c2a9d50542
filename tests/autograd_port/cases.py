"""All ported cases for one namespace triple: `build(numpy, scipy.special, scipy.linalg)`."""
from __future__ import annotations

from . import cases_linalg, cases_numpy, cases_scipy, cases_systematic
from .spec import Cases


def build(np, sp, la) -> dict:
    cases = Cases()
    for module in (cases_systematic, cases_numpy, cases_linalg, cases_scipy):
        module.build(np, sp, la, cases)
    return cases.cases
