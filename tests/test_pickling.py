"""pforjac.function objects and prepared sparse Jacobians/Hessians pickle, and a real process
pool (the 'spawn' start method: a fresh interpreter) computes what this process does."""
import concurrent.futures
import multiprocessing
import pickle

import numpy as np
import pytest

import pforjac as pj

pjs = pytest.importorskip("pforjac.sparse")
pytest.importorskip("scipy.sparse")
import pickling_workers as w        # noqa: E402


X = np.linspace(-0.7, 0.9, 6)


def _objects():
    """(name, object, call arguments) for every kind that pickles."""
    return [
        ("function", pj.function(w.energy), (X,)),
        ("function of a grad", pj.function(w.energy_gradient), (X,)),
        ("decorated function", w.compiled_gradient, (X,)),
        ("sparse jacobian", pjs.prepare_jacobian(w.heat, X), (X,)),
        ("sparse jacobian, reverse", pjs.prepare_jacobian(w.heat, X, mode="reverse"), (X,)),
        ("sparse hessian", pjs.prepare_hessian(w.chained, X), (X,)),
        ("ode jacobian", pjs.prepare_ode_jacobian(w.decay, 0.0, X, args=(0.5,)), (X, 0.3, 0.5)),
        ("function of pj.grad itself", pj.function(pj.grad(w.energy)), (X,)),
        *_transforms(),
        *_linear_maps(),
    ]


def _linear_maps():
    """(name, object, call arguments) for the functions vjp_fn and linearize return."""
    return [
        ("vjp_fn's vjp_fun", pj.vjp_fn(w.heat, X)[1], (X[::-1].copy(),)),
        ("vjp_fn's vjp_fun, two primals, has_aux",
         pj.vjp_fn(w.energy_aux, X, X + 1.0, has_aux=True)[1], (2.0,)),
        ("linearize's jvp_fun", pj.linearize(w.heat, X)[1], (X ** 2,)),
    ]


def _transforms():
    """(name, object, call arguments) for what each transform returns, options included."""
    return [
        ("grad", pj.grad(w.energy), (X,)),
        ("grad, argnums and has_aux", pj.grad(w.energy_aux, argnums=1, has_aux=True), (X, X)),
        ("value_and_grad", pj.value_and_grad(w.energy), (X,)),
        ("jacrev", pj.jacrev(w.heat), (X,)),
        ("jacfwd, chunked", pj.jacfwd(w.heat, chunk_size=2, progress=False), (X,)),
        ("jacobian (JAX's form)", pj.jacobian(w.heat), (X,)),
        ("hessian (JAX's form)", pj.hessian(w.energy), (X,)),
        ("jacfwd of grad", pj.jacfwd(pj.grad(w.energy)), (X,)),
        ("vmap", pj.vmap(w.energy, in_axes=1), (np.stack([X, X[::-1]], axis=1),)),
    ]


def test_pickles_in_process_give_the_same_results_and_keep_the_colouring():
    for name, obj, args in _objects():
        copy = pickle.loads(pickle.dumps(obj))
        np.testing.assert_array_equal(w.call(copy, *args), w.call(obj, *args), err_msg=name)
        if hasattr(obj, "colors"):
            np.testing.assert_array_equal(copy.colors, obj.colors)
            assert copy.mode == obj.mode and (copy.pattern != obj.pattern).nnz == 0


def test_a_spawned_process_pool_gives_the_in_process_results():
    objects = _objects()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        futures = [pool.submit(w.call, obj, *args) for _, obj, args in objects]
        ode = [o for name, o, _ in objects if name == "ode jacobian"][0]
        scipy_jac = pool.submit(w.call_scipy_jac, ode, 0.3, X, 0.5)
        for (name, obj, args), future in zip(objects, futures):
            np.testing.assert_array_equal(future.result(), w.call(obj, *args), err_msg=name)
        np.testing.assert_array_equal(scipy_jac.result(), w.call_scipy_jac(ode, 0.3, X, 0.5))


