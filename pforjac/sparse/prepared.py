"""Prepared sparse Jacobians and Hessians: colour once, compile once, evaluate many times.

`prepare_jacobian(f, x_sample)` finds (or takes) the pattern, colours it, traces and
compiles the compressed pass (compressed.py) and precomputes where each entry of the
compressed result goes in the scipy.sparse data array. `p(x)` then runs the compiled pass
and one `take`: no Python loop over colours or entries. The pass is compiled for the
`backend=` given, else `pforjac.config.backend` as it is at preparation ("numba": one
native function, docs/numba.md), and keeps that backend when pickled.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .colored import ColoredPattern
from .coloring import (_count, _sp, as_pattern, column_coloring, row_coloring, star_coloring,
                       unique_in_row)
from .compressed import flat_program, forward_pass, gradient_program, reverse_pass, seed_matrix
from ..config import checked_backend, config
from ..pickling import picklable_function
from ..inputs import check_differentiable_input

__all__ = ["PreparedJacobian", "PreparedHessian", "prepare_jacobian", "prepare_hessian",
           "prepare_ode_jacobian", "jacobian", "hessian"]

_JACOBIAN_MODES = ("auto", "forward", "reverse")
_FORMATS = ("csr", "csc", "coo")


# -- inputs ------------------------------------------------------------------------------------
def _float_array(x, what: str) -> np.ndarray:
    if x is None:
        raise TypeError(f"{what} is None; pass a sample point, an array of the input's shape "
                        f"and dtype (its values matter only to pattern detection)")
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf" + "c":
        raise TypeError(f"{what} is not numeric (it makes a numpy array of dtype {arr.dtype}); "
                        f"pass a sample point, an array of the input's shape and dtype")
    if arr.dtype.kind == "c":
        raise TypeError(f"{what} is complex ({arr.dtype}); pforjac.sparse takes real inputs")
    check_differentiable_input(arr.dtype, what)
    return arr


def _arg_array(a) -> np.ndarray:
    """An extra argument as the array the compiled pass traces (Python floats as float64)."""
    return np.asarray(a, dtype=np.float64) if isinstance(a, (bool, int, float)) \
        else np.asarray(a)


def _avals(args) -> list:
    return [(tuple(a.shape), a.dtype) for a in args]


def _backend(backend, fn_name: str) -> str:
    """The backend a prepared pass compiles with: the one given, else the configured one
    now (so that it stays the same for the object, whenever it traces)."""
    return config.backend if backend is None else checked_backend(backend, f"{fn_name}: backend")


def _check_choice(value, choices, name: str, fn_name: str) -> None:
    if value not in choices:
        raise ValueError(f"{fn_name}: {name} must be one of {choices}, got {value!r}")


# -- patterns and colourings -------------------------------------------------------------------
def _detected(which: str, f: Callable, x: np.ndarray, args: tuple):
    """The pattern traced from the Program (pforjac.sparse.pattern), for `sparsity=None`."""
    from . import pattern
    return getattr(pattern, which)(lambda v: f(v, *args), x)


def choose_mode(pattern, mode: str) -> tuple[str, np.ndarray]:
    """(direction, colours): the given direction, or for "auto" the one with fewer colours
    (forward on a tie). Reverse is not coloured when forward already has no more colours
    than reverse's lower bound, the largest column count."""
    if mode == "reverse":
        return "reverse", row_coloring(pattern)
    forward = column_coloring(pattern)
    if mode == "forward":
        return "forward", forward
    col_counts = np.bincount(pattern.indices, minlength=pattern.shape[1])
    if _count(forward) <= (int(col_counts.max()) if col_counts.size else 0) \
            or _structurally_symmetric(pattern):     # (then reverse's colouring is the same)
        return "forward", forward
    reverse = row_coloring(pattern)
    return ("reverse", reverse) if _count(reverse) < _count(forward) else ("forward", forward)


def _structurally_symmetric(pattern) -> bool:
    return pattern.shape[0] == pattern.shape[1] and (pattern != pattern.T).nnz == 0


