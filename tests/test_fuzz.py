"""The adversarial fuzzer (tests/fuzz/) in the suite: its `ci` profile and its own checks.

Random programs go through every path of pforjac (eager pfor, the while-loop,
parallel_iterations, the loop cache's second and third calls, pforjac.function, forward
mode, the functional API, batch_jacobian and its row check) and are compared with oracles
that share nothing with pforjac's rules: central finite differences on numpy in float64,
numpy's own forward at special values, and (long profile only) JAX. The long run:

    python -m tests.fuzz --profile long --programs 20000     # writes /tmp/pforjac-fuzz

Known issues (tests/fuzz/known.py) xfail here, one test each, until they are fixed; a new
mismatch fails `test_ci_profile_finds_nothing_new` with a minimized reproducer.
"""
from __future__ import annotations

import numpy as np
import pytest

import sys

import pforjac as pj
from pforjac import core

from fuzz import check, cli, generator, interp, known, ops
from fuzz.paths import program_fn

CI_PROGRAMS = 500
# every path the ci profile must have run at least once (names as Call.path, options cut)
PATHS = ["jacobian", "while_loop", "parallel_iterations", "loopcache#2", "loopcache#3",
         "function#1", "function#2", "function#3", "fn.jacobian", "fn.jacobian_vec",
         "forward_mode", "vjp", "jvp", "hessian", "hvp", "batch_jacobian",
         "batch_jacobian.while_loop", "batch_jacobian.parallel_iterations",
         "batch_jacobian.strict", "batch_jacobian.loopcache#2", "batch_jacobian.loopcache#3",
         "batch_jacobian.function#1", "forward", "while_loop@special", "loopcache#3@special",
         "function#2@special"]


@pytest.fixture(scope="module")
def ci_run():
    return cli.run(CI_PROGRAMS, jax="off", out_dir=None, minimize_seconds=10.0)


def test_ci_profile_finds_nothing_new(ci_run):
    report = "\n\n".join(f"{n['path']}: {n['what']} (seed {n['seed']}): {n['detail']}\n"
                         f"{interp.source(n['minimized'])}\n{interp.dumps(n['minimized'])}"
                         for n in ci_run["new"])
    assert not ci_run["new"], f"new mismatches (minimized):\n{report}"


def test_ci_profile_compares_every_path(ci_run):
    counts = ci_run["counts"]
    assert counts["programs"] == CI_PROGRAMS
    assert counts["compared calls"] > 8 * CI_PROGRAMS, counts
    ran = {p.split("(")[0].split("=")[0] for p in ci_run["paths"]}
    assert not set(PATHS) - ran, f"paths the ci profile never compared: {set(PATHS) - ran}"
    for dtype in ("float64", "float32", "float16"):
        assert counts.get(f"programs.smooth.{dtype}", 0) > 10, counts


@pytest.mark.parametrize("name", [name for name, _ in known.KNOWN])
def test_known_issue_absent(ci_run, name):
    """One per known issue: xfails while the ci profile still meets it."""
    seen = ci_run["known"].get(name, 0)
    if seen:
        pytest.xfail(f"known difference: {name}; {seen} mismatches in the ci profile")


# -- the op table covers every primitive, and says truly which -------------------------------
def _traced_prims(program: dict) -> set:
    """The primitives the program binds: traced, or (a program that reads a value into
    Python has no trace) as a tape records them."""
    f = program_fn(program)
    if not ops.OPS[program["lines"][0]["op"]].eager_only:
        traced = pj.make_program(f, [(tuple(program["x_shape"]), np.dtype(program["dtype"]))])
        return {e.prim.name for e in traced.equations}
    x = pj.constant(interp.x_value(program))
    with pj.GradientTape() as tape:
        tape.watch(x)
        f(x)
    return {e.prim.name for e in tape._entries}


def test_every_primitive_has_a_generator_entry():
    named = {p for op in ops.OPS.values() for p in op.prims} | set(ops.INTERNAL)
    missing = sorted(set(core.primitives) - named)
    assert not missing, (f"primitives no fuzzer op binds: {missing}; add an op for each to "
                         f"tests/fuzz/ops.py (or, if no public function binds it, to INTERNAL)")
    stale = sorted(set(ops.INTERNAL) - set(core.primitives))
    assert not stale, f"INTERNAL names primitives that no longer exist: {stale}"


@pytest.mark.parametrize("name", sorted(n for n, o in ops.OPS.items() if o.prims))
def test_op_binds_the_primitives_it_names(name):
    """Over the op's first lines drawn on the source, the primitives it names are bound
    (one line may bind fewer: an identity permutation binds nothing)."""
    op = ops.OPS[name]
    bound, drawn = set(), 0
    for seed in range(400):
        program = generator.generate(seed, batch=op.batch_mixing, names=[name])
        for line in program["lines"]:
            values = [a for a in line["args"] if isinstance(a, dict) and "v" in a]
            if line["op"] == name and values and all(a == {"v": 0} for a in values):
                bound |= _traced_prims(dict(program, lines=[line], dtype="float64", special=None))
                drawn += 1
        if drawn >= 5 and set(op.prims) <= bound:
            return
    assert drawn, f"the generator never drew op {name} on the source in 400 programs"
    assert set(op.prims) <= bound, f"{name} names {op.prims}, binds {sorted(bound)}"


