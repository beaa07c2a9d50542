"""Compile time of the numba backend's generated code (numba_outline.py, numba_context.py):
repeated loop nests become one helper compiled once, the integers a step indexes with its
arguments; transposes are made by `as_strided`, products and allocations through cached
kernels. The code computes what it computed before: checked by running the generated
source with and without outlining as plain Python, and against the numpy backend."""
import types

import numpy as np
import pytest

import pforjac as pj
from pforjac.compiled.numba_codegen import numba_source
from pforjac.compiled.numba_outline import outline


def _nest(out: str, source: str, step: int) -> list[str]:
    return [f"{out} = np.empty((2, 3), np.float64)",
            "for i_0 in range(2):",
            "    for i_1 in range(3):",
            f"        s_{out} = {source}[i_0, {step}, i_1]",
            f"        {out}[i_0, i_1] = np.multiply(s_{out}, s_{out})"]


def test_nests_differing_in_the_step_they_read_share_one_helper():
    lines = [*_nest("t_1", "v_a", 0), *_nest("t_2", "v_a", 3), "v_b = t_1.shape[1]",
             "for i_0 in range(2):", "    t_2[i_0, 0] = t_1[i_0, 1]", "return (t_1, t_2, v_b)"]
    helpers, body = outline(lines, ["v_a"])
    assert len(helpers) == 1 and "def nest_" in helpers[0] and "a_0[i_0, n_0, i_1]" in helpers[0]
    name = helpers[0].split("def ")[1].split("(")[0]
    assert body[:2] == [f"t_1 = {name}(v_a, np.intp(0))", f"t_2 = {name}(v_a, np.intp(3))"]
    assert body[2:] == lines[10:]        # (a nest written once stays; a tuple's index too)


def test_a_nest_overwriting_an_array_names_it_inside_its_helper():
    """A nest writing its result into the array it reads (a product's, dead after it) gets
    that array once, so the helper's loops read and write one array, not two arguments
    LLVM must assume may overlap (which keeps them from being vectorized)."""
    steps = [[f"v_{k} = t_{k}", "for i_0 in range(4):", f"    v_{k}[i_0] = np.tanh(t_{k}[i_0])"]
             for k in range(3)]
    lines = [line for step in steps for line in step] + ["return (v_0, v_1, v_2)"]
    helpers, body = outline(lines, ["t_0", "t_1", "t_2"])
    assert len(helpers) == 1 and "    l_0 = a_0\n" in helpers[0]
    assert [line.split("(")[1] for line in body[:3]] == ["t_0)", "t_1)", "t_2)"]


def _run(helpers: list[str], body: list[str], params: list[str], args, kernels=None) -> tuple:
    """The generated lines run as plain Python (numba's decorators made identities)."""
    identity = types.SimpleNamespace(njit=lambda *a, **k: (lambda f: f))
    namespace = {"np": np, "numba": identity, "K": kernels}
    source = "".join(h + "\n" for h in helpers) + f"def program({', '.join(params)}):\n" + \
        "".join(f"    {line}\n" for line in body)
    exec(compile(source, "<generated>", "exec"), namespace)     # noqa: S102 (our own source)
    return namespace["program"](*args)


def _rnn(x, wx, wh):
    h = pj.tanh(x[:, 0] @ wx)
    for t in range(1, x.shape[1]):
        h = pj.tanh(x[:, t] @ wx + h @ wh)
    return pj.numpy.sum(h * h)


def _body(source: str) -> tuple[list[str], list[str]]:
    head, body = source.split("def program(")[1].split("):\n", 1)
    return head.split(", "), [line[4:] for line in body.splitlines()]


