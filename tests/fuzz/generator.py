"""Random programs (JSON op lists, see interp.py), reproducible from one integer seed.

`generate(seed)` draws a dtype, a source shape and up to MAX_LINES lines. Each line is run
on numpy as it is drawn, so shapes come from numpy itself and only lines numpy accepts,
whose values are finite and moderate, are kept (pforjac must then accept them too). Ops
with a domain get their argument squashed into it first (`square + c`, `0.8 * tanh`).
A quarter of the programs get special values (NaN, +-inf, +-0, subnormals, the dtype's
largest) in their source; batch programs (`batch: true`) keep axis 0 as the batch axis
and half of them mix its rows on purpose.
"""
from __future__ import annotations

import numpy as np

from . import interp
from .ops import OPS, Ref

MAX_SIZE, MAX_OUT, MAX_LINES = 24, 8, 7
DTYPES = (("float64", 0.5), ("float32", 0.3), ("float16", 0.2))
SPECIAL_NAMES = ("nan", "inf", "-inf", "0", "-0", "tiny", "-tiny", "huge", "-huge")


class Draw:
    """The generator's state: the rng, values so far (float64, on numpy), the lines."""

    def __init__(self, seed: int, x_shape, batch: bool):
        self.rng = np.random.default_rng(seed)
        self.batch = batch
        self.program = {"dtype": "float64", "x_shape": list(x_shape), "x_seed": int(seed),
                        "batch": batch, "lines": []}
        self.values = [interp.x_value(self.program).astype(np.float64)]

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def coin(self, p=0.5) -> bool:
        return bool(self.rng.random() < p)

    def const(self, shape, lo=-1.5, hi=1.5) -> dict:
        return {"c": list(shape), "s": int(self.rng.integers(1000)), "lo": lo, "hi": hi}

    def shape(self, k):
        return tuple(np.shape(self.values[k]))

    def floats(self):
        return [k for k, v in enumerate(self.values) if np.asarray(v).dtype.kind == "f"]

    def add(self, name: str, args: list, kw: dict | None = None) -> int | None:
        """Runs the line on numpy; keeps it (returns its value index) if acceptable."""
        line = {"op": name, "args": args, "kw": kw or {}}
        trial = dict(self.program, lines=self.program["lines"] + [line])
        try:
            with np.errstate(all="ignore"):
                value = np.asarray(interp.run_ref(trial, Ref(np), self.values[0])[-1])
        except (ValueError, IndexError, TypeError, np.exceptions.AxisError):
            return None
        if value.dtype.kind != "f" or value.size > MAX_SIZE or not np.all(np.isfinite(value)) \
                or np.abs(value).max(initial=0) > 1e3:
            return None
        if self.batch and (value.ndim == 0 or value.shape[0] != self.values[0].shape[0]):
            return None
        self.program["lines"].append(line)
        self.values.append(value)
        return len(self.values) - 1

    def squash(self, k: int, domain: str) -> int | None:
        v = self.values[k]
        if domain == "pos" and v.size and v.min() <= 0.1:
            s = self.add("square", [{"v": k}])
            return None if s is None else self.add("add", [{"v": s}, 0.5])
        if domain == "ge1" and v.size and v.min() <= 1.1:
            s = self.add("square", [{"v": k}])
            return None if s is None else self.add("add", [{"v": s}, 1.5])
        if domain == "unit" and v.size and np.abs(v).max() >= 0.9:
            s = self.add("tanh", [{"v": k}])
            return None if s is None else self.add("multiply", [{"v": s}, 0.75])
        return k


def _axis(d: Draw, s, allow_none=False):
    if not s or (allow_none and d.coin(0.25)):
        return None
    lo = 1 if d.batch and len(s) > 1 and d.coin(0.8) else 0
    return int(d.rng.integers(lo, len(s))) - (len(s) if d.coin() else 0)


