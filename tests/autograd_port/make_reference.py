"""Writes `reference.npz`: for every ported case, its inputs, numpy's value, and the Jacobians
and Hessian from an independent implementation: autograd (the suite the cases come from), else
JAX, else central finite differences in float64 for the Jacobian (no Hessian then). An
oracle's Jacobian must agree with central differences (to 1e-4) or the next one is asked:
autograd returns zeros for multi_dot, silently.

Run it with an interpreter that has autograd, jax and scipy (never pforjac's dependencies):
    /tmp/fw/bin/python -m tests.autograd_port.make_reference
from the project root. The file records which oracle gave each case.
"""
from __future__ import annotations

import math
import pathlib
import sys
import warnings
import zlib

import numpy as onp

from .cases import build
from .spec import Deferred

OUT = pathlib.Path(__file__).with_name("reference.npz")


def leaves(value, path=""):
    """(path, array) for every array in a (nested) argument; the path names its place."""
    if isinstance(value, onp.ndarray):
        yield path, value
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from leaves(v, f"{path}.{i}")


def replace(value, path, new):
    if not path:
        return new
    head, _, rest = path[1:].partition(".")
    i = int(head)
    items = list(value)
    items[i] = replace(items[i], "." + rest if rest else "", new)
    return type(value)(items)


def wrt_paths(case, args):
    return [f"a{i}{p}" for i in case.wrt for p, _ in leaves(args[i])]


def with_values(args, paths, values):
    """The arguments with the leaves at `paths` replaced by `values`."""
    args = list(args)
    for path, v in zip(paths, values):
        i, _, rest = path[1:].partition(".")
        args[int(i)] = replace(args[int(i)], "." + rest if rest else "", v)
    return args


def flat(xp, out):
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return xp.concatenate([xp.reshape(o, (-1,)) * 1.0 for o in outs])


def unflatten(xp, z, shapes) -> list:
    """The flat vector `z` cut into arrays of `shapes`, with `xp`'s reshape (autograd's,
    JAX's or pforjac's: the scalar whose Hessian is compared takes all leaves as one z)."""
    parts, start = [], 0
    for shape in shapes:
        n = math.prod(shape)
        parts.append(xp.reshape(z[start:start + n], shape))
        start += n
    return parts


def _oracle(xp, jacobian, hessian, case, args, kwargs, paths, w):
    """Jacobians of the flat output w.r.t. each leaf, and the Hessian of sum(w * output)
    w.r.t. all leaves, by a library's `jacobian` and `hessian` transforms."""
    leaves_ = _leaf_values(args, paths)
    g = lambda *vs: flat(xp, case.fn(*with_values(args, paths, vs), **kwargs))
    along = lambda k: lambda v: g(*[v if j == k else leaf for j, leaf in enumerate(leaves_)])
    jacs = [onp.asarray(jacobian(along(k))(leaf)) for k, leaf in enumerate(leaves_)]
    if not case.hessian:
        return jacs, None
    shapes = [a.shape for a in leaves_]
    scalar = lambda z: xp.sum(w * g(*unflatten(xp, z, shapes)))
    return jacs, onp.asarray(hessian(scalar)(onp.concatenate([a.ravel() for a in leaves_])))


def oracle_autograd(case, args, kwargs, paths, w):
    import autograd
    import autograd.numpy as anp
    return _oracle(anp, autograd.jacobian, autograd.hessian, case, args, kwargs, paths, w)


def oracle_jax(case, args, kwargs, paths, w):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    return _oracle(jnp, jax.jacobian, jax.hessian, case, args, kwargs, paths, w)


