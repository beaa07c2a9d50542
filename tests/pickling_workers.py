"""Module-level functions for tests/test_pickling.py: standard pickle (what a process pool
uses) sends functions by their qualified name, so what crosses processes lives here."""
import numpy as np

import pforjac as pj


def energy(x):
    return np.sum(np.sin(x) * x[::-1]) + np.sum(x ** 4)


def energy_aux(y, x):
    return np.sum(np.cos(x) * y ** 3), "aux"


def energy_gradient(x):
    return pj.grad(energy)(x)


def heat(u):
    return pj.pad(u, [(1, 1)])[:-2] - 2 * u ** 3 + pj.pad(u, [(1, 1)])[2:]


def chained(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def decay(t, y, k):
    return -k * y + pj.pad(y, [(1, 1)])[2:] * t


@pj.function
def compiled_gradient(x):
    return pj.grad(energy)(x)


def call(obj, *args):
    """obj(*args) in the worker, as a dense array (sparse results: toarray())."""
    out = obj(*args)
    if isinstance(out, tuple):       # value_and_grad's pair, grad's (gradient, aux), vjp's
        out = out[1] if len(out) > 1 and isinstance(out[1], np.ndarray) else out[0]
    return out.toarray() if hasattr(out, "toarray") else np.asarray(out)


def call_scipy_jac(prepared, t, y, *args):
    return prepared.scipy_jac()(t, y, *args).toarray()