def _partner(d: Draw, k: int, lo=-1.5, hi=1.5):
    """A value broadcasting with value k (same shape), or a constant of a broadcastable shape."""
    s = d.shape(k)
    same = [j for j in d.floats() if d.shape(j) == s and j != k]
    if same and d.coin(0.4) and lo < 0:
        return {"v": d.pick(same)}
    keep = int(d.rng.integers(0, len(s) + 1))
    shape = [n if d.coin(0.7) else 1 for n in s[len(s) - keep:]]
    return d.const(shape, lo, hi)


def _factorizations(size: int, rank: int):
    if rank == 0:
        return [()] if size == 1 else []
    return [(f,) + rest for f in range(1, size + 1) if size % f == 0
            for rest in _factorizations(size // f, rank - 1)]


def _slice_key(d: Draw, s):
    key = []
    for n in s[:int(d.rng.integers(0, len(s) + 1))]:
        kind = int(d.rng.integers(0, 3))
        if kind == 0 or (d.batch and not key):
            key.append(["s", None, None, None])
        elif kind == 1 and n:
            key.append(int(d.rng.integers(-n, n)))
        else:
            a, b = sorted(int(v) for v in d.rng.integers(-n - 1, n + 2, 2))
            key.append(["s", a, b, d.pick([1, 2, -1, -2])] if d.coin(0.3) else ["s", a, b, None])
    if d.batch and not key:
        key.append(["s", None, None, None])
    if d.coin(0.25):
        key.insert(int(d.rng.integers(1 if d.batch else 0, len(key) + 1)), None)
    if d.coin(0.2):
        key.append("...")
    return key


def _einsum(d: Draw, k: int):
    s = d.shape(k)
    letters = "abcdef"[:len(s)]
    other = "".join(c for c in letters if d.coin(0.6)) + ("z" if d.coin(0.5) else "")
    shape2 = [s[letters.index(c)] if c != "z" else 2 for c in other]
    pool = sorted(set(letters + other))
    out = "".join(c for c in pool if d.coin(0.6))
    if d.batch and letters:
        out = letters[0] + out.replace(letters[0], "")
    square = len(s) == 2 and s[0] == s[1] and d.coin(0.2)
    if square:
        return ["aa->a" if d.coin() else "aa->", {"v": k}]
    if d.coin(0.3) and len(s) >= 1:        # both operands x-dependent
        return [f"{letters},{letters}->{out.replace('z', '')}", {"v": k}, {"v": k}]
    return [f"{letters},{other}->{out}", {"v": k}, d.const(shape2)]


# loop bodies that need rows of some rank (the rank of their argument here)
_ROW_RANKS = {"vmap_rev_last": lambda r: r >= 2, "vmap_gather_argmax": lambda r: r == 2}


def family_args(d: Draw, op, k: int):
    """(args, kw) for a line of `op` on value k, or None."""
    s = d.shape(k)
    v = {"v": k}
    f = op.family
    if f in ("unary", "unary_shape", "rows"):
        if f == "rows" and (not s or not all(s) or not _ROW_RANKS.get(op.name, bool)(len(s))):
            return None
        return [v], {}
    if f in ("binary", "binary_rev"):
        b = _partner(d, k, 0.5, 2.0) if op.domain == "pos" and f == "binary" else _partner(d, k)
        if f == "binary_rev" and d.coin(0.5):
            b = d.pick([2.0, 0.5, -1.0, 3.0])
        args = [v, b]
        if f == "binary" and not op.domain and d.coin() and isinstance(b, dict) and "v" in b:
            args.reverse()
        return args, {}
    if f == "list":
        if not s or not s[-1]:
            return None
        return [v, [float(c) for c in d.rng.uniform(-1.5, 1.5, s[-1])]], {}
    if f == "clip":
        lo = float(d.pick([-1.0, -0.5, 0.0, 0.25]))
        return [v, lo, lo + float(d.pick([0.5, 1.0, 2.0]))], {}
    if f == "where":
        return [v, _partner(d, k), _partner(d, k)], {}
    if f == "reduce":
        if op.name in ("max", "min", "logsumexp") and 0 in s:
            return None
        axis = _axis(d, s, allow_none=not d.batch)
        if d.batch and (axis is None or axis % max(len(s), 1) == 0) and d.coin(0.7):
            return None
        return [v], {"axis": axis, "keepdims": d.coin()}
    if f in ("axis", "axis_last"):
        return ([v], {"axis": _axis(d, s)}) if s and all(s) else None
    return _layout_args(d, op, k, s, v)


def _layout_args(d: Draw, op, k, s, v):
    f = op.family
    if f == "reshape":
        size = int(np.prod(s))
        shapes = [t for r in range(4) for t in _factorizations(size, r)]
        if d.batch:
            shapes = [t for t in shapes if t and t[0] == s[0]]
        return ([v], {"shape": list(d.pick(shapes))}) if shapes else None
    if f == "expand":
        return [v], {"axis": int(d.rng.integers(1 if d.batch else -len(s) - 1, len(s) + 1))}
    if f == "squeeze":
        return ([v], {}) if 1 in s[1 if d.batch else 0:] else None
    if f == "perm":
        if len(s) < 2:
            return None
        perm = list(d.rng.permutation(len(s)))
        return [v], {"perm": [int(p) for p in perm]}
    if f == "two_axes":
        return ([v, _axis(d, s), _axis(d, s)], {}) if len(s) >= 2 else None
    if f == "broadcast":
        return None if d.batch else ([v], {"shape": [2] + list(s)})
    if f == "tile":
        return [v], {"reps": [1 if d.batch and j == 0 else int(d.rng.integers(1, 3))
                              for j in range(max(len(s), 1))]}
    if f == "pad":
        widths = [[0, 0] if d.batch and j == 0 else [int(d.rng.integers(0, 2)), int(d.rng.integers(0, 2))]
                  for j in range(len(s))]
        return ([v], {"widths": widths, "value": float(d.pick([0.0, 1.5]))}) if s else None
    if f == "split":
        axes = [j for j, n in enumerate(s) if n >= 2 and not (d.batch and j == 0)]
        if not axes:
            return None
        a = d.pick(axes)
        return [v], {"at": int(d.rng.integers(1, s[a])), "axis": a, "part": int(d.rng.integers(0, 2))}
    if f in ("concat", "stack"):
        return _join_args(d, f, k, s, v)
    if f == "roll":
        return ([v], {"shift": int(d.rng.integers(-2, 3)), "axis": _axis(d, s)}) if s else None
    return _index_args(d, op, k, s, v)


def _join_args(d: Draw, f, k, s, v):
    if not s and f == "concat":
        return None
    axis = _axis(d, s) if f == "concat" else int(d.rng.integers(1 if d.batch else 0, len(s) + 1))
    other = list(s)
    if f == "concat":
        other[axis] = int(d.rng.integers(1, 3))
    same = [j for j in d.floats() if list(d.shape(j)) == other]
    b = {"v": d.pick(same)} if same and d.coin() else d.const(other)
    args = [v, b] if d.coin() else [b, v]
    return args, {"axis": axis}


def _index_args(d: Draw, op, k, s, v):
    f = op.family
    if f == "slice":
        return [v], {"key": _slice_key(d, s)}
    if f in ("gather", "gather0", "scatter"):
        if not s or not all(s):
            return None
        axis = 0 if f == "gather0" else (_axis(d, s) % len(s))
        if d.batch and axis == 0 and f != "scatter" and d.coin(0.8):
            return None
        n = s[axis]
        if f == "scatter":
            if d.batch and axis == 0:
                return None
            idx = d.rng.integers(0, n + 1, n).tolist()
            return [v, {"i": idx}], {"axis": axis, "size": int(max(idx) + 1 + d.rng.integers(0, 2))}
        shape = d.pick([(), (1,), (2,), (3,), (2, 2)])
        idx = d.rng.integers(-n, n, shape).tolist()
        return ([v, {"i": idx}], {"axis": axis}) if f == "gather" else ([v, {"i": idx}], {})
    if f == "matmul":
        return _matmul_args(d, k, s, v)
    if f == "einsum":
        return (_einsum(d, k), {}) if 1 <= len(s) <= 3 else None
    if f in ("mix", "mix_const"):
        if not d.batch:
            return None
        return ([v], {}) if f == "mix" else ([v, d.const((s[0], s[0]))], {})
    if f in ("custom", "conform"):       # the op draws its own (ops_numpy.py, ops_conform.py)
        return op.extra["draw"](d, k, s)
    raise AssertionError(f"no argument rule for family {f!r}")


def _matmul_args(d: Draw, k, s, v):
    if not s:
        return None
    choice = int(d.rng.integers(0, 4))
    if choice == 0:
        return [v, d.const((s[-1], int(d.rng.integers(1, 4))))], {}
    if choice == 1:
        return [v, d.const((s[-1],))], {}
    if choice == 2 and not d.batch:
        rows = s[-2] if len(s) >= 2 else s[-1]
        return [d.const((int(d.rng.integers(1, 3)), rows)), v], {}
    partners = [j for j in d.floats() if d.shape(j) and
                (d.shape(j)[0] if len(d.shape(j)) == 1 else d.shape(j)[-2]) == s[-1]]
    return ([v, {"v": d.pick(partners)}], {}) if partners else None


def _draw_line(d: Draw, names: list) -> None:
    last = len(d.values) - 1
    floats = d.floats()
    k = last if d.coin(0.7) or last not in floats else d.pick(floats)
    if k not in floats:
        return
    op = OPS[d.pick(names)]
    if op.domain and op.family in ("unary", "binary_rev"):
        k = d.squash(k, op.domain)
        if k is None:
            return
    drawn = family_args(d, op, k)
    if drawn is not None:
        d.add(op.name, *drawn)


def _finish(d: Draw) -> None:
    """Keep the output small (and, for batch programs, of rank >= 2)."""
    for _ in range(4):
        s = d.shape(len(d.values) - 1)
        if d.batch and len(s) == 1:
            d.add("expand_dims", [{"v": len(d.values) - 1}], {"axis": 1})
        elif int(np.prod(s)) > (MAX_OUT * s[0] if d.batch else MAX_OUT) and s:
            d.add("sum", [{"v": len(d.values) - 1}], {"axis": len(s) - 1 if d.batch else 0,
                                                      "keepdims": False})
        else:
            return


def generate(seed: int, batch: bool | None = None, names: list | None = None) -> dict:
    rng = np.random.default_rng([seed, 1])
    batch = bool(rng.random() < 0.25) if batch is None else batch
    if batch:
        x_shape = [int(rng.integers(2, 4))] + [int(rng.integers(1, 4)) for _ in range(rng.integers(1, 3))]
    else:
        x_shape = [int(rng.integers(1, 4)) for _ in range(rng.integers(0, 4))]
    d = Draw(seed, x_shape, batch)
    names = names or [n for n, o in OPS.items() if o.family != "none" and (batch or not o.batch_mixing)]
    steps = int(d.rng.integers(1, MAX_LINES + 1))
    mixing = batch and d.coin()
    for _ in range(4 * steps):
        if len(d.program["lines"]) >= steps:
            break
        if mixing and len(d.program["lines"]) == steps // 2:
            _draw_line(d, [n for n, o in OPS.items() if o.batch_mixing])
        _draw_line(d, [n for n in names if not OPS[n].batch_mixing])
    _finish(d)
    program = d.program
    dtype_names, weights = zip(*DTYPES)
    program["dtype"] = str(rng.choice(dtype_names, p=weights))
    if any(OPS[line["op"]].extra.get("float64") for line in program["lines"]):
        program["dtype"] = "float64"            # (ops_conform.py's float64 maths)
    if not batch and rng.random() < 0.25:
        size = int(np.prod(x_shape))
        if size:
            program["special"] = [[int(rng.integers(size)), str(rng.choice(SPECIAL_NAMES))]
                                  for _ in range(int(rng.integers(1, 3)))]
    return program
