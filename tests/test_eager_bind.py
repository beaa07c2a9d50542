"""core.bind's eager path on plain Tensors (_bind_eager) keeps what the general path does
for tapes: recorded ops are differentiated, outputs a tape does not record are known as
made in its block (unconnected, not refused), Variables are watched on read, and a target
computed after the block is refused."""
import numpy as np
import pytest

import pforjac as pj


def test_recorded_chain_matches_the_closed_form():
    x = pj.constant(np.array([0.3, -1.2, 2.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(5):
            y = pj.sin(y) * 1.1 + y * y
        total = pj.numpy.sum(y)
    got = tape.gradient(total, x).numpy()
    v, d = x.numpy(), np.ones(3)
    for _ in range(5):                    # forward-mode by hand: d(y)/dx elementwise
        d = (np.cos(v) * 1.1 + 2 * v) * d
        v = np.sin(v) * 1.1 + v * v
    np.testing.assert_allclose(got, d, rtol=1e-12)


def test_an_unrecorded_result_made_in_the_block_is_unconnected():
    x = pj.constant(np.array([1.0, 2.0]))
    c = pj.constant(np.array([3.0, 4.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
        y = c * 2.0                      # no watched input: not recorded, but made here
        flag = pj.greater(x, 1.5)        # not differentiable: made here too
    assert tape.gradient(y, x) is None
    assert tape.made_here(y) and tape.made_here(flag)


def test_a_target_computed_after_the_block_is_refused():
    x = pj.constant(np.array([1.0, 2.0]))
    with pj.GradientTape() as tape:
        tape.watch(x)
    y = x * x
    with pytest.raises(ValueError, match="not recorded by this tape"):
        tape.gradient(y, x)


def test_variables_read_under_a_tape_are_watched_and_read_once():
    v = pj.Variable(np.array([1.0, 2.0]))
    with pj.GradientTape() as tape:
        y = v * v
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0])
    assert tape.watched_variables() == (v,)


def test_results_are_read_only_and_errors_name_the_op():
    a = pj.constant(np.ones((2, 3)))
    out = pj.sin(a)
    assert not out.numpy().flags.writeable
    with pytest.raises(ValueError, match="matmul"):
        a @ a
