"""numba lowering rules of the elementwise ops whose numba implementation gives other values
than numpy's (part of the one table, `numba_lowering.numba_rules`): floor_divide and
remainder (of floats: numpy's divmod-based kernels), and on integers also fmod and power,
by the scalar kernels of numba_special.py (`K.int_power`, ...) on int64 (or uint64)
elements; maximum and minimum of floats, whose ties (-0.0 and 0.0) numpy resolves to
the second operand, numba to the first; relu and sign (-0.0, unsigned integers); a float
power by a 0-d 0.5 (numpy's loop takes np.sqrt); complex products, |z|, division and
reciprocal, by numpy's own loops (numba_complex.py); integer reciprocals (declined).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .numba_lowering import NotLowered, _lower_ufunc, _p, _same_dtype, as_dtype, lowers, numba_dtype

__all__: list = []


@lowers(_p("floor_divide"), _p("remainder"))
def _float_divmod(ctx, eqn, args) -> str:
    """Floats: numpy's divmod-based kernels (numba's floor_divide is floor(a / b)); signed
    integers: the int64 kernels (numba's int64 min // -1 is 0, min % -1 kills the process)."""
    kind = eqn.outputs[0].dtype.kind
    if kind == "i":
        return _integer_kernel(eqn, args, f"int_{eqn.prim.name}", np.int64)
    if kind != "f":
        return _lower_ufunc(ctx, eqn, args)
    return f"K.{eqn.prim.name}({', '.join(_same_dtype(eqn, args))})"


@lowers(_p("power"))
def _power(ctx, eqn, args) -> str:
    """Integers: `K.int_power`, exact and wrapping as numpy's (numba's goes through
    float64), raising numpy's ValueError for a negative exponent. Floats by a 0-d exponent
    (`whole_ndim`: also for its elements in a loop nest) of 0.5: np.sqrt, as numpy's loop
    (-0.0 ** 0.5 is -0.0, -inf ** 0.5 NaN; C's pow, numba's, gives 0.0 and inf)."""
    kind = eqn.outputs[0].dtype.kind
    if kind in "iu" and all(np.dtype(v.dtype).kind in "iub" for v in eqn.inputs):
        return _integer_kernel(eqn, args, "int_power", np.int64 if kind == "i" else np.uint64)
    exponent = eqn.inputs[1]
    if kind == "f" and getattr(exponent, "whole_ndim", exponent.ndim) == 0 and _SQRT_FOR_HALF:
        x, e = _same_dtype(eqn, args)
        return f"(np.sqrt({x}) if {e} == 0.5 else {_lower_ufunc(ctx, eqn, args)})"
    return _lower_ufunc(ctx, eqn, args)


def _numpy_takes_sqrt_for_half() -> bool:
    """Whether numpy's power of floats by one exponent (the same all along its loop) of 0.5
    is np.sqrt, as numpy 2's is: -0.0 ** 0.5 is -0.0 and -inf ** 0.5 NaN there (C's pow
    gives 0.0 and inf, as numba's and numpy's of an array of exponents do)."""
    with np.errstate(invalid="ignore"):
        return bool(np.isnan(np.power(np.full(4, -np.inf), 0.5)[0]))


_SQRT_FOR_HALF = _numpy_takes_sqrt_for_half()


_COMPLEX_KERNELS = {"abs": "complex_abs", "multiply": "complex_multiply",
                    "multiply_zero_safe": "complex_multiply", "square": "complex_square"}


@lowers(*(_p(name) for name in _COMPLEX_KERNELS))
def _complex_kernel(ctx, eqn, args) -> str:
    """Complex: numpy's products and |z| (numba_complex.py: fused multiply-adds, where numba
    rounds each product, and numpy's |z|, where numba's hypot is an ulp off)."""
    if all(v.dtype.kind != "c" for v in eqn.inputs) or set(eqn.params) - {"order"}:
        return _lower_ufunc(ctx, eqn, args)
    operands = args if eqn.prim.name == "abs" else _same_dtype(eqn, args)
    return f"K.{_COMPLEX_KERNELS[eqn.prim.name]}({', '.join(operands)})"


@lowers(_p("divide"), _p("reciprocal"))
def _complex_division(ctx, eqn, args) -> str:
    """Complex: numpy's division and reciprocal (`K.complex_divide`, numba_complex.py), where
    numba's divide by a zero by the signs of its parts (1j / -0j: nan-infj, numpy's nan+infj)
    and give 1 / (1+0j) as 1+0j (numpy's 1-0j)."""
    kind = eqn.outputs[0].dtype.kind
    if kind in "iu" and len(args) == 1:
        raise NotLowered("an integer reciprocal (numpy's of 0 is its loop's: -2**31 in int32, "
                         "0 in int8; numba's 0)")
    if kind != "c" or set(eqn.params) - {"order"}:
        return _lower_ufunc(ctx, eqn, args)
    name = "divide" if len(args) == 2 else "reciprocal"
    return f"K.complex_{name}({', '.join(_same_dtype(eqn, args))})"


@lowers(_p("fmod"))
def _fmod(ctx, eqn, args) -> str:
    """Signed integers: `K.int_fmod` (numba's reads negative operands as unsigned)."""
    if eqn.outputs[0].dtype.kind == "i":
        return _integer_kernel(eqn, args, "int_fmod", np.int64)
    return _lower_ufunc(ctx, eqn, args)


def _integer_kernel(eqn, args, name: str, wide) -> str:
    """`K.<name>` (numba_special.py: an njit function of scalars, which may raise) of the
    operands as `wide` integers, its result in the output's dtype. Loop nests call it on
    elements (numba refuses it on whole arrays: a program needing that runs on numpy)."""
    operands = ", ".join(as_dtype(a, v, wide) for a, v in zip(args, eqn.inputs))
    return f"{numba_dtype(eqn.outputs[0].dtype)}(K.{name}({operands}))"


@lowers(_p("maximum"), _p("minimum"))
def _extremum(ctx, eqn, args) -> str:
    """Floats: the operands swapped (numpy's maximum(-0.0, 0.0) is 0.0, numba's -0.0; NaN
    wins either way). (numpy's fmax and fmin give either zero of a tie, by the element's
    place in their SIMD loop: numba's own loop is one of those answers.)"""
    if eqn.outputs[0].dtype.kind == "f" and len(args) == 2:
        args = args[::-1]
        eqn = SimpleNamespace(prim=eqn.prim, params=eqn.params, inputs=eqn.inputs[::-1],
                              outputs=eqn.outputs)
    return _lower_ufunc(ctx, eqn, args)


@lowers(_p("relu"))
def _relu(ctx, eqn, args) -> str:
    """np.maximum(x, 0): NaN stays NaN; + 0 makes -0.0 the 0.0 numpy gives (numba's
    maximum keeps its first operand on a tie)."""
    x = eqn.inputs[0]
    zero = f"{numba_dtype(x.dtype)}(0)"
    return f"(np.maximum({args[0]}, {zero}) + {zero})" if x.dtype.kind == "f" else \
        f"np.maximum({args[0]}, {zero})"


@lowers(_p("sign"))
def _sign(ctx, eqn, args) -> str:
    """np.sign; + 0 makes numba's -0.0 for -0.0 the 0.0 numpy gives. Of unsigned integers
    min(x, 1) (numba's sign reads one past the signed range as negative: 255 for uint8 255)."""
    x = eqn.inputs[0]
    if x.dtype.kind == "u" and eqn.outputs[0].dtype == x.dtype:
        return f"np.minimum({args[0]}, {numba_dtype(x.dtype)}(1))"
    if x.dtype.kind != "f":
        return _lower_ufunc(ctx, eqn, args)
    return f"(np.sign({args[0]}) + {numba_dtype(x.dtype)}(0))"


# op(unsigned, negative) and op(negative, unsigned): the unsigned operand is the greater
_NEGATIVE_SECOND = {"less": False, "less_equal": False, "greater": True, "greater_equal": True,
                    "equal": False, "not_equal": True}
_NEGATIVE_FIRST = {"less": True, "less_equal": True, "greater": False, "greater_equal": False,
                   "equal": False, "not_equal": True}


@lowers(*(_p(name) for name in _NEGATIVE_SECOND))
def _comparison(ctx, eqn, args) -> str:
    """uint64 against a signed integer: exactly, as numpy's own loops for the pair compare
    (numba compared both converted to float64, their result type: 2**63 == 2**63 - 1)."""
    kinds = [np.dtype(v.dtype).kind for v in eqn.inputs]
    unsigned64 = [np.dtype(v.dtype) == np.uint64 for v in eqn.inputs]
    if sorted(kinds) != ["i", "u"] or not any(unsigned64):
        return _lower_ufunc(ctx, eqn, args)
    signed = kinds.index("i")
    value = (_NEGATIVE_FIRST if signed == 0 else _NEGATIVE_SECOND)[eqn.prim.name]
    operands = [as_dtype(a, v, np.uint64) for a, v in zip(args, eqn.inputs)]
    return f"K.select({args[signed]} < 0, {value}, np.{eqn.prim.name}({', '.join(operands)}))"
