"""Known issues (being fixed by others): a mismatch that matches one is marked, not new.

Each entry: a name (the known difference it records) and a test on the
mismatch record (and its call). The tests are narrow, and where they can, they check the
cause: the cumsum test removes the program's cumsum lines and asks the oracle whether the
rows still mix. A mismatch no test claims is new: the report gives its reproducer.
"""
from __future__ import annotations

import numpy as np

from . import interp

KNOWN: list[tuple[str, object]] = []


def known(name: str):
    def register(test):
        KNOWN.append((name, test))
        return test
    return register


def known_issue(record: dict, call) -> str | None:
    for name, test in KNOWN:
        try:
            if test(record, call):
                return name
        except Exception:       # noqa: BLE001  (a test that cannot decide claims nothing)
            continue
    return None


def _shapes(program: dict) -> list:
    x = interp.x_value(dict(program, special=None)).astype(np.float64)
    from .ops import Ref
    with np.errstate(all="ignore"):
        return [np.shape(v) for v in interp.run_ref(program, Ref(np), x)]


def replace_lines(program: dict, lines: list[int]) -> dict:
    """The program with those lines made identities (their first argument passes through)."""
    new = [dict(line, op="identity") if k in lines else line
           for k, line in enumerate(program["lines"])]
    return dict(program, lines=new)


@known("rowmix: cumsum is not seen by the row check (its verdict is Unknown: silent)")
def _rowmix_cumsum(record, call) -> bool:
    """Rows mix, batch_jacobian is silent, and the program has a cumsum without which the
    row check warns (pforjac) or the rows don't mix (the oracle)."""
    if not record["what"].startswith("rows mix"):
        return False
    program = record["program"]
    lines = [k for k, line in enumerate(program["lines"]) if "cumsum" in line["op"]]
    if not lines:
        return False
    rest = replace_lines(program, lines)
    from .check import ROW_WARNING
    from .paths import call as run, program_fn, tape_batch_jacobian
    import pforjac as pj
    c = run("batch_jacobian", "batch", 0, tape_batch_jacobian(program_fn(rest)),
            pj.constant(interp.x_value(rest)))
    if any(ROW_WARNING in w for w in c.warnings):
        return True
    from .batch import off_diagonal
    from .oracle import fd_jacobian
    jac, tol = fd_jacobian(rest)
    return off_diagonal(jac, len(_shapes(rest)[-1])) <= 10 * float(tol.max(initial=0.0))


@known("list operands rounded to float32")
def _list_operands(record, call) -> bool:
    """A Python list operand becomes a float32 constant: a float64 program's derivative
    differs by float32 rounding (1e-8), a float16 program's result is float32."""
    if not any(line["op"] == "multiply_list" for line in record["program"]["lines"]):
        return False
    dtype = record["program"]["dtype"]
    if record["what"] == "dtype" or "dtype float32" in record["detail"]:
        return dtype == "float16"
    if record["what"] == "forward vs numpy":
        return "(multiply_list): value" in record["detail"] and dtype == "float64"
    if record["what"].startswith("value") and dtype == "float64":
        got, want = _got_want(record["detail"])
        return abs(got - want) <= 1e-4 * max(abs(want), 1e-300)   # float32 rounding, amplified
    return False


def _got_want(detail: str) -> tuple[float, float]:
    import re
    got = re.search(r"got (?:np\.float\d+\()?([-+0-9.e]+|nan|inf)", detail).group(1)
    want = re.search(r"want (?:np\.float\d+\()?([-+0-9.e]+|nan|inf)", detail).group(1)
    return float(got), float(want)


@known("float16 mean accumulation")
def _f16_mean(record, call) -> bool:
    return record["program"]["dtype"] == "float16" and record["what"] == "forward vs numpy" \
        and any(f"({op})" in record["detail"] for op in ("mean", "var", "std"))


@known("scatter_add -0.0")
def _scatter_zero(record, call) -> bool:
    return record["what"] == "forward vs numpy" and "zero sign" in record["detail"] \
        and "(scatter_add)" in record["detail"]


@known("pforjac.function codegen: einsum `order` repeated")
def _codegen_order(record, call) -> bool:
    return "function" in record["path"] and record["what"] == "raised" \
        and "order" in record["detail"]


_LINALG = ("linalg", "pinv", "det", "lstsq", "eigvalsh", "norm")


@known("zero signs of linear-algebra results")
def _linalg_zero_sign(record, call) -> bool:
    """A zero that an svd / LAPACK result computes (pinv's, through float32 for float16)
    has the sign of its summation order, which numpy's and pforjac's need not share."""
    import re
    if record["what"] != "forward vs numpy" or "zero sign" not in record["detail"]:
        return False
    op = re.search(r"\((\w+)\)", record["detail"]).group(1)
    return any(name in op for name in _LINALG)


_CONTRACTIONS = ("tensordot", "inner", "dot", "einsum", "outer", "kron")   # (dot: vdot, multi_dot too)


@known("contractions at special values: a zero's sign, overflow's order")
def _contraction_order(record, call) -> bool:
    """A sum of products numpy computes by BLAS's dot (one product: -0.0 stays, or its own
    order of adding overflowing products) and pforjac by einsum/matmul's (a sum from +0.0;
    another order): the zero's sign, and inf or NaN where products overflow to +-inf at the
    dtype's largest value, differ. Values that are finite and nonzero agree."""
    import re
    if record["what"] != "forward vs numpy":
        return False
    op = re.search(r"\((\w+)\)", record["detail"]).group(1)
    if not any(name in op for name in _CONTRACTIONS):
        return False
    if "zero sign" in record["detail"]:
        return True
    huge = any(name.endswith("huge") for _, name in record["program"].get("special") or ())
    return record["detail"].startswith(f"line v") and "NaN" in record["detail"] and huge


@known("cov, corrcoef: numpy computes float32/16 in float64")
def _cov_wide(record, call) -> bool:
    """numpy's cov takes result_type(m, float64) and rounds at the end; pforjac keeps the
    source's dtype throughout, so a variance of the dtype's largest values overflows (inf,
    and corrcoef's inf / inf = NaN) where numpy's stays finite."""
    import re
    if record["what"] != "forward vs numpy" or record["program"]["dtype"] == "float64":
        return False
    op = re.search(r"\((\w+)\)", record["detail"]).group(1)
    huge = any(name.endswith("huge") for _, name in record["program"].get("special") or ())
    return op in ("np_cov", "pj_corrcoef", "np_corrcoef_y") and huge
