"""pforjac's numpy front end against numpy, generated from the dispatch tables
(tests/conformance.py): every dispatched numpy function, ufunc and ndarray method of Tensor
on ndarrays and on Tensors over dtypes (float16/32/64, complex64/128, int32/64, bool),
shapes, keyword variants and Python-number operands gives numpy's value and dtype, or
refuses naming the call. A deterministic third of the grid runs here (the fuzzer's
`conformance` class runs all of it); the differences kept on purpose are
`conformance.KNOWN`, each with its reason."""
import numpy as np
import pytest

import pforjac as pj
from pforjac import numpy_dispatch

import conformance

CASES = list(conformance.cases(sample=3))


def test_every_dispatched_function_and_tensor_method_has_calls():
    # a numpy function registered without a recipe (and whose signature gives none) fails here
    assert conformance.missing_recipes() == []
    assert len(CASES) > 5000


def test_a_function_without_a_recipe_is_caught():
    def new_numpy_function(a, b):      # two arrays: its signature gives no call
        return a

    numpy_dispatch.FUNCTIONS[new_numpy_function] = new_numpy_function
    try:
        assert "numpy.new_numpy_function" in conformance.missing_recipes()
    finally:
        del numpy_dispatch.FUNCTIONS[new_numpy_function]


@pytest.mark.parametrize("kind", ["ufunc", "function", "method"])
def test_numpy_calls_on_tensors_give_numpys_values_and_dtypes_or_refuse_by_name(kind):
    problems = [p for case in CASES if case[0] == kind for p in [conformance.check(case)] if p]
    assert not problems, f"{len(problems)} silent differences from numpy:\n" + "\n".join(problems[:12])


def test_tensor_properties_are_ndarrays():
    assert conformance.properties_problems() == []


def test_the_checker_sees_a_wrong_value_a_wrong_dtype_and_an_unnamed_refusal():
    call = conformance.Call((conformance.A,))
    wrong = {np.sin: lambda x: pj.cos(x), np.cos: lambda x: pj.cast(pj.cos(x), np.float32),
             np.tan: lambda x: pj.reshape(x, (2, 2))}
    saved = {u: numpy_dispatch.UFUNCS[u] for u in wrong}
    try:
        numpy_dispatch.UFUNCS.update(wrong)
        for ufunc, expected in [(np.sin, "values"), (np.cos, "float64[2, 3] wanted, got float32"),
                                (np.tan, "refused without naming tan")]:
            outcome = conformance.run(ufunc, f"numpy.{ufunc.__name__}", call, "float64", (2, 3))
            assert outcome.problem is not None and expected in outcome.problem, outcome
    finally:
        numpy_dispatch.UFUNCS.update(saved)


def test_every_known_difference_still_occurs():
    # a KNOWN entry that no case needs any more is stale: remove it
    used = set()
    for case in conformance.cases(sample=2):
        problem = conformance.check(case, keep_known=True)
        if problem:
            used.add(conformance.known(case, problem.split(": ", 1)[1]))
    assert used >= {reason for reason, _ in conformance.KNOWN}
