"""Programs as JSON op lists, and running them on a backend (numpy, jax.numpy or pforjac).

A program is a dict:

    {"dtype": "float32", "x_shape": [2, 3], "x_seed": 7, "batch": false,
     "special": [[flat_index, "nan"], ...] or absent,
     "lines": [{"op": "sin", "args": [{"v": 0}], "kw": {}}, ...]}

Line k's output is value k + 1 (value 0 is the source x); the program returns its last
value. An argument is a value `{"v": k}`, a float constant `{"c": shape, "s": seed,
"lo": lo, "hi": hi}` (uniform, drawn in float64 and rounded to the program's dtype), an
int32 index array `{"i": nested list}`, or a literal (number, string, list). Everything is
rebuilt from the text, so a program pasted from a report runs again. Imports no pforjac
and no JAX (the JAX worker uses it).
"""
from __future__ import annotations

import json

import numpy as np

from .ops import OPS, Ref

SPECIALS = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "0": 0.0, "-0": -0.0,
            "tiny": 5e-324, "-tiny": -5e-324, "huge": 1e300, "-huge": -1e300}


def special_value(name: str, dtype) -> float:
    """`name` in `dtype`: huge is the dtype's largest finite value (1e300 in float64), tiny
    its smallest subnormal."""
    info = np.finfo(dtype)
    if name.endswith("huge"):
        v = 1e300 if np.dtype(dtype) == np.float64 else float(info.max)
        return -v if name.startswith("-") else v
    if name.endswith("tiny"):
        v = float(info.smallest_subnormal)
        return -v if name.startswith("-") else v
    return SPECIALS[name]


def x_value(program: dict, variant: int = 0) -> np.ndarray:
    """The source, in the program's dtype: variant 0 the base point, 1 and 2 nearby points
    (the loop cache's and compiled function's second and third calls); uniform in
    program["domain"] (default -1.5..1.5)."""
    rng = np.random.default_rng(program["x_seed"])
    lo, hi = program.get("domain") or (-1.5, 1.5)
    x = rng.uniform(lo, hi, program["x_shape"])
    if variant:
        x = x + 0.05 * np.random.default_rng([program["x_seed"], variant]).standard_normal(x.shape)
        x = np.clip(x, lo, hi)
    x = x.astype(program["dtype"])
    for flat, name in program.get("special") or ():
        x.reshape(-1)[flat] = special_value(name, x.dtype)
    return x


def const_value(spec: dict, dtype) -> np.ndarray:
    rng = np.random.default_rng(spec["s"])
    return rng.uniform(spec["lo"], spec["hi"], spec["c"]).astype(dtype)


def _resolve(arg, values, dtype, eval_dtype, asarray):
    if isinstance(arg, dict):
        if "v" in arg:
            return values[arg["v"]]
        if "c" in arg:
            return asarray(const_value(arg, dtype).astype(eval_dtype))
        if "i" in arg:
            return np.asarray(arg["i"], np.int32)
    if isinstance(arg, list) and arg and isinstance(arg[0], dict):
        return [_resolve(a, values, dtype, eval_dtype, asarray) for a in arg]
    return arg


def _kw(kw: dict) -> dict:
    """JSON lists back to tuples where numpy wants tuples (axes, shapes)."""
    out = {}
    for k, v in kw.items():
        out[k] = tuple(_tuple(x) for x in v) if isinstance(v, list) and k != "key" else v
    return out


def _tuple(v):
    return tuple(_tuple(x) for x in v) if isinstance(v, list) else v


def run_ref(program: dict, B: Ref, x, eval_dtype=None, override: dict | None = None) -> list:
    """Every value of the program on reference backend B (x already in eval_dtype); value k
    replaced by override[k] where given (the lines after it read the replacement)."""
    dtype = np.dtype(program["dtype"])
    eval_dtype = dtype if eval_dtype is None else np.dtype(eval_dtype)
    override = override or {}
    values = [override.get(0, x)]
    asarray = B.xp.asarray
    for k, line in enumerate(program["lines"]):
        B.line = k
        args = [_resolve(a, values, dtype, eval_dtype, asarray) for a in line["args"]]
        value = OPS[line["op"]].ref(B, *args, **_kw(line["kw"]))
        values.append(override.get(k + 1, value))
    return values


def run_pj(program: dict, pj, x) -> list:
    """Every value of the program on pforjac (x a Tensor of the program's dtype; or a list
    of values that the lines' references index)."""
    dtype = np.dtype(program["dtype"])
    values = list(x) if isinstance(x, list) else [x]
    for line in program["lines"]:
        args = [_resolve(a, values, dtype, dtype, pj.constant) for a in line["args"]]
        values.append(OPS[line["op"]].pj(pj, *args, **_kw(line["kw"])))
    return values


def numpy_f(program: dict, eval_dtype=np.float64, margins=None, frozen=None):
    """x -> the program's output on numpy in `eval_dtype` (constants rounded to the program's
    dtype first). `frozen` holds stop_gradient's values at the base point (see Ref.stop)."""
    def f(x):
        B = Ref(np, margins)
        B.frozen = frozen
        with np.errstate(all="ignore"):
            return np.asarray(run_ref(program, B, np.asarray(x, eval_dtype), eval_dtype)[-1])
    return f


def dumps(program: dict) -> str:
    return json.dumps(program, separators=(",", ":"))


def used_ops(program: dict) -> set:
    return {line["op"] for line in program["lines"]}


def source(program: dict) -> str:
    """The program as readable pforjac code (for reports)."""
    out = [f"# x: {program['dtype']}{tuple(program['x_shape'])}, seed {program['x_seed']}, "
           f"special {program.get('special')}"]
    for k, line in enumerate(program["lines"]):
        args = ", ".join(_arg_text(a) for a in line["args"])
        kw = "".join(f", {n}={v!r}" for n, v in line["kw"].items())
        out.append(f"v{k + 1} = {line['op']}({args}{kw})")
    return "\n".join(out)


def _arg_text(a) -> str:
    if isinstance(a, dict):
        if "v" in a:
            return f"v{a['v']}"
        if "c" in a:
            return f"C({tuple(a['c'])}, seed={a['s']}, {a['lo']}..{a['hi']})"
        return f"idx{a['i']}"
    if isinstance(a, list) and a and isinstance(a[0], dict):
        return "[" + ", ".join(_arg_text(b) for b in a) + "]"
    return repr(a)