def oracle_fd(case, args, kwargs, paths, w):
    import numpy
    leaves_ = _leaf_values(args, paths)
    g = lambda *vs: flat(numpy, case.fn(*with_values(args, paths, vs), **kwargs))
    jacs = []
    for k, a in enumerate(leaves_):
        cols = []
        for i in range(a.size):
            h = 1e-6 * max(1.0, abs(a.flat[i]))
            up, down = a.copy(), a.copy()
            up.flat[i] += h
            down.flat[i] -= h
            vs_up = [up if j == k else leaves_[j] for j in range(len(paths))]
            vs_down = [down if j == k else leaves_[j] for j in range(len(paths))]
            cols.append((g(*vs_up) - g(*vs_down)) / (2 * h))
        jacs.append(onp.stack(cols, -1).reshape((-1,) + a.shape) if cols else
                    onp.zeros((g(*leaves_).size,) + a.shape))
    return jacs, None


def _leaf_values(args, paths):
    values = []
    for p in paths:
        i, _, rest = p[1:].partition(".")
        v = args[int(i)]
        for part in (rest.split(".") if rest else []):
            v = v[int(part)]
        values.append(v)
    return values


def reference(name, case_ag, case_jax, case_np, record):
    args, kwargs = case_np.draw()
    paths = wrt_paths(case_np, args)
    import numpy
    value = flat(numpy, case_np.fn(*args, **kwargs))
    w = onp.random.default_rng(zlib.crc32(name.encode()) + 1).standard_normal(value.size)
    for i, a in enumerate(args):
        for p, leaf in leaves(a, f"a{i}"):
            record[f"{name}|in|{p}"] = leaf
    record[f"{name}|value"] = value
    record[f"{name}|w"] = w
    for oracle, case in (("autograd", case_ag), ("jax", case_jax), ("fd", case_np)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                jacs, hess = globals()[f"oracle_{oracle}"](case, args, kwargs, paths, w)
            jacs = [onp.asarray(j, dtype=float).reshape(value.size, leaf.size)
                    for j, leaf in zip(jacs, _leaf_values(args, paths))]
            if not all(onp.isfinite(j).all() for j in jacs):
                raise FloatingPointError("non-finite Jacobian")
            if oracle != "fd":                    # an oracle that is silently wrong is refused
                fd, _ = oracle_fd(case_np, args, kwargs, paths, w)
                for j, d in zip(jacs, fd):
                    if not onp.allclose(j, d.reshape(j.shape), rtol=1e-4, atol=1e-5):
                        raise ArithmeticError(f"{oracle} disagrees with central differences")
            break
        except Exception as exc:          # the next oracle
            last = exc
    else:
        raise RuntimeError(f"{name}: no oracle: {last}")
    record[f"{name}|oracle"] = onp.array(oracle)
    for p, j in zip(paths, jacs):
        record[f"{name}|jac|{p}"] = j
    if hess is not None and onp.isfinite(hess).all():
        record[f"{name}|hess"] = onp.asarray(hess, dtype=float)


def main():
    import autograd.numpy as anp
    import autograd.scipy.linalg as ala
    import autograd.scipy.special as asp
    import jax.numpy as jnp
    import jax.scipy.linalg as jla
    import jax.scipy.special as jsp
    import numpy
    import scipy.linalg
    import scipy.special
    ag = build(Deferred(anp), Deferred(asp), Deferred(ala))
    jx = build(Deferred(jnp), Deferred(jsp), Deferred(jla))
    np_cases = build(numpy, scipy.special, scipy.linalg)
    record, counts = {}, {}
    done = dict(onp.load(OUT)) if OUT.exists() else {}
    for name, case in np_cases.items():
        if f"{name}|oracle" in done:              # reruns only compute new cases
            record.update({k: v for k, v in done.items() if k.split("|")[0] == name})
        else:
            reference(name, ag[name], jx[name], case, record)
            print(name, record[f"{name}|oracle"], file=sys.stderr, flush=True)
            if len(record) % 50 < 6:
                onp.savez_compressed(OUT, **{**done, **record})
        oracle = str(record[f"{name}|oracle"])
        counts[oracle] = counts.get(oracle, 0) + 1
    onp.savez_compressed(OUT, **record)
    print(f"{len(np_cases)} cases -> {OUT}; oracles: {counts}", file=sys.stderr)


if __name__ == "__main__":
    main()