def _take_indices(pattern, colors: np.ndarray, mode: str) -> np.ndarray:
    """Where entry k (CSR order) of the matrix sits in the flattened compressed result B:
    forward B (c, m) holds J[i, j] at [colors[j], i]; reverse B (c, n) at [colors[i], j]; a
    Hessian's B (c, n) at [colors[j], i] when colour j is alone in row i, else at the mirror
    entry's place [colors[i], j] (the star colouring guarantees one of the two)."""
    m, n = pattern.shape
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(pattern.indptr))
    cols = pattern.indices.astype(np.int64)
    if mode == "forward":
        return colors[cols] * m + rows
    if mode == "reverse":
        return colors[rows] * n + cols
    alone = unique_in_row(pattern, colors)
    return np.where(alone, colors[cols] * n + rows, colors[rows] * n + cols)


class _Assembler:
    """Builds the scipy.sparse result in one format from the compressed result's entries."""

    def __init__(self, pattern, take: np.ndarray, fmt: str):
        self.shape, self.format = tuple(pattern.shape), fmt
        rows = np.repeat(np.arange(pattern.shape[0], dtype=pattern.indices.dtype),
                         np.diff(pattern.indptr))
        if fmt == "csr":
            self.take, self.structure = take, (pattern.indices, pattern.indptr)
        elif fmt == "csc":
            order = np.lexsort((rows, pattern.indices))
            counts = np.bincount(pattern.indices, minlength=pattern.shape[1])
            indptr = np.concatenate([[0], np.cumsum(counts)]).astype(pattern.indptr.dtype)
            self.take, self.structure = take[order], (rows[order], indptr)
        else:
            self.take, self.structure = take, (rows, pattern.indices.copy())

    def __call__(self, compressed: np.ndarray):
        sp = _sp()
        data = compressed.reshape(-1).take(self.take)    # a new array on every call
        a, b = (s.copy() for s in self.structure)
        if self.format == "coo":
            return sp.coo_array((data, (a, b)), shape=self.shape)
        cls = sp.csr_array if self.format == "csr" else sp.csc_array
        return cls((data, a, b), shape=self.shape)


# -- the prepared objects ----------------------------------------------------------------------
class _Prepared(ColoredPattern):
    """A coloured pattern with its compiled compressed pass; call it at new points."""

    def __init__(self, pattern, colors, mode, compiled, fmt, shape, dtype, arg_avals, name,
                 out_dtype=None, f=None, backend="numpy"):
        super().__init__(pattern, colors, mode)
        self.input_shape, self.dtype, self.format = tuple(shape), np.dtype(dtype), fmt
        self._arg_avals = [(tuple(s), np.dtype(d)) for s, d in arg_avals]
        self._nargs, self._arg_dtypes = len(arg_avals), [d for _, d in self._arg_avals]
        self._f = f                   # the user's function: what pickling stores
        self._compiled, self._name = compiled, name
        self._assemble = _Assembler(pattern, _take_indices(pattern, self.colors, mode), fmt)
        self._out_dtype = np.dtype(out_dtype or dtype)      # (f may cast: the result's dtype)
        self._time_first = False
        self._backend = backend         # asked for (`backend`: what its pass runs on)

    @property
    def backend(self) -> str:
        """The backend its compiled pass runs on: "numba" (native code), "numpy" (also
        when numba could not take the pass's program: a warning named the op), or where
        the backend runs numba segments joined by numpy code, what it calls that. Before
        the pass is first traced (an unpickled object), the backend it will be compiled for."""
        traced = [] if self._compiled is None else list(self._compiled._cache.values())
        return traced[-1].backend if traced else self._backend

    def __reduce__(self):
        """Pickled as the user's function, the options and the coloured pattern; the
        receiving process traces and compiles the pass again (no pattern detection, no
        colouring). The function must be picklable: see pforjac.pickling."""
        user = self._f.rhs if isinstance(self._f, _TimeLast) else self._f
        picklable_function(user, f"{type(self).__name__} of {_name_of(user)!r}")
        return _rebuilt, (type(self), self._f, self.pattern, self.colors, self.mode,
                          self.format, self.input_shape, self.dtype, self._arg_avals,
                          self._out_dtype, self._time_first, self._backend)

    def _warm(self, x: np.ndarray, args: tuple) -> None:
        """Traces and compiles the pass now (at preparation), on the sample point."""
        if self._compiled is not None:
            self._compiled(self._input(x), *args)

    def __call__(self, x, *args):
        """The sparse matrix at x (extra arguments as at preparation), in `self.format`."""
        flat = self._input(x)
        if len(args) != self._nargs:
            raise TypeError(f"{self._name}: prepared with {self._nargs} extra argument(s), got "
                            f"{len(args)}")
        args = [np.asarray(a, dtype=d) for a, d in zip(args, self._arg_dtypes)]
        if self.ncolors == 0:
            return self._assemble(np.zeros(0, self._out_dtype))
        compressed = np.asarray(self._compiled(flat, *args))
        return self._assemble(compressed)

    def _input(self, x) -> np.ndarray:
        arr = np.asarray(x)
        n = int(np.prod(self.input_shape, dtype=np.int64))
        if arr.shape != self.input_shape and arr.shape != (n,):
            raise ValueError(f"{self._name}: prepared for inputs of shape {self.input_shape} "
                             f"({n} entries), got an input of shape {arr.shape}; prepare again "
                             f"for the new shape")
        return np.ascontiguousarray(arr, dtype=self.dtype).reshape(n)


