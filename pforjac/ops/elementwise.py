"""Elementwise primitives: one block each, forward in numpy, rules in pforjac ops.

Unary ops declare their derivative `d(ans, x)` once; the vjp is `g * d` and the
jvp `t * d`. Binary ops reduce the gradient of a broadcast operand back to its
shape with `unbroadcast`.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import core
from ..core import defjvp, defjvp_all, defvjp
from ..tensor import Tensor, as_operands, as_tensor, is_float, unchanged
from .broadcasting import broadcast_to, unbroadcast
from ._family import declare_elementwise, int_tuple

__all__ = ["neg", "add", "subtract", "multiply", "multiply_no_nan", "multiply_zero_safe", "divide",
           "power", "pow",
           "maximum", "minimum",
           "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh", "sigmoid", "relu",
           "softplus", "sqrt", "square", "abs", "sign", "reciprocal", "where", "cast",
           "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
           "log2", "log10", "floor", "ceil", "round", "arctan2", "clip",
           "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_not", "stop_gradient",
           "zeros_like", "ones_like", "zeros", "ones", "coerce"]


def coerce(x, y) -> tuple:
    """Python numbers (scalars, lists, tuples) take the other operand's dtype where it can
    hold them (weak typing, `as_operands`)."""
    if isinstance(x, Tensor):
        if isinstance(y, Tensor):
            return x, y
        if _is_python_scalar(y):
            return x, Tensor._from_array(np.asarray(y, _weak_result(x.dtype, y)))
    elif isinstance(y, Tensor) and _is_python_scalar(x):
        return Tensor._from_array(np.asarray(x, _weak_result(y.dtype, x))), y
    return tuple(as_operands((x, y)))


def _is_python_scalar(v) -> bool:
    return isinstance(v, (int, float, complex)) and not isinstance(v, np.generic)


_weak_results: dict = {}


def _weak_result(dtype: np.dtype, number) -> np.dtype:
    """`np.result_type(dtype, number)`, which (NEP 50) depends on the number's type alone:
    looked up once per pair."""
    key = (dtype, type(number))
    found = _weak_results.get(key)
    if found is None:
        found = _weak_results[key] = np.result_type(dtype, number)
    return found


# -- unary ---------------------------------------------------------------------

def _unary(name: str, impl, deriv=None, zero_stays_zero: tuple = (), domain: str = "real",
           zero_preserving: bool = False) -> core.Primitive:
    """Declares `name`; `deriv(ans, x)` is its derivative, written in pforjac ops. In the
    modes `zero_stays_zero` names ("vjp", "jvp") a zero cotangent (or tangent) gives zero
    even where the derivative is infinite or NaN (sqrt at 0, reciprocal of a tiny value), as
    TensorFlow's kernels do. `domain`: where its input's checks draw values;
    `zero_preserving`: f(0) == 0."""
    prim = declare_elementwise(name, impl, domain=(domain,), zero_preserving=zero_preserving)
    if deriv is not None:
        vjp_scale, jvp_scale = (_no_nan_scale if mode in zero_stays_zero else _scale
                                for mode in ("vjp", "jvp"))
        defvjp(prim, lambda g, ans, x: vjp_scale(g, deriv(ans, x)))
        defjvp(prim, lambda t, ans, x: jvp_scale(t, deriv(ans, x)))
    return prim


def _scale(g, d): return g * d
def _no_nan_scale(g, d): return multiply_no_nan(d, g)


def _sigmoid_impl(x, out=None):
    """1 / (1 + exp(-x)), in place in one buffer (`out`, which may be `x`, as for a ufunc).
    Accurate to an ulp or two in both tails: for very negative x, exp(-x) overflows to inf
    and the result is 0 (only where the true value is below the dtype's smallest normal;
    float16 is computed in float32, so its subnormals are kept)."""
    x = np.asarray(x)
    if x.dtype.kind not in "fc":               # ints and bools: np.exp's float, as numpy gives
        x = x.astype(_float_of(x.dtype))
    if x.dtype == np.float16:                  # exp(-x) would overflow float16 below -11.1,
        wide = _sigmoid_impl(x.astype(np.float32))   # where sigmoid is still a float16
        if out is None:                              # subnormal (TensorFlow keeps those)
            return wide.astype(np.float16)
        np.copyto(out, wide, casting="same_kind")
        return out
    out = np.negative(x, out=np.empty(x.shape, x.dtype) if out is None else out)
    with np.errstate(over="ignore"):
        np.exp(out, out=out)
    out += 1
    return np.divide(1, out, out=out)     # as np.reciprocal, bit for bit, but vectorized: 2x faster


@functools.lru_cache(maxsize=None)
def _float_of(dtype: np.dtype) -> np.dtype:
    return np.exp(np.zeros(0, dtype)).dtype


_sigmoid_impl.elementwise_out = True     # generated code may pass `out=` (see codegen)


def _softplus_impl(x):
    """log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)) (for complex x, whose
    max and modulus mean something else, log1p(exp(x)) itself)."""
    if np.iscomplexobj(x):
        return np.log1p(np.exp(x))
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


neg_p = _unary("neg", np.negative, zero_preserving=True)
defvjp(neg_p, lambda g, ans, x: -g)
defjvp(neg_p, lambda t, ans, x: -t)
exp_p = _unary("exp", np.exp, lambda ans, x: ans)
log_p = _unary("log", np.log, lambda ans, x: reciprocal(x), domain="positive")
log1p_p = _unary("log1p", np.log1p, lambda ans, x: reciprocal(x + 1.0), domain="positive",
                 zero_preserving=True)
expm1_p = _unary("expm1", np.expm1, lambda ans, x: exp(x),   # (ans + 1 cancels for x < 0: TF's)
                 zero_preserving=True)
sin_p = _unary("sin", np.sin, lambda ans, x: cos(x), zero_preserving=True)
cos_p = _unary("cos", np.cos, lambda ans, x: -sin(x))
tan_p = _unary("tan", np.tan, lambda ans, x: square(ans) + 1.0, domain="unit",
               zero_preserving=True)
tanh_p = _unary("tanh", np.tanh, lambda ans, x: 1.0 - square(ans), zero_preserving=True)
sigmoid_p = _unary("sigmoid", _sigmoid_impl, lambda ans, x: ans * (1.0 - ans))
softplus_p = _unary("softplus", _softplus_impl,
                    lambda ans, x: sigmoid(x))
# sqrt's forward rule is JAX's: at 0 (not differentiable) every tangent gives NaN or inf, so
# std at a zero variance or a norm at zero is NaN in forward mode as in reverse mode, where
# the cotangent's inf meets the variance's zero derivative (a zero tangent gave 0 there)
sqrt_p = _unary("sqrt", np.sqrt, lambda ans, x: 0.5 / ans, zero_stays_zero=("vjp",),
                domain="positive", zero_preserving=True)
square_p = _unary("square", np.square, lambda ans, x: 2.0 * x, zero_preserving=True)
reciprocal_p = _unary("reciprocal", np.reciprocal, lambda ans, x: -square(ans),
                      zero_stays_zero=("vjp", "jvp"), domain="nonzero")
abs_p = _unary("abs", np.abs, domain="nonzero",     # (its rules below: complex values differ)
               zero_preserving=True)
relu_p = _unary("relu", lambda x: np.maximum(x, np.zeros((), x.dtype)),
                lambda ans, x: cast(greater(x, 0.0), x.dtype), domain="nonzero", zero_preserving=True)
sign_p = _unary("sign", np.sign, domain="nonzero",   # (its rules: ops/complex_parts.py)
                zero_preserving=True)
sinh_p = _unary("sinh", np.sinh, lambda ans, x: cosh(x), zero_preserving=True)
cosh_p = _unary("cosh", np.cosh, lambda ans, x: sinh(x))
arcsin_p = _unary("arcsin", np.arcsin, lambda ans, x: reciprocal(sqrt(1.0 - square(x))),
                  domain="unit", zero_preserving=True)
arccos_p = _unary("arccos", np.arccos, lambda ans, x: -reciprocal(sqrt(1.0 - square(x))),
                  domain="unit")
arctan_p = _unary("arctan", np.arctan, lambda ans, x: reciprocal(square(x) + 1.0),
                  zero_preserving=True)
# the inverse hyperbolic functions' derivatives from their results, as TensorFlow's: 1 + x**2
# and x**2 - 1 overflow for |x| past 1.8e19 in float32, cosh(asinh x) and sinh(acosh x) don't
arcsinh_p = _unary("arcsinh", np.arcsinh, lambda ans, x: reciprocal(cosh(ans)),
                   zero_preserving=True)
arccosh_p = _unary("arccosh", np.arccosh, lambda ans, x: reciprocal(sinh(ans)),
                   domain="above_one")
arctanh_p = _unary("arctanh", np.arctanh, lambda ans, x: reciprocal(1.0 - square(x)),
                   domain="unit", zero_preserving=True)
log2_p = _unary("log2", np.log2, lambda ans, x: reciprocal(x * float(np.log(2.0))),
                domain="positive")
log10_p = _unary("log10", np.log10, lambda ans, x: reciprocal(x * float(np.log(10.0))),
                 domain="positive")
# steps: a zero derivative (JAX's; TensorFlow has none), numpy's values (round: half to even)
floor_p = _unary("floor", np.floor, lambda ans, x: zeros_like(x), zero_preserving=True)
ceil_p = _unary("ceil", np.ceil, lambda ans, x: zeros_like(x), zero_preserving=True)
round_p = _unary("round", np.rint, lambda ans, x: zeros_like(x), zero_preserving=True)


def neg(x): return neg_p.bind(x)
def exp(x): return exp_p.bind(x)
def log(x): return log_p.bind(x)
def log1p(x): return log1p_p.bind(x)
def expm1(x): return expm1_p.bind(x)
def sin(x): return sin_p.bind(x)
def cos(x): return cos_p.bind(x)
def tan(x): return tan_p.bind(x)
def tanh(x): return tanh_p.bind(x)
def sigmoid(x): return sigmoid_p.bind(x)
def softplus(x): return softplus_p.bind(x)
def sqrt(x): return sqrt_p.bind(x)
def square(x): return square_p.bind(x)
def reciprocal(x): return reciprocal_p.bind(x)
def abs(x): return abs_p.bind(x)
def relu(x): return relu_p.bind(x)
def sign(x): return sign_p.bind(x)
def sinh(x): return sinh_p.bind(x)
def cosh(x): return cosh_p.bind(x)
def arcsin(x): return arcsin_p.bind(x)
def arccos(x): return arccos_p.bind(x)
def arctan(x): return arctan_p.bind(x)
def arcsinh(x): return arcsinh_p.bind(x)
def arccosh(x): return arccosh_p.bind(x)
def arctanh(x): return arctanh_p.bind(x)
def log2(x): return log2_p.bind(x)
def log10(x): return log10_p.bind(x)
def floor(x): return floor_p.bind(x)
def ceil(x): return ceil_p.bind(x)
def round(x): return round_p.bind(x)    # noqa: A001  (numpy's name; half to even, as np.round)


# -- binary --------------------------------------------------------------------

def _binary(name: str, impl, vjp_x=None, vjp_y=None, differentiable=True,
            domain=("real", "real")) -> core.Primitive:
    """Declares a broadcasting binary op; rules give the unreduced cotangent."""
    prim = declare_elementwise(name, impl, differentiable, domain=domain)
    if differentiable:
        defvjp(prim,
               lambda g, ans, x, y: unbroadcast(vjp_x(g, ans, x, y), x.shape),
               lambda g, ans, x, y: unbroadcast(vjp_y(g, ans, x, y), y.shape))
        defjvp(prim,
               lambda t, ans, x, y: _fit(vjp_x(t, ans, x, y), ans.shape),
               lambda t, ans, x, y: _fit(vjp_y(t, ans, x, y), ans.shape))
    return prim


def _fit(t: Tensor, shape: tuple) -> Tensor:
    return t if tuple(t.shape) == tuple(shape) else broadcast_to(t, shape)


def _multiply_no_nan_impl(x, y):
    """x * y, and 0 wherever y is 0 (even where x is inf or NaN): tf.math.multiply_no_nan."""
    out = _quiet_product(x, y)
    y = np.asarray(y)
    if y.ndim == 0:                     # (a number: one comparison, no mask)
        return out if y.item() != 0 else np.zeros_like(out)
    if np.count_nonzero(y) < y.size:    # (ndarray.any's Python wrapper costs 1 us more)
        out = np.where(y == 0, out.dtype.type(0), out)
    return out


def _multiply(x, y):
    return np.multiply(x, y)


def _quiet_multiply(x, y):
    with np.errstate(invalid="ignore", over="ignore"):
        return np.multiply(x, y)


# x * y without numpy's warnings of inf * 0 and overflow. np.errstate as a decorator sets the
# error state for each call without an errstate object to make, enter and leave: it costs
# about half as much (a gradient's multiply_no_nan on 49 elements: 3.1 -> 2.3 us). Only on
# numpy 2, where it is thread-safe; numpy 1.x re-enters one errstate object.
_quiet_product = np.errstate(invalid="ignore", over="ignore")(_multiply) \
    if int(np.__version__.split(".")[0]) >= 2 else _quiet_multiply


def _pow_dx(x, y):
    """y x**(y-1), 0 where y == 0. With the rule's zero cotangent (or tangent) giving zero
    (multiply_no_nan), the derivatives of x**k at 0 are finite to every order: x**-1 at 0
    is inf, whose products with y = 0 and with a zero cotangent were NaN. An exponent that
    is a nonzero integer k known now, which no tape differentiates (`x ** 2` in eager
    code), gives k x**(k-1) in fewer ops, with the same bits (k - 1 is exact; x**1 is x)."""
    k = _known_integer(y)
    if k == 2 and not _tracked(x):  # (y is the 2.0 `x * 2.0` would make, in x's dtype; a
        # tape that tracks x would see 2 x**1 as constant in x, and a third derivative as
        # unconnected, not 0: x**1.0 keeps it connected)
        return multiply_p.bind(x, y) if type(x) is Tensor and y.dtype == x.dtype else x * 2.0
    if k is not None:
        return power(x, float(k - 1)) * float(k)
    return multiply_no_nan(power(x, y - 1.0), y)


def _known_integer(y):
    """`y`'s value, a nonzero integer, when `y` is a concrete number no active tape tracks
    (its value may then stand in for it: nothing differentiates the rule through it)."""
    state = core.current_state()
    if type(y) is not Tensor or y._value.ndim or state.traces:
        return None
    k = y._value.item()     # (the range first: int() of an inf or a NaN exponent raises)
    if type(k) is not float or not -2.0 ** 24 <= k <= 2.0 ** 24 or k != int(k) or k == 0:
        return None
    return None if _tracked(y) else int(k)


def _tracked(t) -> bool:
    """Whether an active tape tracks `t` (it would differentiate what is computed from it)."""
    for tape in core.current_state().tapes:
        if core._tracks(tape, t):
            return True
    return False


def _pow_dy(g, ans, x, y):
    """x**y log x. At x == 0 it is 0 where y > 0 (0**y is 0 nearby), NaN at y == 0 (0**y
    jumps from 1 to 0). A negative real base has no derivative in y (x**y is real only at
    integer y): NaN there, never TensorFlow's 0, yet a zero cotangent stays zero
    (`where(x > 0, x ** y, 0)`). For complex x, log x is defined wherever x != 0 (numpy
    orders complex numbers by their real part: x > 0 would drop most)."""
    if x.dtype.kind == "c":
        defined = not_equal(x, 0.0)
        return g * ans * where(defined, log(where(defined, x, ones_like(x))), zeros_like(x))
    defined = greater(x, 0.0)
    undefined = where(logical_or(less(x, 0.0), less_equal(y, 0.0)), np.nan, 0.0)
    safe_log = where(defined, log(where(defined, x, ones_like(x))), undefined)
    return multiply_no_nan(ans * safe_log, g)


def _conj_sign(ans, x):
    """conj(x) / |x| (= |x| / x; 0 at 0) for complex x: the derivative of |x| in the
    convention of every other rule here (JAX's: no conjugate in a vjp)."""
    nonzero = not_equal(x, 0.0)
    return where(nonzero, ans / where(nonzero, x, ones_like(x)), zeros_like(x))


def _abs_vjp(g, ans, x):
    return g * (_conj_sign(ans, x) if x.dtype.kind == "c" else sign(x))


def _abs_jvp(t, ans, x):
    if x.dtype.kind != "c":
        return t * sign(x)
    return cast(_conj_sign(ans, x) * t, ans.dtype)      # Re(conj(x) t) / |x|: a real tangent


defvjp(abs_p, _abs_vjp)
defjvp(abs_p, _abs_jvp)


add_p = _binary("add", np.add, lambda g, a, x, y: g, lambda g, a, x, y: g)
subtract_p = _binary("subtract", np.subtract, lambda g, a, x, y: g, lambda g, a, x, y: -g)
multiply_p = _binary("multiply", np.multiply, lambda g, a, x, y: g * y, lambda g, a, x, y: g * x)
divide_p = _binary("divide", np.true_divide, lambda g, a, x, y: g / y,
                   lambda g, a, x, y: -g * a / y, domain=("real", "nonzero"))
power_p = _binary("power", np.power, lambda g, a, x, y: multiply_no_nan(_pow_dx(x, y), g),
                  _pow_dy, domain=("positive", "real"))
# x * y whose zero cotangents (and tangents) stay zero against an infinite factor: prod's
# product tree, where partial products may overflow to inf and a Hessian's one-hot seeds
# send zeros through them (TensorFlow's convention; plain multiply makes them NaN)
multiply_zero_safe_p = _binary("multiply_zero_safe", np.multiply,
                               lambda g, a, x, y: multiply_no_nan(y, g),
                               lambda g, a, x, y: multiply_no_nan(x, g))
multiply_no_nan_p = _binary("multiply_no_nan", _multiply_no_nan_impl,
                            lambda g, a, x, y: multiply_no_nan(g, y),
                            lambda g, a, x, y: multiply_no_nan(x, g))
# As TensorFlow's: a tie goes to x, and y gets every element x does not (a NaN's too)
maximum_p = _binary("maximum", np.maximum,
                    lambda g, a, x, y: g * cast(greater_equal(x, y), g.dtype),
                    lambda g, a, x, y: g * cast(logical_not(greater_equal(x, y)), g.dtype))
minimum_p = _binary("minimum", np.minimum,
                    lambda g, a, x, y: g * cast(less_equal(x, y), g.dtype),
                    lambda g, a, x, y: g * cast(logical_not(less_equal(x, y)), g.dtype))
# arctan2(y, x), numpy's argument order: d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
arctan2_p = _binary("arctan2", np.arctan2,
                    lambda g, a, x, y: g * y / (square(x) + square(y)),
                    lambda g, a, x, y: -g * x / (square(x) + square(y)))

equal_p = _binary("equal", np.equal, differentiable=False)
not_equal_p = _binary("not_equal", np.not_equal, differentiable=False)
less_p = _binary("less", np.less, differentiable=False)
less_equal_p = _binary("less_equal", np.less_equal, differentiable=False)
greater_p = _binary("greater", np.greater, differentiable=False)
greater_equal_p = _binary("greater_equal", np.greater_equal, differentiable=False)
logical_and_p = _binary("logical_and", np.logical_and, differentiable=False,
                        domain=("bool", "bool"))
logical_or_p = _binary("logical_or", np.logical_or, differentiable=False,
                       domain=("bool", "bool"))
logical_not_p = _unary("logical_not", np.logical_not, domain="bool")
logical_not_p.differentiable = False


def add(x, y): return add_p.bind(*coerce(x, y))
def subtract(x, y): return subtract_p.bind(*coerce(x, y))
def multiply(x, y): return multiply_p.bind(*coerce(x, y))
def multiply_no_nan(x, y): return multiply_no_nan_p.bind(*coerce(x, y))
def multiply_zero_safe(x, y): return multiply_zero_safe_p.bind(*coerce(x, y))
def divide(x, y): return divide_p.bind(*coerce(x, y))
def power(x, y): return power_p.bind(*coerce(x, y))
def maximum(x, y): return maximum_p.bind(*coerce(x, y))
def minimum(x, y): return minimum_p.bind(*coerce(x, y))
def arctan2(y, x): return arctan2_p.bind(*coerce(y, x))


def clip(x, a_min, a_max):
    """np.clip: a_min where x < a_min, then a_max where that is > a_max (either bound may be
    None), so x is kept bit for bit where it is in range (-0.0 stays -0.0; NaN stays NaN).
    The gradient goes to x where a_min <= x <= a_max, bounds included (TensorFlow's
    clip_by_value), and to a bound where it is the value."""
    out = as_tensor(x)
    if a_min is not None:
        out = where(less(out, a_min), a_min, out)
    return out if a_max is None else where(greater(out, a_max), a_max, out)
def equal(x, y): return equal_p.bind(*coerce(x, y))
def not_equal(x, y): return not_equal_p.bind(*coerce(x, y))
def less(x, y): return less_p.bind(*coerce(x, y))
def less_equal(x, y): return less_equal_p.bind(*coerce(x, y))
def greater(x, y): return greater_p.bind(*coerce(x, y))
def greater_equal(x, y): return greater_equal_p.bind(*coerce(x, y))
def logical_and(x, y): return logical_and_p.bind(*coerce(x, y))
def logical_or(x, y): return logical_or_p.bind(*coerce(x, y))
def logical_not(x): return logical_not_p.bind(x)


pow = power


# -- where, cast, stop_gradient, zeros_like --------------------------------------

def _where_impl(c, x, y):
    return np.where(c, x, y)


where_p = declare_elementwise("where", _where_impl, domain=("bool", "real", "real"))
defvjp(where_p, None,
       lambda g, ans, c, x, y: unbroadcast(where(c, g, zeros_like(g)), x.shape),
       lambda g, ans, c, x, y: unbroadcast(where(c, zeros_like(g), g), y.shape))
defjvp_all(where_p, lambda ts, ans, c, x, y: where(
    c, zeros_like(ans) if ts[1] is None else _fit(ts[1], ans.shape),
    zeros_like(ans) if ts[2] is None else _fit(ts[2], ans.shape)))


def where(condition, x, y):
    """Elementwise choice, `x` where `condition` else `y`, with numpy broadcasting."""
    return where_p.bind(condition, *coerce(x, y))


def _cast_impl(x, dtype):
    """x as `dtype`; complex to real takes the real part, as tf.cast does (without numpy's
    ComplexWarning: a cast is asked for)."""
    if x.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        x = x.real
    return x.astype(dtype, copy=False)


cast_p = core.new_primitive("cast", _cast_impl, lambda x, dtype: (x.shape, dtype),
                            elementwise=True, zero_preserving=True, layout="following",
                            may_alias=True)
cast_p.plain_forward = lambda x, c_ordered, dtype: (
    None if np.dtype(x.dtype).kind == "c" and np.dtype(dtype).kind != "c"
    else f"x.astype(np.dtype({np.dtype(dtype).str!r}), copy=False)")
defvjp(cast_p, lambda g, ans, x, dtype: cast(g, x.dtype) if is_float(x.dtype) else None)
defjvp(cast_p, lambda t, ans, x, dtype: cast(t, dtype) if is_float(dtype) else None)


def cast(x, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc":        # as constant() refuses them: not numbers
        raise TypeError(f"pforjac.cast: dtype {dtype} is not a number type; cast to a bool, "
                        f"integer, float or complex dtype")
    if isinstance(x, Tensor) and x.dtype == dtype and unchanged(x):
        return x
    return cast_p.bind(x, dtype=dtype)


stop_gradient_p = core.new_primitive("stop_gradient", lambda x: x, lambda x: (x.shape, x.dtype),
                                     elementwise=True, zero_preserving=True, may_alias=True,
                                     domain=("real",))
defvjp(stop_gradient_p, None)
defjvp_all(stop_gradient_p, lambda ts, ans, x: None)


def stop_gradient(x):
    """Identity whose gradient is zero."""
    return stop_gradient_p.bind(x)


zeros_like_p = core.new_primitive("zeros_like", np.zeros_like, lambda x: (x.shape, x.dtype),
                                  differentiable=False, elementwise=True, domain=("real",))
ones_like_p = core.new_primitive("ones_like", np.ones_like, lambda x: (x.shape, x.dtype),
                                 differentiable=False, elementwise=True, domain=("real",))


def zeros_like(x): return zeros_like_p.bind(x)
def ones_like(x): return ones_like_p.bind(x)


def zeros(shape, dtype=np.float32) -> Tensor:
    return Tensor._from_array(np.zeros(int_tuple(shape, "zeros: shape"), dtype))


def ones(shape, dtype=np.float32) -> Tensor:
    return Tensor._from_array(np.ones(int_tuple(shape, "ones: shape"), dtype))


# -- examples for the generated checks (the other ops here draw from their domain) ------------
@core.defexamples(cast_p)
def _cast_examples(rng):
    x = rng.uniform(-1.5, 1.5, (2, 3))
    return [core.Example(x, dtype=np.dtype(np.float64)), core.Example(x, dtype=np.dtype(np.int32)),
            core.Example(rng.random(3) < 0.5, dtype=np.dtype(np.float64))]
