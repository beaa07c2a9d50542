"""pforjac.function called with Python floats alone: its lean entry (no array input, the
constants passed after) once was `code(, A1)`, a SyntaxError at the first call."""
import numpy as np

import pforjac as pj


def test_a_function_of_python_floats_alone_calls_its_code():
    f = pj.function(lambda a: (a * 2.0 + 1.0, a - a))
    for _ in range(2):                      # (the second call runs the lean entry)
        got = f(0.5)
        assert [float(v) for v in got] == [2.0, 0.0]
    assert float(pj.function(lambda a, b: a * b)(1.5, -2.0)) == -3.0
    assert np.signbit(pj.function(lambda a: a * 0.5)(-0.0))
