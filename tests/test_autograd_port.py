"""The cases of HIPS autograd's own test-suite, ported (tests/autograd_port/), run on pforjac
Tensors: written with plain numpy / scipy.special / scipy.linalg (numpy's dispatch protocols
run pforjac's ops) and again with `pforjac.numpy`, differentiated by
`pforjac.jacobian(..., vectorize=True)` and `pforjac.hessian`, and compared with values an
independent implementation computed (autograd, else JAX, else central differences: see
tests/autograd_port/make_reference.py, which wrote reference.npz) to 1e-6 in float64."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
import scipy.linalg
import scipy.special

import pforjac as pj
from tests.autograd_port.cases import build
from tests.autograd_port.make_reference import (_leaf_values, leaves, replace, unflatten,
                                                with_values, wrt_paths)
from tests.autograd_port.pending import NAMESPACE_PENDING, NUMPY_PATH_RAISES, PENDING
from tests.autograd_port.spec import Deferred

REF = dict(np.load(pathlib.Path(__file__).parent / "autograd_port" / "reference.npz"))
CASES = build(np, scipy.special, scipy.linalg)
TOL = dict(rtol=1e-6, atol=1e-6)


def _namespace_cases():
    import pforjac.numpy as pnp
    if not hasattr(pnp, "sum"):
        pytest.skip("pforjac.numpy's namespace is not built yet")
    special = pytest.importorskip("pforjac.scipy.special")
    linalg = pytest.importorskip("pforjac.scipy.linalg")
    return build(Deferred(pnp), Deferred(special), Deferred(linalg))


def _stored_args(case, name):
    args, kwargs = case.draw()
    for i, a in enumerate(args):
        for path, _ in leaves(a, ""):
            args[i] = replace(args[i], path, REF[f"{name}|in|a{i}{path}"])
    return args, kwargs


def _flat(out):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return pj.concat([pj.reshape(pj.cast(pj.as_tensor(o), np.float64), (-1,)) for o in outs], 0)


def _check(case, name, hessian: bool):
    args, kwargs = _stored_args(case, name)
    paths = wrt_paths(case, args)
    xs = tuple(pj.constant(np.asarray(v, dtype=np.float64)) for v in _leaf_values(args, paths))
    g = lambda *vs: _flat(case.fn(*with_values(args, paths, vs), **kwargs))
    value = g(*xs)
    assert isinstance(value, pj.Tensor) and value.dtype == np.float64
    np.testing.assert_allclose(value.numpy(), REF[f"{name}|value"], **TOL)
    jacs = pj.jacobian(g, xs, vectorize=True)
    for path, jac, x in zip(paths, jacs, xs):
        assert jac.dtype == np.float64
        np.testing.assert_allclose(jac.numpy().reshape(value.shape[0], x.numpy().size),
                                   REF[f"{name}|jac|{path}"], **TOL, err_msg=f"d/d{path}")
    if hessian and f"{name}|hess" in REF:
        w, shapes = pj.constant(REF[f"{name}|w"]), [tuple(x.shape) for x in xs]
        scalar = lambda z: pj.sum(w * g(*unflatten(pj, z, shapes)))
        z = pj.constant(np.concatenate([x.numpy().ravel() for x in xs]))
        np.testing.assert_allclose(pj.hessian(scalar, z).numpy(), REF[f"{name}|hess"], **TOL,
                                   err_msg="Hessian")


def test_every_case_has_a_reference():
    assert len(CASES) > 300
    missing = [n for n in CASES if f"{n}|value" not in REF]
    assert not missing, f"rerun tests/autograd_port/make_reference.py: {missing[:5]}"


def _params(names, pending=PENDING):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=pending[n]))
            if n in pending else n for n in sorted(names)]


@pytest.mark.parametrize("name", _params(set(CASES) - NUMPY_PATH_RAISES))
def test_numpy_code_on_tensors(name):
    _check(CASES[name], name, hessian=True)


@pytest.mark.parametrize("name", sorted(NUMPY_PATH_RAISES))
def test_calls_the_protocols_never_see_raise(name):
    with pytest.raises(TypeError, match="pforjac"):
        _check(CASES[name], name, hessian=False)


@pytest.fixture(scope="module")
def namespace_cases():
    return _namespace_cases()


@pytest.mark.parametrize("name", _params(CASES, {**PENDING, **NAMESPACE_PENDING}))
def test_pforjac_numpy_namespace(name, namespace_cases):
    _check(namespace_cases[name], name, hessian=False)
