"""The converter of the custom-derivative call primitives: the same call, on the function
mapped over the loop axis (its primal and its rules each vectorized by pfor)."""
from __future__ import annotations

from ..custom_batching import mapped_rules
from ..custom_calls import custom_jvp_call_p, custom_vjp_call_p, rules_of
from ..pfor import register_converter
from ._helpers import to_stacked


def _convert_call(prim):
    def convert(n, args, stacked, rules: int, residuals: bool = False):
        args = [to_stacked(n, a, s) for a, s in zip(args, stacked)]
        mapped = mapped_rules(rules_of(rules), n)
        return prim.bind(*args, rules=mapped.key, residuals=residuals), True
    convert.__name__ = f"_convert_{prim.name}"
    return convert


for _prim in (custom_jvp_call_p, custom_vjp_call_p):
    register_converter(_prim)(_convert_call(_prim))