class PreparedJacobian(_Prepared):
    """`prepare_jacobian`'s result: `p(x)` is the sparse Jacobian (m x n) at x."""

    def scipy_jac(self) -> Callable:
        """The Jacobian as scipy's solvers call it: `jac(t, y, *args)` for a right-hand side
        prepared with `prepare_ode_jacobian` (solve_ivp), `jac(x, *args)` otherwise
        (least_squares, minimize's constraints)."""
        if self._time_first:
            return lambda t, y, *args: self(y, t, *args)
        return self.__call__


class PreparedHessian(_Prepared):
    """`prepare_hessian`'s result: `p(x)` is the sparse symmetric Hessian (n x n) at x."""

    def scipy_hess(self) -> Callable:
        """The Hessian as `scipy.optimize.minimize(hess=...)` calls it: `hess(x, *args)`."""
        return self.__call__


class _TimeLast:
    """`rhs(t, y, *args)` as `f(y, t, *args)` (a class, not a closure, so it pickles when
    rhs does)."""

    def __init__(self, rhs: Callable):
        self.rhs = rhs

    def __call__(self, y, t, *rest):
        return self.rhs(t, y, *rest)


def _name_of(f) -> str:
    return getattr(f, "__qualname__", None) or type(f).__name__


def _compiled_pass(cls, f, shape, dtype, arg_avals, mode, colors, backend):
    """(the compiled compressed pass or None, the traced program's output dtype)."""
    if cls is PreparedHessian:
        program = gradient_program(f, shape, dtype, arg_avals)
    else:
        program = flat_program(f, shape, dtype, arg_avals)
    ncolors = _count(colors)
    if not ncolors:
        return None, program.outputs[0].dtype
    make = reverse_pass if mode == "reverse" else forward_pass
    return make(program, seed_matrix(colors, ncolors), backend), program.outputs[0].dtype


def _rebuilt(cls, f, pattern, colors, mode, fmt, shape, dtype, arg_avals, out_dtype,
             time_first, backend="numpy"):
    """A prepared object from its pickled parts: traced again, compiled on first call."""
    compiled, _ = _compiled_pass(cls, f, shape, dtype, arg_avals, mode, colors, backend)
    p = cls(pattern, colors, mode, compiled, fmt, shape, dtype, arg_avals, cls.__name__,
            out_dtype=out_dtype if cls is PreparedJacobian else None, f=f, backend=backend)
    p._time_first = time_first
    return p