def _backward_prims(f, x) -> set:
    def grad(z):
        with pj.GradientTape() as tape:
            tape.watch(z)
            y = f(z)
        return tape.jacobian(y, z)
    return {e.prim.name for e in pj.make_program(grad, [(x.shape, x.dtype)]).equations}


def test_internal_primitives_are_reached_as_INTERNAL_says():
    x = np.ones((3, 2))
    assert "setitem_zeros" in _backward_prims(lambda z: pj.sin(z[1:, ::-1]), x)

    def jacobian(z):
        with pj.GradientTape() as tape:
            tape.watch(z)
            y = pj.sin(z) * z
        return tape.jacobian(y, z)
    guarded = pj.function(jacobian)       # the one-hot seed times cos(z): guarded finite
    assert "all_finite" in {e.prim.name for e in guarded.program(np.ones(3)).equations}


# -- the oracles catch wrong rules (mutations of pforjac's rule tables, undone after) ----------
def _mismatching_paths(names, seeds=range(60)) -> set:
    found = set()
    for seed in seeds:
        program = generator.generate(seed, batch=False, names=names)
        program["special"] = None
        out = check.check_program(seed, program)
        found |= {m["path"].split("=")[0].split("(")[0] for m in out.mismatches}
    return found


def test_a_wrong_vjp_rule_is_caught_on_reverse_paths_only():
    tanh = core.primitives["tanh"]
    saved = core.vjp_rules[tanh]
    core.defvjp(tanh, lambda g, ans, x: g * (1.0 - ans), override=True)   # should be 1 - ans**2
    try:
        found = _mismatching_paths(["tanh", "sin", "add", "sum"])
    finally:
        core.defvjp(tanh, *saved, override=True)
    assert {"jacobian", "while_loop", "loopcache#3", "function#3", "vjp"} <= found, found
    assert "forward_mode" not in found and "jvp" not in found, found


def test_a_wrong_converter_is_caught_on_pfor_paths_only():
    converters = sys.modules["pforjac.pfor"].converters
    sum_p = core.primitives["sum"]
    saved = converters[sum_p]

    @pj.register_converter("sum", override=True)
    def _unshifted(n, args, stacked, axes, keepdims):       # forgets the stacked axis
        return sum_p.bind(args[0], axes=axes, keepdims=keepdims), True
    try:
        found = _mismatching_paths(["sum", "sin", "multiply", "broadcast_to"])
    finally:
        pj.register_converter("sum", override=True)(saved)
    # (eager pfor's sum of a one-hot seed takes pforjac.structure's converter instead)
    assert "parallel_iterations" in found and "while_loop" not in found, found


# the long run's seed 100761 (as drawn then): a float32 batch program whose tanh saturates
# (tanh(7.72): 1 - t**2 is 7.8e-7, 7.2e-7 from float32's t), so every path's per-example
# Jacobian is 8.7% off float64's, as JAX's float32 gradient is; float64 matches to 5e-7
SATURATED_BATCH = {'dtype': 'float32',
                   'x_shape': [2, 1, 3],
                   'x_seed': 100761,
                   'batch': True,
                   'lines': [{'op': 'pj_einsum_ellipsis',
                              'args': ['...i->...', {'v': 0}],
                              'kw': {}},
                             {'op': 'np_select', 'args': [{'v': 1}, 1.0, 2.0], 'kw': {}},
                             {'op': 'where_not_equal',
                              'args': [{'v': 0},
                                       {'c': [], 's': 77, 'lo': -1.5, 'hi': 1.5},
                                       {'c': [3], 's': 398, 'lo': -1.5, 'hi': 1.5}],
                              'kw': {}},
                             {'op': 'qr', 'args': [{'v': 3}], 'kw': {}},
                             {'op': 'tanh', 'args': [{'v': 4}], 'kw': {}},
                             {'op': 'multiply', 'args': [{'v': 5}, 0.75], 'kw': {}},
                             {'op': 'special_ndtri', 'args': [{'v': 6}], 'kw': {}}]}


def test_a_batch_program_is_compared_by_its_chain_rule_terms_in_float32():
    out = check.check_program(100761, SATURATED_BATCH)
    batch = [c for c in out.calls if c.kind == "batch"]
    assert out.mixing is False and len(batch) >= 6, (out.mixing, out.declined)
    assert not out.mismatches, [(m["path"], m["detail"]) for m in out.mismatches]


def test_a_wrong_vjp_rule_is_caught_on_batch_paths_in_float32():
    """The chain-scaled tolerance of float32 batch_jacobian results still sees a wrong rule."""
    tanh = core.primitives["tanh"]
    saved = core.vjp_rules[tanh]
    core.defvjp(tanh, lambda g, ans, x: g * (1.0 - ans), override=True)   # should be 1 - ans**2
    found = set()
    try:
        for seed in range(40):
            program = generator.generate(seed, batch=True, names=["tanh", "sin", "add", "multiply"])
            program.update(dtype="float32", special=None)
            out = check.check_program(seed, program)
            found |= {m["path"].split("=")[0] for m in out.mismatches if "diagonal" in m["what"]}
    finally:
        core.defvjp(tanh, *saved, override=True)
    assert {"batch_jacobian", "batch_jacobian.while_loop"} <= found, found
