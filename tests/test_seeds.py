"""The seed examples, to the digit: first and second order, pfor and while-loop."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

# pfor must vectorize these bodies, not fall back to the while-loop (a RuntimeWarning).
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

BATCH_X = [[1.0, 2.0], [3.0, 4.0]]
BATCH_WANT = np.array([[[2, 0], [0, 4]], [[6, 0], [0, 8]]], np.float32)
CUBE_X = [[4.0, 2.0], [1.0, 3.0]]
CUBE_WANT = np.array([[[[48, 0], [0, 0]], [[0, 12], [0, 0]]],
                      [[[0, 0], [3, 0]], [[0, 0], [0, 27]]]], np.float32)


def _second_order_want() -> np.ndarray:
    want = np.zeros((2,) * 6, np.float32)
    want[0, 0, 0, 0, 0, 0] = 24
    want[0, 1, 0, 1, 0, 1] = 12
    want[1, 0, 1, 0, 1, 0] = 6
    want[1, 1, 1, 1, 1, 1] = 18
    return want


def _exact(result, want: np.ndarray) -> None:
    assert isinstance(result, pj.Tensor)
    assert result.shape == want.shape
    assert result.dtype == want.dtype
    np.testing.assert_array_equal(result.numpy(), want)


MODES = [pytest.param(True, id="pfor"), pytest.param(False, id="while_loop")]


@pytest.mark.parametrize("use_pfor", MODES)
def test_batch_jacobian_of_square(use_pfor):
    x = pj.constant(BATCH_X)
    with pj.GradientTape(persistent=not use_pfor) as g:
        g.watch(x)
        y = x * x
    _exact(g.batch_jacobian(y, x, experimental_use_pfor=use_pfor), BATCH_WANT)


@pytest.mark.parametrize("use_pfor", MODES)
def test_jacobian_of_cube(use_pfor):
    x = pj.constant(CUBE_X)
    with pj.GradientTape(persistent=not use_pfor) as g:
        g.watch(x)
        y = x * x * x
    _exact(g.jacobian(y, x, experimental_use_pfor=use_pfor), CUBE_WANT)


def test_printed_results_match_numpy():
    x = pj.constant(BATCH_X)
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x
    batch = g.batch_jacobian(y, x)
    assert str(batch.numpy()) == str(BATCH_WANT)
    x = pj.constant(CUBE_X)
    with pj.GradientTape() as g:
        g.watch(x)
        y = x * x * x
    jac = g.jacobian(y, x)
    assert str(jac.numpy()) == str(CUBE_WANT)
    assert str(np.asarray(jac)) == str(CUBE_WANT)


def _nested(use_pfor: bool, outer_persistent: bool):
    """gfg (outer) watches x, gg (inner) computes the first-order jacobian under it."""
    x = pj.constant(CUBE_X)
    with pj.GradientTape(persistent=outer_persistent or not use_pfor) as gfg:
        gfg.watch(x)
        with pj.GradientTape(persistent=not use_pfor) as gg:
            gg.watch(x)
            y = x * x * x
        first = gg.jacobian(y, x, experimental_use_pfor=use_pfor)
    return gfg, first, x


@pytest.mark.parametrize("use_pfor", MODES)
@pytest.mark.parametrize("outer_persistent", [False, True], ids=["outer", "outer_persistent"])
def test_second_order_jacobian(use_pfor, outer_persistent):
    gfg, first, x = _nested(use_pfor, outer_persistent)
    _exact(first, CUBE_WANT)
    _exact(gfg.jacobian(first, x, experimental_use_pfor=use_pfor), _second_order_want())


@pytest.mark.parametrize("use_pfor", MODES)
def test_second_order_batch_jacobian(use_pfor):
    gfg, first, x = _nested(use_pfor, outer_persistent=True)
    if use_pfor:
        got = gfg.batch_jacobian(first, x, experimental_use_pfor=use_pfor)
    else:   # the inner while-loop adds one row's value per iteration into all of x: where
        with pytest.warns(RuntimeWarning, match="could not check"):   # their zeros are,
            got = gfg.batch_jacobian(first, x, experimental_use_pfor=use_pfor)   # unknown
    full = gfg.jacobian(first, x, experimental_use_pfor=use_pfor).numpy()
    want = np.stack([full[b, :, :, :, b] for b in range(2)])
    assert want.shape == (2, 2, 2, 2, 2)
    _exact(got, want.astype(np.float32))
    expected = np.zeros((2,) * 5, np.float32)
    expected[0, 0, 0, 0, 0], expected[0, 1, 0, 1, 1] = 24, 12
    expected[1, 0, 1, 0, 0], expected[1, 1, 1, 1, 1] = 6, 18
    _exact(got, expected)


def test_second_order_pfor_matches_while_loop():
    a = _nested(True, True)
    b = _nested(False, True)
    np.testing.assert_array_equal(a[0].jacobian(a[1], a[2]).numpy(),
                                  b[0].jacobian(b[1], b[2], experimental_use_pfor=False).numpy())