def _prepare(fn_name, f, x_sample, args):
    if not callable(f):
        raise TypeError(f"{fn_name}: f must be callable, got {type(f).__name__}; call "
                        f"{fn_name}(f, x_sample), the function first, then a sample point")
    x = _float_array(x_sample, f"{fn_name}: x_sample")
    return x, tuple(_arg_array(a) for a in args)


def prepare_jacobian(f: Callable, x_sample, mode: str = "auto", sparsity=None,
                     format: str = "csr", args: tuple = (),
                     backend: str | None = None) -> PreparedJacobian:
    """Prepares the sparse Jacobian of `f(x, *args)` with respect to x, for evaluation at
    many points of x_sample's shape and (floating) dtype.

    Args:
        f: a function of pforjac Tensors; input and output of any shape, each flattened
            in C order (the Jacobian is `f(x).size x x.size`).
        x_sample: a point (its values matter only to pattern detection).
        mode: "forward" (a jvp per column colour), "reverse" (a vjp per row colour) or
            "auto" (the direction with fewer colours).
        sparsity: the pattern, if known (a scipy.sparse matrix or dense bool array, outputs
            x inputs); by default it is detected from f's traced program.
        format: "csr", "csc" or "coo", the scipy.sparse array `p(x)` returns.
        args: extra arguments of f, passed again at each call (`p(x, *args)`); they are
            traced as arrays, so the pattern must not depend on their values.
        backend: "numpy" or "numba", what the compressed pass is compiled for
            (`p.backend` says which it runs on); default `pforjac.config.backend`.

    Example:
        >>> import numpy as np, pforjac as pj, pforjac.sparse as pjs
        >>> P = np.eye(4, dtype=bool) | np.eye(4, k=1, dtype=bool)
        >>> p = pjs.prepare_jacobian(lambda x: x[:-1] * x[1:], np.ones(4), sparsity=P[:3])
        >>> p
        ColoredPattern(3x4, nnz=6, sparsity=50.0%, forward, 2 colours)
        >>> p(np.arange(4.0)).toarray().tolist()
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]]
    """
    p, x, args = _prepared_jacobian(f, x_sample, mode, sparsity, format, args, backend)
    p._warm(x, args)
    return p


def _prepared_jacobian(f, x_sample, mode, sparsity, format, args, backend):
    """(the PreparedJacobian, not yet compiled, the sample and the extra arguments)."""
    x, args = _prepare("prepare_jacobian", f, x_sample, args)
    backend = _backend(backend, "prepare_jacobian")
    _check_choice(mode, _JACOBIAN_MODES, "mode", "prepare_jacobian")
    _check_choice(format, _FORMATS, "format", "prepare_jacobian")
    program = flat_program(f, x.shape, x.dtype, _avals(args))
    shape = (int(program.outputs[0].shape[0]), x.size)
    if sparsity is None:
        sparsity = _detected("jacobian_sparsity", f, x, args)
    pattern = as_pattern(sparsity, shape)
    mode, colors = choose_mode(pattern, mode)
    ncolors = _count(colors)
    make = forward_pass if mode == "forward" else reverse_pass
    compiled = make(program, seed_matrix(colors, ncolors), backend) if ncolors else None
    p = PreparedJacobian(pattern, colors, mode, compiled, format, x.shape, x.dtype,
                         _avals(args), "PreparedJacobian", out_dtype=program.outputs[0].dtype,
                         f=f, backend=backend)
    return p, x, args


def prepare_ode_jacobian(rhs: Callable, t0=None, y0=None, sparsity=None, mode: str = "auto",
                         format: str = "csr", args: tuple = (),
                         backend: str | None = None) -> PreparedJacobian:
    """`prepare_jacobian` for a right-hand side `rhs(t, y, *args)` as `solve_ivp` calls it:
    the Jacobian with respect to y, with t traced (`p(y, t, *args)`), and `p.scipy_jac()`
    is `jac(t, y, *args)`. The arguments come in solve_ivp's order: `rhs, t0, y0`."""
    _check_ode_arguments(rhs, t0, y0)
    p = prepare_jacobian(_TimeLast(rhs), y0, mode, sparsity, format, (t0, *args), backend)
    if p.shape[0] != p.shape[1]:
        raise ValueError(f"prepare_ode_jacobian: rhs(t0, y0) returned {p.shape[0]} values for "
                         f"a state y0 of {p.shape[1]}: the right-hand side must be rhs(t, y) "
                         f"as solve_ivp calls it, returning dy/dt shaped like y (odeint's "
                         f"rhs(y, t) takes them the other way round)")
    p._time_first = True
    return p


