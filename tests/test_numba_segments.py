"""A Program with ops numba cannot lower runs as numba segments joined by numpy calls: the
cut (independent work shares a segment, the fewest segments the dependencies allow), the
results (the numpy backend's, to a few ulps), the one warning per function, and the
whole-program numpy fallback past MAX_SEGMENTS numba segments."""
import warnings

import numpy as np
import pytest

import pforjac as pj
from pforjac import extend
from pforjac.compiled import numba_backend
from pforjac.compiled.numba_codegen import declined_equations
from pforjac.compiled.numba_segments import split_program
from pforjac.program import make_program
from pforjac.testing import isolated_registries

numba = pytest.importorskip("numba")


def _ops():
    """Two contributed ops without numba rules: an elementwise one and a reduction."""
    cube = extend.defop("test_seg_cube", lambda x: x * x * x, extend.same_shape,
                        vjp=lambda g, ans, x: g * 3.0 * x * x, elementwise=True,
                        domain=("real",))
    total = extend.defop("test_seg_total", lambda x: np.sum(x, keepdims=True),
                         lambda x: ((1,), x.dtype),
                         vjp=lambda g, ans, x: pj.numpy.broadcast_to(g, x.shape))
    return cube, total


def _model(cube, total):
    def f(x, w):
        y = pj.sin(x) * w                        # numba
        u = pj.exp(-x)                           # numba, independent of the cubes
        z = cube(y) + total(y) * u               # numpy, then numba
        return pj.numpy.sum(pj.tanh(cube(z)) * x)   # numpy again, then numba
    return f


def test_the_cut_puts_independent_work_in_one_segment_and_keeps_results():
    with isolated_registries():
        f = _model(*_ops())
        program = make_program(f, [((6,), np.float64), ((6,), np.float64)])
        declined = declined_equations(program)
        assert sorted({program.equations[k].prim.name for k in declined}) == \
            ["test_seg_cube", "test_seg_total"]
        segments = split_program(program, set(declined))
        assert [s.native for s in segments] == [True, False, True, False, True]
        assert sum(len(s.program.equations) for s in segments) == len(program.equations)
        first = {e.prim.name for e in segments[0].program.equations}
        assert {"sin", "exp"} <= first           # exp(-x) does not wait for the cube


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_segments_agree_with_the_numpy_backend_and_warn_once(dtype):
    with isolated_registries():
        f = _model(*_ops())
        rng = np.random.default_rng(1)
        x, w = rng.uniform(-1, 1, 6).astype(dtype), rng.uniform(0.5, 1.5, 6).astype(dtype)
        grad = pj.grad(f, argnums=(0, 1))
        native = pj.function(lambda x, w: (f(x, w), grad(x, w)), backend="numba")
        with pytest.warns(RuntimeWarning, match="test_seg_cube, test_seg_total.*segments") as rec:
            got = native(x, w)
            native(x * 2, w)
        assert len([r for r in rec if "numba" in str(r.message)]) == 1
        want = pj.function(lambda x, w: (f(x, w), grad(x, w)), backend="numpy")(x, w)
        assert next(iter(native._cache.values())).backend == "numba+numpy"
        eps = np.finfo(dtype).eps
        for g, v in zip(pj.tree_util.tree_leaves(got), pj.tree_util.tree_leaves(want)):
            assert g.dtype == v.dtype == dtype
            np.testing.assert_allclose(g, v, rtol=16 * eps, atol=16 * eps * np.abs(v).max())


def test_past_max_segments_the_whole_program_runs_on_numpy(monkeypatch):
    monkeypatch.setattr(numba_backend, "MAX_SEGMENTS", 2)
    with isolated_registries():
        f = _model(*_ops())
        native = pj.function(f, backend="numba")
        x = np.linspace(-1, 1, 6)
        with pytest.warns(RuntimeWarning, match="numpy backend, not numba.*test_seg_cube.*between 3"):
            got = native(x, x + 2)
        assert next(iter(native._cache.values())).backend == "numpy"
        np.testing.assert_array_equal(got, pj.function(f)(x, x + 2))


def test_a_hessian_through_an_op_without_a_rule_runs_in_segments():
    """The Hessian reads one broadcast operand in two ufuncs: the simplified program reads
    it through one view (each variable keeps a name of its own), and its numba segment
    takes it once."""
    with isolated_registries():
        cube = extend.defop("test_seg_cube3", lambda x: x ** 3, extend.same_shape,
                            vjp=lambda g, ans, x: g * 3.0 * x * x,
                            jvp=lambda t, ans, x: t * 3.0 * x * x)
        f = lambda x: pj.numpy.sum(pj.numpy.sin(cube(x)) * pj.numpy.exp(x))
        x = np.linspace(0.1, 1, 6)
        native = pj.function(pj.hessian(f), backend="numba")
        with pytest.warns(RuntimeWarning, match="test_seg_cube3"):
            got = native(x)
        assert next(iter(native._cache.values())).backend == "numba+numpy"
        want = pj.function(pj.hessian(f), backend="numpy")(x)
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        program = native.program(x)
        names = [v.name for v in [*program.inputs, *program.consts,
                                  *(v for e in program.equations for v in e.outputs)]]
        assert len(names) == len(set(names))
        h = 1e-5                           # (and it is the Hessian: central differences of the gradient)
        grad = pj.function(pj.grad(f), backend="numpy")
        fd = np.stack([(grad(x + h * e) - grad(x - h * e)) / (2 * h) for e in np.eye(6)])
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)
