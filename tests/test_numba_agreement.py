"""The numba backend agrees with the numpy backend to a few ulps (float64 and float32) on
a sample of the compiled-function tests' workloads and of the fuzzer's programs
(tests/numba_agreement.py holds the comparison). Compile time decides the sample: a
dozen fuzzer programs and the workloads below in the `ci` and `dev` profiles, 200
fuzzer programs under `--hypothesis-profile=long` (or `python -m tests.numba_agreement`)."""
import numpy as np
import pytest
from hypothesis import settings

import pforjac as pj
from numba_agreement import fuzz_cases, run_both
from test_function import _net, _seed_first_order
from test_structure_functions import CASES, _flattened

numba = pytest.importorskip("numba")

LONG = settings.get_current_profile_name() == "long"
# fuzzer programs that lower wholly (14, 26, 35, 42) or in segments, picked for short compiles
SEEDS = range(200) if LONG else [14, 26, 31, 35, 38, 42]

_rng = np.random.default_rng(3)
_W1, _W2 = _rng.normal(size=(5, 7)), _rng.normal(size=(7, 3))


def _jacobian_of(g):
    def jac(v):
        with pj.GradientTape() as tape:
            tape.watch(v)
            y = g(v)
        return tape.jacobian(y, v)
    return jac


def _structure_case(name):
    f, (x, *rest) = CASES[name]
    return _jacobian_of(_flattened(f, rest)), x


WORKLOADS = {
    "seed_first_order": (_seed_first_order, np.array([[4, 2], [1, 3]], np.float64)),
    "net_jacobian": (lambda x: _net(x, _W1.astype(x.dtype), _W2.astype(x.dtype), "jacobian"),
                     _rng.normal(size=(4, 5))),
    "net_batch_jacobian": (lambda x: _net(x, _W1.astype(x.dtype), _W2.astype(x.dtype),
                                          "batch_jacobian"), _rng.normal(size=(4, 5))),
    "log_softmax_gradient": (pj.grad(lambda t: pj.numpy.sum(pj.log_softmax(t) * t)),
                             _rng.normal(size=(3, 6))),
    "logsumexp_hessian": (pj.hessian(lambda t: pj.logsumexp(t)), _rng.normal(size=5)),
    **{f"structure_{name}": _structure_case(name) for name in ("kron", "outer", "trace")},
}


CI_WORKLOADS = [("seed_first_order", np.float64), ("net_batch_jacobian", np.float32),
                ("structure_kron", np.float64)]


@pytest.mark.parametrize("name, dtype", [(n, d) for n in sorted(WORKLOADS)
                                         for d in (np.float64, np.float32)] if LONG else CI_WORKLOADS)
def test_compiled_test_workloads_agree(name, dtype):
    fn, x = WORKLOADS[name]
    problem, backend = run_both(fn, (np.asarray(x, dtype),), dtype)
    assert problem is None, f"{name} ({backend}): {problem}"
    assert backend.startswith("numba")


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzer_programs_agree(seed):
    from fuzz import interp
    for name, fn, args, dtype, program in fuzz_cases([seed]):
        problem, backend = run_both(fn, args, dtype)
        assert problem is None, f"{name} ({backend}): {problem}\n{interp.source(program)}"
        if not LONG:
            assert backend.startswith("numba")