def test_an_unrolled_recurrence_is_a_few_helpers_and_computes_the_same():
    pytest.importorskip("numba")
    rng = np.random.default_rng(0)
    x, wx, wh = rng.normal(size=(3, 6, 2)), rng.normal(size=(2, 4)), 0.5 * rng.normal(size=(4, 4))
    grad = pj.grad(_rnn, argnums=(1, 2))
    f = pj.function(grad, backend="numba")
    source = numba_source(f.program(x, wx, wh))
    assert source.count("def nest_") < 6 <= source.count("= nest_")     # (12 steps, a few helpers)
    for got, want in zip(f(x, wx, wh), pj.function(grad, backend="numpy")(x, wx, wh)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


class _PlainKernels:
    """The kernels as plain numpy where numpy has them (the rest: numba's, called from Python)."""
    empty, zeros, dot = staticmethod(np.empty), staticmethod(np.zeros), staticmethod(np.dot)

    @staticmethod
    def merged_axes(a, lo, hi):          # (numba's intrinsic: a view, as this reshape is)
        return a.reshape(a.shape[:lo] + (-1,) + a.shape[hi:])

    @staticmethod
    def reshaped(a, shape):              # (numba's intrinsic: a C-order view)
        return a.reshape(shape)

    def __getattr__(self, name):
        from pforjac.compiled.numba_backend import kernels
        return getattr(kernels(), name)


def test_outlining_keeps_every_value_bit_for_bit(monkeypatch):
    """The generated source of an unrolled gradient, without and with its helpers (of loop
    nests, and of runs of steps calling those), run as plain Python."""
    pytest.importorskip("numba")
    from pforjac.compiled import numba_codegen
    rng = np.random.default_rng(1)
    x, wx, wh = rng.normal(size=(3, 8, 2)), rng.normal(size=(2, 4)), 0.5 * rng.normal(size=(4, 4))
    program = pj.function(pj.grad(_rnn, argnums=(1, 2))).program(x, wx, wh)
    monkeypatch.setattr(numba_codegen, "outline", lambda lines, params, calls=None: ([], lines))
    params, lines = _body(numba_source(program))
    helpers, outlined = outline(lines, params)
    assert len(helpers) >= 2 and len(outlined) < len(lines) - 20
    assert any("= nest_" in h for h in helpers)         # (a run of steps: a helper of helpers)
    args = [x, wx, wh] + [c.numpy() for c in program.const_values]
    inline, called = (_run(h, body, params, args, _PlainKernels())
                      for h, body in (([], lines), (helpers, outlined)))
    for a, b in zip(inline, called):
        np.testing.assert_array_equal(b, a)


def _transposed_product(x, w):
    return pj.transpose(pj.reshape(x @ w, (2, 3, 4)), (1, 0, 2))


def test_a_returned_transpose_is_a_strided_view_and_agrees():
    pytest.importorskip("numba")
    x, w = np.arange(12.0).reshape(6, 2), np.linspace(-1.0, 1.0, 8).reshape(2, 4)
    f = pj.function(_transposed_product, backend="numba")
    np.testing.assert_array_equal(f(x, w), np.transpose((x @ w).reshape(2, 3, 4), (1, 0, 2)))
    source = numba_source(f.program(x, w))
    assert "np.lib.stride_tricks.as_strided(" in source and "np.transpose(" not in source
    assert "K.dot(" in source and "np.dot(" not in source


def test_the_helpers_values_are_type_checked_as_the_programs(tmp_path, monkeypatch):
    """A fresh compile checks the values inside the helpers too: under a call naming a
    program value of another rank, the check refuses the code (the program then runs on
    numpy)."""
    pytest.importorskip("numba")
    from pforjac.compiled import numba_backend
    monkeypatch.setenv("PFORJAC_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(2)
    x, wx, wh = rng.normal(size=(3, 8, 2)), rng.normal(size=(2, 4)), 0.5 * rng.normal(size=(4, 4))
    f = pj.function(pj.grad(_rnn, argnums=(1, 2)), backend="numba")
    f(x, wx, wh)
    program, calls = f.program(x, wx, wh), []
    numba_source(program, "program", numba_backend._baked_consts(program), None, calls)
    dispatcher = next(iter(f._cache.values())).code.dispatcher
    signature = dispatcher.signatures[0]
    numba_backend._check_types(program, dispatcher, signature, tmp_path / "none.py", calls)
    module = __import__("sys").modules[dispatcher.py_func.__module__]
    helper, names = next((h, n) for h, n in calls if any(k.startswith("l_") and k in (
        getattr(module, h).overloads[getattr(module, h).signatures[0]].type_annotation.typemap) for k in n))
    typemap = getattr(module, helper).overloads[getattr(module, helper).signatures[0]].type_annotation.typemap
    own = next(k for k in names if k.startswith("l_") and getattr(typemap.get(k), "ndim", 0) == 2)
    x_name = numba_backend._named(program)[program.inputs[0]]        # (a 3-D value)
    wrong = [(helper, {**names, own: x_name})]
    with pytest.raises(numba_backend.BackendFallback, match="program declares"):
        numba_backend._check_types(program, dispatcher, signature, tmp_path / "none.py", wrong)
