"""Property tests: random programs, differentiated three ways, must agree.

For `jacobian` and `batch_jacobian`: pfor (`experimental_use_pfor=True`), the
while-loop (`False`, on a persistent tape) and one `tape.gradient` call per
output entry with one-hot `output_gradients` give the same numbers (float64).
Chunking with `parallel_iterations` gives the same result as one chunk, and
`pforjac.pfor` of random loop bodies equals stacking the bodies run eagerly.

Example counts follow the hypothesis profile (see conftest.py): the main
property runs 1,000 examples under `ci` and 20,000 under `long`.
"""
from __future__ import annotations

import collections
import sys
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import pforjac as pj
from random_programs import WITH_LOOPS, C, finite_program_value, random_programs

# A finite result may pass through log(0) = -inf or 1/0 = inf on the way (a zero cotangent
# keeps such an infinity out of the derivative): numpy's notes on that are not findings.
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

PROFILE = settings.get_current_profile_name()
# Read by conftest's terminal summary: examples each property actually ran.
HYPOTHESIS_EXAMPLES: collections.Counter = collections.Counter()


def examples(ci: int, long: int = 20000) -> int:
    """max_examples for this profile; other profiles keep their own default."""
    return {"ci": ci, "long": long}.get(PROFILE, settings.default.max_examples)


RTOL, ATOL = 1e-9, 1e-10
_pfor_module = sys.modules["pforjac.pfor"]


def _strict_pfor():
    """pfor must vectorize every body: a fallback warning is a failure, each example anew."""
    _pfor_module._warned.clear()
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.filterwarnings("error", message="pfor:", category=RuntimeWarning)
    return ctx


def _one_hot(shape, k) -> pj.Tensor:
    seed = np.zeros(int(np.prod(shape, dtype=np.int64)))
    seed[k] = 1.0
    return pj.constant(seed.reshape(shape))


def _per_entry_jacobian(tape, y, x) -> np.ndarray:
    rows = [tape.gradient(y, x, output_gradients=_one_hot(y.shape, k),
                          unconnected_gradients="zero").numpy() for k in range(y.size)]
    return np.asarray(rows).reshape(tuple(y.shape) + tuple(x.shape))


def _per_row_batch_jacobian(tape, y, x) -> np.ndarray:
    """One gradient per entry of a row, the one-hot repeated over the batch."""
    row = tuple(y.shape[1:])
    cols = []
    for k in range(int(np.prod(row, dtype=np.int64))):
        seed = pj.broadcast_to(pj.expand_dims(_one_hot(row, k), 0), y.shape)
        cols.append(tape.gradient(y, x, output_gradients=seed, unconnected_gradients="zero").numpy())
    stacked = np.asarray(cols).reshape((len(cols),) + tuple(x.shape))
    return np.moveaxis(stacked, 1, 0).reshape(tuple(y.shape) + tuple(x.shape[1:]))


def _close(a, b, what: str) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} vs {b.shape}"
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL * scale, err_msg=what)


def check_jacobian_three_ways(f, x_np) -> None:
    x = pj.constant(x_np)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    ctx = _strict_pfor()
    try:
        by_pfor = tape.jacobian(y, x, unconnected_gradients="zero")
    finally:
        ctx.__exit__(None, None, None)
    by_loop = tape.jacobian(y, x, unconnected_gradients="zero", experimental_use_pfor=False)
    want = _per_entry_jacobian(tape, y, x)
    assert by_pfor.dtype == by_loop.dtype == np.float64
    _close(by_pfor.numpy(), want, "jacobian pfor vs per-entry gradients")
    _close(by_loop.numpy(), want, "jacobian while-loop vs per-entry gradients")


