"""Custom functions whose calls the generated checks of the call primitives make
(tests/test_rules.py, tests/test_converters.py): rules with known closed forms."""
from __future__ import annotations

from . import ops
from .core import Example, defexamples
from .custom_calls import custom_jvp_call_p, custom_vjp_call_p
from .custom_derivatives import custom_jvp, custom_vjp
from .tree import tree_flatten

__all__ = ["examples"]


@custom_jvp
def softplus(x):
    return ops.log1p(ops.exp(x))


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t * ops.sigmoid(x)


@custom_vjp
def sin_times(x, y):
    return ops.sin(x) * y


def _sin_times_fwd(x, y):
    return sin_times(x, y), (ops.cos(x), ops.sin(x), y)


def _sin_times_bwd(res, g):
    cos_x, sin_x, y = res
    return g * cos_x * y, g * sin_x


sin_times.defvjp(_sin_times_fwd, _sin_times_bwd)


def _key(custom, n_args: int) -> int:
    return custom._record((), tree_flatten([0.0] * n_args)[1]).key


def examples(kind: str, rng) -> list[Example]:
    if kind == "jvp":
        key = _key(softplus, 1)
        return [Example(rng.normal(size=(3,)), rules=key, residuals=False)]
    key = _key(sin_times, 2)
    x, y = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    return [Example(x, y, rules=key, residuals=False), Example(x, y, rules=key, residuals=True)]


defexamples(custom_jvp_call_p)(lambda rng: examples("jvp", rng))
defexamples(custom_vjp_call_p)(lambda rng: examples("vjp", rng))
