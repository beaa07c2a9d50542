"""Every primitive's jvp rule, run the way forward mode runs it: over a traced Program.

Reuses the op table of test_gradients.py. For each case, `pforjac.jvp` (the
jvp interpreter over the traced Program) must match central finite differences
along a random direction (float64), and the forward-mode Jacobian (the jvp
vectorized over the input basis by pfor, so every jvp rule also runs on stacked
tangents) must equal the reverse-mode one.
"""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj
from pforjac import core
from test_gradients import CASE_IDS, CASES, EPS, RTOL, TOLERANCE, _rng, _value_of


@pytest.mark.parametrize("name, fn, make", CASES, ids=CASE_IDS)
def test_jvp_over_a_program_matches_finite_differences(name, fn, make):
    rng = _rng(name)
    arrays = make(rng)
    directions = [rng.standard_normal(a.shape) for a in arrays]
    _, got = pj.jvp(fn, tuple(arrays), tuple(directions))
    tol = TOLERANCE.get(name, {})
    eps, rtol = tol.get("eps", EPS), tol.get("rtol", RTOL)
    plus = _value_of(fn, [a + eps * d for a, d in zip(arrays, directions)])
    minus = _value_of(fn, [a - eps * d for a, d in zip(arrays, directions)])
    expected = (plus - minus) / (2 * eps)
    assert got.shape == expected.shape
    np.testing.assert_allclose(np.asarray(got), expected, rtol=rtol,
                               atol=rtol / 100 * max(1.0, np.abs(expected).max()), err_msg=name)


@pytest.mark.parametrize("name, fn, make", CASES, ids=CASE_IDS)
def test_forward_mode_jacobian_equals_reverse_mode(name, fn, make):
    arrays = tuple(make(_rng(name)))
    forward = pj.jacobian(fn, arrays, vectorize=True, strategy="forward-mode")
    reverse = pj.jacobian(fn, arrays, vectorize=True)
    for k, (f, r) in enumerate(zip(forward, reverse)):
        assert f.shape == r.shape and f.dtype == r.dtype, f"{name}: J[{k}]"
        np.testing.assert_allclose(np.asarray(f), np.asarray(r), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}: J[{k}]")


def test_every_differentiable_primitive_has_a_jvp_rule():
    missing = [p.name for p in core.primitives.values()
               if p.differentiable and p not in core.jvp_rules]
    assert not missing, f"differentiable primitives without a jvp rule: {missing}"