def check_batch_jacobian_three_ways(f, xb_np) -> None:
    """y[b] = f(x[b]) for b in the batch: each row depends on its own row only."""
    x = pj.constant(xb_np)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        rows = [pj.reshape(f(x[b]), (-1,)) if f(x[b]).ndim == 0 else f(x[b])
                for b in range(x.shape[0])]
        y = pj.stack(rows)
    with warnings.catch_warnings():      # rows built one by one: the row check may say it can't
        warnings.filterwarnings("ignore", "batch_jacobian could not check")   # see their zeros,
        warnings.filterwarnings("error", "batch_jacobian assumes")    # never that they mix
        ctx = _strict_pfor()
        try:
            by_pfor = tape.batch_jacobian(y, x, unconnected_gradients="zero")
        finally:
            ctx.__exit__(None, None, None)
        by_loop = tape.batch_jacobian(y, x, unconnected_gradients="zero",
                                      experimental_use_pfor=False)
    want = _per_row_batch_jacobian(tape, y, x)
    _close(by_pfor.numpy(), want, "batch_jacobian pfor vs per-row gradients")
    _close(by_loop.numpy(), want, "batch_jacobian while-loop vs per-row gradients")


# -- the main property ----------------------------------------------------------------------
@settings(max_examples=examples(ci=1000))
@given(random_programs(generators=WITH_LOOPS))
def test_jacobian_and_batch_jacobian_agree_three_ways(program):
    f = program.function()
    x = program.x()
    xb = program.x((2,) + (program.x_shape or (1,)))     # batch_jacobian needs rank >= 2
    if not program.x_shape:
        f = (lambda g: lambda row: g(pj.reshape(row, ())))(f)
    assume(finite_program_value(program, x)
           and all(finite_program_value(program, r.reshape(program.x_shape)) for r in xb))
    HYPOTHESIS_EXAMPLES["jacobian/batch_jacobian three ways"] += 1
    check_jacobian_three_ways(f, x)
    check_batch_jacobian_three_ways(f, xb)


# -- parallel_iterations ---------------------------------------------------------------------
# (rows built one by one: the row check may say it cannot see their zeros; this test is
# about chunking, and check_batch_jacobian_three_ways refuses a false "mixes rows")
@pytest.mark.filterwarnings("ignore:batch_jacobian could not check:RuntimeWarning")
@settings(max_examples=examples(ci=300, long=5000))
@given(random_programs(generators=WITH_LOOPS), st.sampled_from([1, 2, 3, 1000]), st.booleans())
def test_parallel_iterations_chunks_agree(program, chunk, batch):
    batch = batch and program.x_shape != ()
    x_np = program.x((2,) + program.x_shape) if batch else program.x()
    assume(all(finite_program_value(program, r) for r in x_np) if batch
           else finite_program_value(program, x_np))
    HYPOTHESIS_EXAMPLES["parallel_iterations chunking"] += 1
    f = program.function()
    x = pj.constant(x_np)
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.stack([pj.reshape(f(x[b]), (-1,)) for b in range(2)]) if batch else f(x)
    jac = tape.batch_jacobian if batch else tape.jacobian
    for use_pfor in (True, False):          # each mode against itself, unchunked
        whole = jac(y, x, unconnected_gradients="zero", experimental_use_pfor=use_pfor).numpy()
        chunked = jac(y, x, unconnected_gradients="zero", parallel_iterations=chunk,
                      experimental_use_pfor=use_pfor).numpy()
        np.testing.assert_array_equal(chunked, whole, f"parallel_iterations={chunk}, pfor={use_pfor}")


# -- pfor of random loop bodies ---------------------------------------------------------------
N_ITERS = 3
BODY_STARTS = [
    "table[i]",                                            # a stacked row
    "x * pj.cast(i, np.float64)",                          # the index in arithmetic
    "x + pj.one_hot(i, {d}, np.float64)",                  # one_hot of the index
    "pj.gather(table, pj.reshape(i, (1,)), axis=0)[0]",    # gather with a stacked index
    "table[i] * x",                                        # stacked times unstacked
    "pj.where(pj.cast(i, np.float64) > 0.5, table[i], x)",
]