_ODE_ORDER = "prepare_ode_jacobian(rhs, t0, y0), in solve_ivp's order (time, then state)"


def _check_ode_arguments(rhs, t0, y0) -> None:
    if not callable(rhs):
        raise TypeError(f"prepare_ode_jacobian: rhs must be the right-hand side rhs(t, y), got "
                        f"{type(rhs).__name__}; call {_ODE_ORDER}")
    if t0 is None or y0 is None:
        missing = "t0 and y0 are" if t0 is None and y0 is None else \
            ("t0 is" if t0 is None else "y0 is")
        raise TypeError(f"prepare_ode_jacobian: {missing} missing; call {_ODE_ORDER}")
    if np.ndim(t0) != 0:
        raise TypeError(f"prepare_ode_jacobian: t0 must be the initial time (a scalar), got "
                        f"an array of shape {np.shape(t0)}; call {_ODE_ORDER}")


def prepare_hessian(f: Callable, x_sample, sparsity=None, format: str = "csr",
                    args: tuple = (), backend: str | None = None) -> PreparedHessian:
    """Prepares the sparse Hessian of a scalar `f(x, *args)`: a star colouring of the
    symmetric pattern and one compiled forward-over-reverse pass (an hvp per colour).

    `sparsity` (n x n, symmetrized) is detected from f's traced program when not given;
    `backend` as in `prepare_jacobian`.

    Example:
        >>> import numpy as np, pforjac.sparse as pjs
        >>> p = pjs.prepare_hessian(lambda x: (x[1:] * x[:-1] ** 2).sum(), np.ones(5),
        ...                         sparsity=np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1))
        >>> p
        ColoredPattern(5x5, nnz=13, sparsity=48.0%, star, 3 colours)
        >>> p(np.ones(5)).toarray()[:2].tolist()
        [[2.0, 2.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 0.0, 0.0]]
    """
    p, x, args = _prepared_hessian(f, x_sample, sparsity, format, args, backend)
    p._warm(x, args)
    return p


def _prepared_hessian(f, x_sample, sparsity, format, args, backend):
    x, args = _prepare("prepare_hessian", f, x_sample, args)
    backend = _backend(backend, "prepare_hessian")
    _check_choice(format, _FORMATS, "format", "prepare_hessian")
    program = gradient_program(f, x.shape, x.dtype, _avals(args))
    if sparsity is None:
        sparsity = _detected("hessian_sparsity", f, x, args)
    given = as_pattern(sparsity, (x.size, x.size))
    pattern = as_pattern(given + given.T)
    colors = star_coloring(pattern)
    ncolors = _count(colors)
    compiled = forward_pass(program, seed_matrix(colors, ncolors), backend) if ncolors else None
    p = PreparedHessian(pattern, colors, "star", compiled, format, x.shape, x.dtype,
                        _avals(args), "PreparedHessian", f=f, backend=backend)
    return p, x, args


def jacobian(f: Callable, x, mode: str = "auto", sparsity=None, format: str = "csr",
             args: tuple = (), backend: str | None = None):
    """The sparse Jacobian of `f` at x (a scipy.sparse array with exactly the pattern's
    structure, structural zeros kept); `prepare_jacobian` to evaluate at many points."""
    p, x, args = _prepared_jacobian(f, x, mode, sparsity, format, args, backend)
    return p(x, *args)


def hessian(f: Callable, x, sparsity=None, format: str = "csr", args: tuple = (),
            backend: str | None = None):
    """The sparse Hessian of a scalar `f` at x; `prepare_hessian` to evaluate at many points."""
    p, x, args = _prepared_hessian(f, x, sparsity, format, args, backend)
    return p(x, *args)