def test_linear_maps_pickle_as_the_call_that_makes_them():
    for name, obj, args in _linear_maps():
        copy = pickle.loads(pickle.dumps(obj))
        assert copy.__name__ == obj.__name__ and copy is not obj, name
        np.testing.assert_array_equal(w.call(copy, *args), w.call(obj, *args), err_msg=name)
    out, jvp_fun = pj.linearize(w.heat, X)      # the linear map itself, not a constant
    copy = pickle.loads(pickle.dumps(jvp_fun))
    np.testing.assert_allclose(copy(X) + copy(2 * X), 3 * jvp_fun(X), rtol=1e-14)


def test_joblib_if_installed():
    joblib = pytest.importorskip("joblib", reason="joblib is not installed (pforjac's test "
                                                  "extra lists it; CI installs that)")
    f = pj.function(lambda x: np.sum(x ** 3))    # joblib's cloudpickle sends lambdas by value
    _, vjp_fun = pj.vjp_fn(lambda x: np.sin(x) * x, X)
    jac = pjs.prepare_jacobian(w.heat, X)
    jobs = [joblib.delayed(w.call)(f, X + k) for k in range(2)] + [
        joblib.delayed(w.call)(vjp_fun, X), joblib.delayed(w.call)(jac, X)]
    out = joblib.Parallel(n_jobs=2)(jobs)
    for k, r in enumerate(out[:2]):
        assert r == pytest.approx(np.sum((X + k) ** 3))
    np.testing.assert_allclose(out[2], (np.cos(X) * X + np.sin(X)) * X, rtol=1e-14)
    np.testing.assert_array_equal(out[3], jac(X).toarray())


def test_transforms_pickle_as_the_call_that_makes_them_with_their_options():
    for name, obj, args in _transforms():
        copy = pickle.loads(pickle.dumps(obj))
        assert type(copy) is type(obj) and copy._recipe[2:] == obj._recipe[2:], name
        assert copy.__name__ == obj.__name__
        np.testing.assert_array_equal(w.call(copy, *args), w.call(obj, *args), err_msg=name)


def test_lambdas_are_refused_by_standard_pickle_naming_the_function_and_the_way_out():
    with pytest.raises(pickle.PicklingError, match=r"pforjac.function '<lambda>'.*module level.*"
                                                   r"cloudpickle"):
        pickle.dumps(pj.function(lambda x: x * 2))
    with pytest.raises(pickle.PicklingError, match=r"pforjac.grad\(<lambda>\).*module level"):
        pickle.dumps(pj.function(pj.grad(lambda x: np.sum(x ** 2))))
    with pytest.raises(pickle.PicklingError, match=r"pforjac.hessian\(<lambda>\)"):
        pickle.dumps(pj.hessian(lambda x: np.sum(x ** 3)))
    with pytest.raises(pickle.PicklingError, match=r"pforjac.vjp_fn\(<lambda>\).*module level"):
        pickle.dumps(pj.vjp_fn(lambda x: x * 2, X)[1])
    with pytest.raises(pickle.PicklingError, match=r"pforjac.linearize\(<lambda>\)"):
        pickle.dumps(pj.linearize(lambda x: x * 2, X)[1])

    def local_rhs(t, y):
        return -y
    p = pjs.prepare_ode_jacobian(local_rhs, 0.0, X)
    with pytest.raises(pickle.PicklingError, match="local_rhs.*module level"):
        pickle.dumps(p)


def test_cloudpickle_sends_lambdas_by_value():
    cloudpickle = pytest.importorskip("cloudpickle")
    f = pj.function(lambda x: x * 3)
    np.testing.assert_array_equal(cloudpickle.loads(cloudpickle.dumps(f))(X), X * 3)
    p = pjs.prepare_jacobian(lambda u: u[1:] * u[:-1], X)
    q = cloudpickle.loads(cloudpickle.dumps(p))
    np.testing.assert_array_equal(q(X).toarray(), p(X).toarray())
