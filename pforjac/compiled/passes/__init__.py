"""Simplification passes on Programs: each takes a Program and returns one that computes the
same values (the same bits, but for `batch_major_products`, below), never changing its input.

| pass | module | what it does |
| --- | --- | --- |
| `fold_constants` | constants | evaluates equations whose inputs are fixed constants |
| `onehot_products` | identities | `matmul(one_hot(idx, d), u)` becomes `gather(u, idx)` |
| `drop_identities` | identities | products with ones; gathers of every row in order |
| `cancel_reshapes` | reshapes | chains of reshapes and transposes as one reshape, or none |
| `eliminate_common_subexpressions` | subexpressions | one equation per (op, inputs, params) |
| `keep_reduced_axes` | keepdims | a reduction keeps the axes a reshape would put back |
| `batch_major_products` | batch_major | products read batch-first computed batch-first |
| `compact_constants` | layouts | large repeated constants stored once per repeated axis |
| `uniform_constants` | uniform | a constant of equal entries that ufuncs read as one number |
| `negated_sums` | uniform | `x + (-1) * y` as `x - y` |
| `fold_scalings` | scalings | `-(x * c)` as `x * (-c)`, `(x * 2) * c` as `x * (2 * c)` |
| `broadcasts_into_ufuncs` | layouts | a C-ordered ufunc broadcasts its operands itself |
| `eliminate_dead_code` | pforjac.program | drops equations no output needs |

`PASSES` is the one pass list, in that order, for every compiled path; `pass_list` leaves
out `batch_major_products`, the one pass that may change a product's last bits (BLAS rounds
a row by its position in the product): the eager loop cache never runs it (a repeated eager
call gives the first call's bits) and `pforjac.function(batch_major=False)` leaves it out.
"""
from __future__ import annotations

from ...program import Program, eliminate_dead_code
from .batch_major import batch_major_products
from .constants import fold_constants
from .identities import drop_identities, onehot_products
from .keepdims import keep_reduced_axes
from .layouts import broadcasts_into_ufuncs, compact_constants
from .reshapes import cancel_reshapes, view_chain_in_order
from .scalings import fold_scalings
from .uniform import negated_sums, uniform_constants
from .subexpressions import eliminate_common_subexpressions, param_key

__all__ = ["PASSES", "pass_list", "simplify", "fold_constants", "onehot_products", "drop_identities",
           "cancel_reshapes", "keep_reduced_axes", "eliminate_common_subexpressions", "batch_major_products",
           "compact_constants", "uniform_constants", "negated_sums", "fold_scalings",
           "broadcasts_into_ufuncs", "eliminate_dead_code",
           "view_chain_in_order", "param_key"]

PASSES = (fold_constants, onehot_products, drop_identities, cancel_reshapes,
          eliminate_common_subexpressions, keep_reduced_axes, batch_major_products, compact_constants,
          uniform_constants, negated_sums, fold_scalings, broadcasts_into_ufuncs, eliminate_dead_code)


def pass_list(batch_major: bool) -> tuple:
    """`PASSES`, without `batch_major_products` unless `batch_major`."""
    return PASSES if batch_major else tuple(p for p in PASSES if p is not batch_major_products)


def simplify(program: Program, passes=PASSES) -> Program:
    """`program` after each of `passes` in turn."""
    for p in passes:
        program = p(program)
    return program
