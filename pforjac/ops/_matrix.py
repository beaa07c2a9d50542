"""What the dense linear algebra ops share: numpy.linalg's dtypes, shape checks, triangles
and diagonals as masks (pforjac ops, so rules built from them differentiate), and the
matrices their generated checks draw."""
from __future__ import annotations

import numpy as np

from .. import core
from .broadcasting import sum
from .elementwise import cast, divide, equal
from .shape import expand_dims, swapaxes


# -- dtypes, shapes, triangles ---------------------------------------------------------------
def result_dtype(op: str, *dtypes) -> np.dtype:
    """The dtype numpy.linalg returns: a float dtype kept, integers and bools as float64."""
    out = []
    for d in map(np.dtype, dtypes):
        if d.kind not in "biuf":
            raise TypeError(f"{op}: pforjac's linear algebra takes real matrices (float, int or "
                            f"bool), got {d}; complex matrices are not supported")
        out.append(d if d.kind == "f" else np.dtype(np.float64))
    return np.result_type(*out)


def lapack(fn, name: str):
    """numpy's forward in a dtype LAPACK takes, its results in `result_dtype`."""
    def impl(*xs, **params):
        dtype = result_dtype(name, *(x.dtype for x in xs))
        work = np.float32 if dtype == np.float16 else dtype
        outs = fn(*(np.asarray(x, work) for x in xs), **params)
        if isinstance(outs, tuple):
            return tuple(np.asarray(o, dtype) for o in outs)
        return np.asarray(outs, dtype)
    impl.__name__ = name
    return impl


def check_square(op: str, x) -> None:
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: needs a square matrix or a stack of them, shape (..., n, n); "
                         f"got shape {tuple(x.shape)}")


def solve_shape(op: str, a, b):
    """The shape and dtype of x in a x = b, a square (..., n, n) and b (..., n, k), their
    batch axes broadcast: solve's and solve_triangular's shape rule."""
    check_square(op, a)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ValueError(f"{op}: b must have shape (..., {a.shape[-1]}, k) for a of shape "
                         f"{tuple(a.shape)}; got {tuple(b.shape)}")
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    return tuple(batch) + tuple(b.shape[-2:]), result_dtype(op, a.dtype, b.dtype)


def check_matrix(op: str, x) -> None:
    if x.ndim < 2:
        raise ValueError(f"{op}: needs a matrix or a stack of them, shape (..., m, n); got "
                         f"shape {tuple(x.shape)}")


def mT(x):
    """The transpose of each matrix of a stack."""
    return swapaxes(x, -1, -2)


def tril(x, k: int = 0):
    return x * np.tril(np.ones(x.shape[-2:], x.dtype), k)


def triu(x, k: int = 0):
    return x * np.triu(np.ones(x.shape[-2:], x.dtype), k)


def eye_like(x):
    return np.eye(x.shape[-2], x.shape[-1], dtype=x.dtype)


def diag_part(x):
    return sum(x * eye_like(x), axis=-1)


def diag_embed(v):
    return expand_dims(v, -1) * np.eye(v.shape[-1], dtype=v.dtype)


def from_triangle(a, lower: bool):
    """The symmetric matrix numpy reads from a's lower (or upper) triangle."""
    return tril(a) + mT(tril(a, -1)) if lower else triu(a) + mT(triu(a, 1))


def onto_triangle(g, lower: bool):
    """The adjoint of `from_triangle`: the cotangent of the triangle that was read."""
    both = g + mT(g)
    return (tril(both) if lower else triu(both)) - g * eye_like(g)


def inverse_gaps(w):
    """F[..., i, j] = 1 / (w_j - w_i), 0 where w_j == w_i (the diagonal; exact ties, where
    only gauge-invariant functions, whose cotangents do not reach F, have a derivative)."""
    gaps = expand_dims(w, -2) - expand_dims(w, -1)
    tie = cast(equal(gaps, 0.0), w.dtype)
    return divide(1.0 - tie, gaps + tie)


# -- matrices for the generated checks ----------------------------------------------------------
def spd(rng, *shape):
    """Well-conditioned symmetric positive definite matrices: x x^T + n I."""
    x = rng.uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def invertible(rng, *shape, signs=(1, -1, 1)):
    """Far from singular, and its rolled copies too (permutations of its diagonal)."""
    return rng.uniform(-1, 1, shape) + 3 * np.eye(*shape[-2:]) * np.array(signs[:shape[-1]])


def spd_example(rng, *shape):
    return core.Example(spd(rng, *shape), iterations=[[spd(rng, *shape) for _ in range(3)]])
