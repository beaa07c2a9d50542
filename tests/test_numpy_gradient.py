"""np.gradient on Tensors (pforjac/numpy/_gradient.py): numpy's values, and derivatives that
are numpy's own linear map (np.gradient applied to each basis vector)."""
from __future__ import annotations

import numpy as np
import pytest

import pforjac as pj

from helpers import no_fallback, pfor_and_loop_jacobians

_CASES = [((10,), (), {}), ((5, 4), (), {}), ((5, 4), (), {"axis": 0}), ((5, 4), (), {"axis": -1}),
          ((5, 4, 3), (2.0, 0.5), {"axis": (2, 0)}), ((5, 4), (0.3,), {"edge_order": 2}),
          ((3, 4), (0.5, 2.0), {"edge_order": 2}), ((2, 3), (), {"axis": 0}), ((4, 2), (), {"axis": ()})]


def _flat(out):
    if isinstance(out, tuple):
        return np.concatenate([np.ravel(o) for o in out] or [np.zeros(0)])
    return out.ravel()


@no_fallback
@pytest.mark.parametrize("shape, spacing, kw", _CASES)
def test_gradient_has_numpys_values_and_its_linear_map_as_jacobian(shape, spacing, kw):
    x = np.random.default_rng(5).standard_normal(shape)
    want, got = np.gradient(x, *spacing, **kw), np.gradient(pj.constant(x), *spacing, **kw)
    assert type(got) is (tuple if isinstance(want, tuple) else pj.Tensor)
    np.testing.assert_allclose(_flat(tuple(t.numpy() for t in got) if isinstance(got, tuple)
                                     else got.numpy()), _flat(want), rtol=1e-13, atol=1e-13)
    if not _flat(want).size:
        return
    basis = np.eye(x.size).reshape((x.size,) + shape)
    linear_map = np.stack([_flat(np.gradient(e, *spacing, **kw)) for e in basis], axis=1)
    f = lambda t: pj.concat([pj.reshape(o, (-1,)) for o in np.gradient(t, *spacing, **kw)]) \
        if isinstance(want, tuple) else pj.reshape(np.gradient(t, *spacing, **kw), (-1,))
    pfor, loop = pfor_and_loop_jacobians(f, x)
    for jac in (pfor, loop, pj.jacobian(f, pj.constant(x), strategy="forward-mode",
                                        vectorize=True).numpy()):
        np.testing.assert_allclose(jac.reshape(linear_map.shape), linear_map, rtol=1e-13, atol=1e-13)


def test_gradient_of_integers_is_float64_and_a_tensor_spacing_is_differentiated():
    assert np.gradient(pj.constant(np.arange(5))).dtype == np.float64
    x = np.random.default_rng(6).standard_normal(6)
    jac = pj.jacobian(lambda h: np.gradient(pj.constant(x), h), pj.constant(np.float64(0.5))).numpy()
    np.testing.assert_allclose(jac, -np.gradient(x, 0.5) / 0.5, rtol=1e-13)


@pytest.mark.parametrize("args, kw, error, message", [
    (((1,),), {}, ValueError, r"axis 0 of the array of shape \(1,\) has 1 entries; edge_order=1"),
    (((2, 4),), {"edge_order": 2}, ValueError, r"axis 0 .* has 2 entries; edge_order=2 needs at least 3"),
    (((3, 3), 1.0, 2.0, 3.0), {}, TypeError, r"3 spacings for 2 axes"),
    (((3, 3), np.arange(3.0)), {"axis": 0}, TypeError, r"scalar spacings only, not coordinate arrays"),
    (((3, 3),), {"edge_order": 3}, ValueError, r"edge_order must be 1 or 2"),
    (((3, 3),), {"axis": (0, -2)}, ValueError, r"repeats an axis"),
])
def test_gradient_refuses_what_it_does_not_do_by_name(args, kw, error, message):
    with pytest.raises(error, match=message):
        np.gradient(pj.constant(np.ones(args[0])), *args[1:], **kw)
