"""Complex values follow one convention, JAX's (a vjp has no conjugate; the gradient of a
real f at complex z is df/dx - i df/dy, the conjugate of TensorFlow's), in every rule.
Checked against TensorFlow and finite differences."""
import warnings

import numpy as np
import pytest

import pforjac as pj

C = np.complex128(1 + 2j)
Z = np.array([-0.7 + 0.3j, -1.0 + 0j, -2j, 0.8 + 0.5j])


def _fd(f, x, h=1e-6):
    """Central differences of f at real x, column by column."""
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.stack(cols, axis=-1)


def test_abs_of_a_complex_intermediate_keeps_the_chain_rule():
    # |x (1 + 2j)| = sqrt(5) |x|: abs's rule used TensorFlow's conjugate while the others
    # use none, so the chain gave -3/sqrt(5)
    x_np = np.array([1.0, -2.0, 0.5])
    x = pj.constant(x_np)
    with pj.GradientTape(persistent=True) as g:
        g.watch(x)
        y = pj.abs(x * C)
    want = _fd(lambda v: np.abs(v * C), x_np)
    np.testing.assert_allclose(g.gradient(y, x).numpy(), want.sum(axis=0), rtol=1e-8)
    for pfor in (True, False):
        np.testing.assert_allclose(g.jacobian(y, x, experimental_use_pfor=pfor).numpy(), want,
                                   rtol=1e-8, atol=1e-12)
    fwd = pj.jacobian(lambda v: pj.abs(v * C), x, vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(fwd.numpy(), want, rtol=1e-8, atol=1e-12)


def test_the_derivative_of_abs_at_complex_values_in_any_direction():
    z = pj.constant(Z[[0, 3]])
    for t in (np.array([1j, 1j]), np.array([1.0, -0.5 + 2j])):
        _, tangent = pj.jvp(pj.abs, z, t)
        want = np.real(np.conj(Z[[0, 3]]) * t) / np.abs(Z[[0, 3]])
        np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-12)
        assert tangent.dtype == np.float64
    with pj.GradientTape() as g:                      # JAX's: conj(z) / |z|, 0 at 0
        zz = pj.constant(np.array([3 + 4j, 0j]))
        g.watch(zz)
        y = pj.sum(pj.abs(zz))
    np.testing.assert_allclose(g.gradient(y, zz).numpy(), [0.6 - 0.8j, 0])


def test_the_exponents_gradient_at_complex_bases_with_a_negative_real_part():
    # log x was kept only where x > 0, which numpy decides by the real part first
    x = pj.constant(Z)
    y0 = np.array([1.5, 0.5, 2.0, 1.2], complex)      # (a real y would get the real part)
    y = pj.constant(y0)
    with pj.GradientTape() as g:
        g.watch(y)
        p = pj.power(x, y)
    got = np.diag(g.jacobian(p, y).numpy())
    np.testing.assert_allclose(got, Z ** y0 * np.log(Z), rtol=1e-12)


def test_softplus_of_complex_values_is_log1p_of_exp():
    z = pj.constant(Z)
    np.testing.assert_allclose(pj.softplus(z).numpy(), np.log1p(np.exp(Z)), rtol=1e-12)
    with pj.GradientTape() as g:                       # and its derivative is that one's
        g.watch(z)
        y = pj.softplus(z)
    np.testing.assert_allclose(np.diag(g.jacobian(y, z).numpy()), 1 / (1 + np.exp(-Z)), rtol=1e-12)


def test_forward_mode_keeps_the_imaginary_part_of_a_real_to_complex_jacobian():
    x = pj.constant(np.array([1.0, 2.0]))
    fwd = pj.jacobian(lambda v: v * C, x, vectorize=True, strategy="forward-mode")
    assert fwd.dtype == np.complex128                 # as jax.jacfwd and torch give
    np.testing.assert_array_equal(fwd.numpy(), np.diag([C, C]))
    _, t = pj.jvp(lambda v: v * C, x, pj.constant(np.ones(2)))
    np.testing.assert_array_equal(t.numpy(), [C, C])


def test_a_cast_of_complex_to_real_takes_the_real_part_without_a_numpy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(pj.cast(pj.constant(Z), "float64").numpy(), Z.real)


@pytest.mark.parametrize("pfor", [True, False])
def test_holomorphic_gradients_are_the_derivative_itself(pfor):
    z = pj.constant(Z)
    with pj.GradientTape(persistent=True) as g:
        g.watch(z)
        y = pj.exp(z) * z
    np.testing.assert_allclose(np.diag(g.jacobian(y, z, experimental_use_pfor=pfor).numpy()),
                               np.exp(Z) * (Z + 1), rtol=1e-12)
