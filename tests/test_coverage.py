"""The coverage report: every built-in primitive has every rule it should have."""
import subprocess
import sys

import numpy as np
import pytest

import pforjac as pj  # noqa: F401  (declares the built-in primitives)
from pforjac import coverage, extend
from pforjac.testing import isolated_registries

ROWS = [r for r in coverage.coverage() if r.origin == "built-in"]


@pytest.mark.parametrize("row", ROWS, ids=[r.op for r in ROWS])
def test_builtin_primitive_has_every_rule(row):
    lacking = [rule for rule, status in row.status.items() if status in ("MISSING", "per-iter")]
    assert not lacking, (f"built-in primitive '{row.op}' lacks its {', '.join(lacking)} rule(s) "
                         f"(differentiable={row.differentiable}); add them next to its other rules "
                         f"or declare why with pforjac.coverage.declare_missing")


def test_non_differentiable_ops_need_no_derivative_rules():
    rows = {r.op: r for r in ROWS}
    assert rows["equal"].status["vjp"] == "n/a: not differentiable"
    assert rows["matmul"].status == {rule: "yes" for rule in coverage.RULES}


def test_report_marks_fallbacks_missing_rules_and_declared_reasons():
    with isolated_registries():
        op = extend.defop("cov_probe", np.sin, extend.same_shape)
        coverage.declare_missing(op, "jvp", "probe op, reverse mode only")
        row = {r.op: r for r in coverage.coverage()}["cov_probe"]
        assert row.origin == "extend"
        assert row.status["vjp"] == "MISSING" and row.status["converter"] == "per-iter"
        assert row.status["jvp"] == "n/a: probe op, reverse mode only"
        assert coverage.missing(builtin_only=False)["cov_probe"] == ["vjp", "converter"]
        assert "cov_probe" not in coverage.missing()
    assert ("cov_probe", "jvp") not in coverage.declared_missing


def test_python_dash_m_coverage_lists_every_primitive():
    out = subprocess.run([sys.executable, "-m", "pforjac.coverage", "--strict"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Warning" not in out.stderr, out.stderr
    for row in ROWS:
        assert f"\n{row.op} " in out.stdout