@st.composite
def loop_bodies(draw):
    program = draw(random_programs(generators=WITH_LOOPS))
    start = draw(st.sampled_from(BODY_STARTS))
    last_dim = program.x_shape[-1] if program.x_shape else 1
    if "one_hot" in start and program.x_shape == ():
        start = "x"
    return program, start.format(d=last_dim)


@settings(max_examples=examples(ci=300, long=10000))
@given(loop_bodies())
def test_pfor_of_random_bodies_equals_stacked_iterations(body):
    program, start = body
    x_np = program.x()
    table_np = program.x((N_ITERS,) + program.x_shape)
    f = program.function()
    x, table = pj.constant(x_np), pj.constant(table_np)
    scope = {"pj": pj, "np": np, "x": x, "table": table}
    loop_fn = lambda i: f(eval(start, {**scope, "i": i}))  # noqa: E731
    with np.errstate(all="ignore"):
        want = [loop_fn(pj.constant(np.int32(k))).numpy() for k in range(N_ITERS)]
    assume(all(np.all(np.isfinite(w)) for w in want))
    HYPOTHESIS_EXAMPLES["pfor of random bodies"] += 1
    ctx = _strict_pfor()
    try:
        got = pj.pfor(loop_fn, N_ITERS, fallback_to_while_loop=False)
    finally:
        ctx.__exit__(None, None, None)
    _close(got.numpy(), np.stack(want), f"pfor of {start} through\n{program.source}")
    for chunk in (1, 2):
        _close(pj.pfor(loop_fn, N_ITERS, parallel_iterations=chunk).numpy(), np.stack(want),
               f"pfor chunks of {chunk}")


# -- second order: a jacobian of a jacobian (the vectorized program is vectorized again) -------
def _hessian(f, x_np, use_pfor: bool) -> np.ndarray:
    x = pj.constant(x_np)
    with pj.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with pj.GradientTape(persistent=True) as inner:
            inner.watch(x)
            y = f(x)
        first = inner.jacobian(y, x, unconnected_gradients="zero", experimental_use_pfor=use_pfor)
    return outer.jacobian(first, x, unconnected_gradients="zero",
                          experimental_use_pfor=use_pfor).numpy()


@settings(max_examples=examples(ci=400, long=5000))
@given(random_programs(max_steps=4, generators=WITH_LOOPS))
def test_second_order_pfor_matches_while_loop(program):
    x = program.x()
    assume(program.x_shape == () or np.prod(program.x_shape) <= 6)
    assume(finite_program_value(program, x))
    HYPOTHESIS_EXAMPLES["second order pfor vs while-loop"] += 1
    f = program.function()
    ctx = _strict_pfor()
    try:
        by_pfor = _hessian(f, x, True)
    finally:
        ctx.__exit__(None, None, None)
    _close(by_pfor, _hessian(f, x, False), "jacobian of jacobian, pfor vs while-loop")


def test_a_chunk_of_one_iteration_is_bit_identical():
    """Found by the long profile: a stacked row times a matrix is one gemm over all rows,
    and with a single row numpy used gemv, whose sum rounds differently."""
    rng = np.random.default_rng(0)
    x = pj.constant(np.random.default_rng(0).standard_normal(()))
    with pj.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = pj.softmax(pj.neg(x * C((2,), 0)) @ C((2, 2), 0), axis=0)
    whole = tape.jacobian(y, x).numpy()
    for chunk in (1, 2):
        np.testing.assert_array_equal(tape.jacobian(y, x, parallel_iterations=chunk).numpy(), whole)
    v = pj.constant(rng.standard_normal((3, 4)))
    with pj.GradientTape(persistent=True) as tape:    # the stacked operand on the right
        tape.watch(v)
        z = pj.tanh(pj.constant(rng.standard_normal((5, 3))) @ v)
    whole = tape.jacobian(z, v).numpy()
    np.testing.assert_array_equal(tape.jacobian(z, v, parallel_iterations=1).numpy(), whole)
