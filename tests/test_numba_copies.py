"""Copies permuting axes in the numba backend's generated code (numba_copies.py): a loop
nest that only copies one array into another at permuted indices becomes a call of a
kernel compiled once per machine; the kernel copies the same elements in the same order,
and nests doing anything more stay as they are."""
import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_copies import copy_calls


def _copy_nest(out: str, source: str, sizes, read) -> list[str]:
    lines = [f"{out} = K.empty({tuple(sizes)}, np.float64)"]
    for k, size in enumerate(sizes):
        lines.append("    " * k + f"for i_{k} in range({size}):")
    pad = "    " * len(sizes)
    return lines + [f"{pad}s_{out} = {source}[{read}]", f"{pad}{out}[{', '.join(f'i_{k}' for k in range(len(sizes)))}] = s_{out}"]


def test_a_permuting_copy_nest_becomes_one_kernel_call():
    lines = _copy_nest("t_1", "v_a", (2, 3, 4), "i_1, i_2, i_0") + ["return (t_1,)"]
    assert copy_calls(lines) == [lines[0], "K.permute_into3(t_1, v_a, (2, 0, 1), (2, 3, 4))",
                                 "return (t_1,)"]


@pytest.mark.parametrize("read", ["i_1, 0, i_0",            # (a fixed index: no permutation)
                                  "i_1, i_1",                # (an index twice)
                                  "i_0, i_1"])               # (reads its own target)
def test_nests_that_are_not_plain_permutations_stay(read):
    source = "t_1" if read == "i_0, i_1" else "v_a"
    lines = _copy_nest("t_1", source, (2, 3), read) + ["return (t_1,)"]
    assert copy_calls(lines) == lines


def test_a_nest_computing_or_storing_more_stays():
    computing = _copy_nest("t_1", "v_a", (2, 3), "i_1, i_0")
    computing.insert(4, "        s_t_1 = np.exp(s_t_1)")
    one_row = ["for i_0 in range(3):", "    s_t_2 = v_a[i_0, i_1]", "    t_2[i_0, 0] = s_t_2"]
    longer = _copy_nest("t_3", "v_a", (2, 3), "i_1, i_0") + ["    t_3[i_0, 0] = 0.0"]
    into_an_input = _copy_nest("v_b", "v_a", (2, 3), "i_1, i_0")[1:]     # (no new array)
    for lines in (computing, one_row, longer, into_an_input):
        assert copy_calls(lines + ["return 0"]) == lines + ["return 0"]


@pytest.mark.parametrize("rank", [2, 3, 4, 5])
def test_the_kernels_copy_as_numpy_transposes(rank):
    numba = pytest.importorskip("numba")  # noqa: F841
    from pforjac.compiled import numba_copy_kernels
    rng = np.random.default_rng(rank)
    shape = (2, 3, 4, 5, 3)[:rank]
    x = rng.normal(size=tuple(2 * d for d in shape)).astype(np.float32)[(slice(None, None, 2),) * rank]
    x[(0,) * rank] = -0.0
    axes = tuple(rng.permutation(rank))
    want = np.transpose(x, axes)
    out = np.full(want.shape, np.nan, np.float32)
    getattr(numba_copy_kernels, f"permute_into{rank}")(out, x, axes, want.shape)
    assert np.array_equal(out.view(np.int32), np.ascontiguousarray(want).view(np.int32))


def _transposed_layer(x, w):
    return pj.tanh(pj.transpose(x, (1, 0, 2)) @ w)


def test_a_transposed_operand_is_a_kernel_copy_and_computes_the_same(monkeypatch):
    """The same bits as the nest it replaces (and the numpy backend's to rounding)."""
    pytest.importorskip("numba")
    from pforjac.compiled import numba_codegen
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(3, 4, 5)), rng.normal(size=(5, 6))
    f = pj.function(_transposed_layer, backend="numba")
    assert "K.permute_into3(" in numba_codegen.numba_source(f.program(x, w))
    got = f(x, w)
    monkeypatch.setattr(numba_codegen, "copy_calls", lambda lines: lines)
    nest = pj.function(_transposed_layer, backend="numba")
    assert "K.permute_into" not in numba_codegen.numba_source(nest.program(x, w))
    assert np.array_equal(got.view(np.int64), nest(x, w).view(np.int64))
    np.testing.assert_allclose(got, pj.function(_transposed_layer)(x, w), rtol=1e-13)


def _two_gathers(x, y):
    from pforjac.ops.indexing import gather
    idx = np.array([2, 0, 1, 2])
    return pj.tanh(gather(x, idx, 0)) * gather(y, idx, 0)


def test_gathers_by_one_constant_index_array_share_its_positions():
    """A statement fewer to compile: the positions of a constant (or input) index array
    are made once; a computed one's at every gather."""
    pytest.importorskip("numba")
    from pforjac.compiled.numba_codegen import numba_source
    x, y = np.arange(12.0).reshape(3, 4), np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    f = pj.function(_two_gathers, backend="numba")
    assert numba_source(f.program(x, y)).count("K.positions(") == 1
    want = np.tanh(x[[2, 0, 1, 2]]) * y[[2, 0, 1, 2]]
    np.testing.assert_allclose(f(x, y), want, rtol=1e-15)
