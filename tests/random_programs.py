"""A hypothesis strategy for random pforjac programs, as readable Python source.

A program is a function `f(x)` of one float64 source, made of lines
`vK = <op>(earlier values, constants)`. The generator runs each line eagerly as
it goes, so shapes come from the engine itself and only valid ops are kept.
Constants are `C(shape, seed)`, reproducible from the source text alone, so a
failing example printed by hypothesis can be pasted into a regression test.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import strategies as st

import pforjac as pj

MAX_SIZE = 24      # elements of any intermediate value
MAX_OUT = 8        # elements of the output (one gradient per output entry)


def C(shape, seed: int, low: float | None = None):
    """A reproducible float64 constant: normal, or uniform in [low, low + 1.5)."""
    rng = np.random.default_rng(seed)
    arr = rng.standard_normal(shape) if low is None else rng.uniform(low, low + 1.5, shape)
    return pj.constant(np.asarray(arr, np.float64))


class RandomProgram:
    def __init__(self, x_shape: tuple, lines: list[str], x_seed: int):
        self.x_shape, self.lines, self.x_seed = tuple(x_shape), list(lines), x_seed

    @property
    def source(self) -> str:
        body = "".join(f"    {line}\n" for line in self.lines)
        return f"def f(v0):\n{body}    return v{len(self.lines)}\n"

    def function(self):
        scope = {"pj": pj, "np": np, "C": C}
        exec(compile(self.source, "<random program>", "exec"), scope)
        return scope["f"]

    def x(self, shape=None) -> np.ndarray:
        return np.random.default_rng(self.x_seed).standard_normal(shape or self.x_shape)

    def __repr__(self) -> str:
        return f"RandomProgram(x_shape={self.x_shape}, x_seed={self.x_seed}, source=\n{self.source})"


# -- one op per generator: (draw, name of a, shape of a, pool) -> line or None ------------
UNARY = ["pj.neg({a})", "pj.sin({a})", "pj.cos({a})", "pj.tanh({a})", "pj.sigmoid({a})",
         "pj.softplus({a})", "pj.square({a})", "pj.abs({a})", "pj.relu({a})", "pj.exp({a})",
         "pj.log1p(pj.square({a}))", "pj.sqrt(pj.square({a}) + 1.0)", "pj.log(pj.abs({a}) + 0.5)",
         "pj.reciprocal(pj.square({a}) + 1.0)", "pj.stop_gradient({a}) * {a}",
         "pj.expm1(pj.tanh({a}))", "pj.tan(pj.tanh({a}))", "pj.sign({a}) * {a}", "{a} ** 2",
         "2.0 * {a} - 1.0"]
BINARY = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / (1.0 + pj.square({b}))",
          "pj.maximum({a}, {b})", "pj.minimum({a}, {b})", "pj.where({a} > {b}, {a}, {b} * 2.0)",
          "pj.power(pj.sigmoid({a}) + 0.5, {b})", "{b} - {a}", "{b} * pj.tanh({a})"]
REDUCTIONS = ["sum", "max", "min", "mean", "prod", "logsumexp"]


def _refuses_nothing(kind: str) -> bool:
    """Whether the reduction of an empty tensor raises (max and min have no identity)."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(pj, kind)(pj.zeros((0,), np.float64))
    except ValueError:
        return True
    return False


WITHOUT_IDENTITY = {kind for kind in REDUCTIONS if _refuses_nothing(kind)}


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _const(draw, shape, low=None) -> str:
    seed = draw(st.integers(0, 99))
    return f"C({tuple(shape)}, {seed})" if low is None else f"C({tuple(shape)}, {seed}, {low})"


def _partner_shape(draw, s):
    """A shape that broadcasts against `s` without growing past MAX_SIZE."""
    k = draw(st.integers(0, len(s)))
    shape = [d if draw(st.booleans()) else 1 for d in s[len(s) - k:]]
    if len(s) < 3 and draw(st.integers(0, 4)) == 0 and _size(s) * 2 <= MAX_SIZE:
        shape = [2] + [1] * (len(s) - len(shape)) + shape
    return tuple(shape)


def gen_unary(draw, a, s, pool):
    return draw(st.sampled_from(UNARY)).format(a=a)


def gen_binary(draw, a, s, pool):
    partners = [name for name, t in pool.items()
                if _broadcasts(s, t) and _size(np.broadcast_shapes(s, t)) <= MAX_SIZE]
    if partners and draw(st.booleans()):
        b = draw(st.sampled_from(partners))
    else:
        b = _const(draw, _partner_shape(draw, s))
    template = draw(st.sampled_from(BINARY))
    if draw(st.booleans()):
        a, b = b, a
    return template.format(a=a, b=b)


def _broadcasts(s, t) -> bool:
    try:
        np.broadcast_shapes(s, t)
        return True
    except ValueError:
        return False


def gen_reduce(draw, a, s, pool):
    kind = draw(st.sampled_from(REDUCTIONS))
    keepdims = draw(st.booleans())
    if not s or draw(st.integers(0, 3)) == 0:
        axis = "None"
    else:
        axes = draw(st.lists(st.integers(-len(s), len(s) - 1), min_size=1, max_size=len(s),
                             unique_by=lambda k: k % len(s)))
        axis = str(axes[0]) if len(axes) == 1 else str(tuple(axes))
    if kind in WITHOUT_IDENTITY and axis == "None" and not _size(s):
        return None
    return f"pj.{kind}({a}, axis={axis}, keepdims={keepdims})"


def _factorizations(size: int, rank: int):
    if rank == 0:
        return [()] if size == 1 else []
    out = []
    for d in range(1, size + 1):
        if size % d == 0:
            out += [(d,) + rest for rest in _factorizations(size // d, rank - 1)]
    return out


def gen_reshape(draw, a, s, pool):
    size = _size(s)
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return f"pj.reshape({a}, (-1,))"
    if choice == 1:
        return f"pj.expand_dims({a}, {draw(st.integers(-len(s) - 1, len(s)))})"
    if choice == 2 and 1 in s:
        return f"pj.squeeze({a})"
    shapes = [t for r in range(0, 4) for t in _factorizations(size, r)] if size else [(0,), (2, 0)]
    return f"pj.reshape({a}, {draw(st.sampled_from(shapes))})"


def gen_transpose(draw, a, s, pool):
    if len(s) < 2:
        return None
    perm = draw(st.permutations(range(len(s))))
    if draw(st.booleans()):
        return f"{a}.T" if len(s) == 2 else f"pj.transpose({a}, {tuple(perm)})"
    return f"pj.swapaxes({a}, {draw(st.integers(0, len(s) - 1))}, {draw(st.integers(-len(s), -1))})"


def _slice_text(draw, d: int) -> str:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return ":"
    if kind == 1 and d:
        return str(draw(st.integers(-d, d - 1)))
    step = draw(st.sampled_from([1, 2, -1, -2, 3]))
    start = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
    stop = draw(st.one_of(st.none(), st.integers(-d - 1, d + 1)))
    text = ("" if start is None else str(start)) + ":" + ("" if stop is None else str(stop))
    return text + ("" if step == 1 else f":{step}")


def gen_slice(draw, a, s, pool):
    parts = [_slice_text(draw, d) for d in s[:draw(st.integers(0, len(s)))]]
    if draw(st.integers(0, 2)) == 0:
        parts.insert(draw(st.integers(0, len(parts))), "None")
    if draw(st.integers(0, 4)) == 0:
        parts.insert(draw(st.integers(0, len(parts))), "...")
    key = ", ".join(parts) if parts else "..."
    return f"{a}[{key}]"


def gen_gather(draw, a, s, pool):
    if not s or not all(s):
        return None
    axis = draw(st.integers(0, len(s) - 1))
    d = s[axis]
    shape = draw(st.sampled_from([(), (1,), (2,), (3,), (2, 2)]))
    idx = np.asarray(draw(st.lists(st.integers(-d, d - 1), min_size=_size(shape),
                                   max_size=_size(shape)))).reshape(shape).tolist()
    if axis == 0 and draw(st.booleans()):
        return f"{a}[np.array({idx}, np.int32)]"
    return f"pj.gather({a}, np.array({idx}, np.int32), axis={axis})"


def gen_concat(draw, a, s, pool):
    if not s:
        return f"pj.stack([{a}, {_const(draw, s)}], axis={draw(st.integers(0, 0))})"
    axis = draw(st.integers(0, len(s) - 1))
    partners = [name for name, t in pool.items() if len(t) == len(s)
                and all(x == y for k, (x, y) in enumerate(zip(s, t)) if k != axis)]
    if partners and draw(st.booleans()):
        b = draw(st.sampled_from(partners))
    else:
        other = list(s)
        other[axis] = draw(st.integers(1, 2))
        b = _const(draw, other)
    if draw(st.booleans()):
        a, b = b, a
    if draw(st.integers(0, 3)) == 0 and pool.get(b) == s:
        return f"pj.stack([{a}, {b}], axis={draw(st.integers(-len(s) - 1, len(s)))})"
    return f"pj.concat([{a}, {b}], axis={axis})"


def gen_matmul(draw, a, s, pool):
    if not s:
        return None
    k = s[-1]
    choice = draw(st.integers(0, 4))
    if choice == 0:                                   # a @ W
        return f"{a} @ {_const(draw, (k, draw(st.integers(1, 3))))}"
    if choice == 1:                                   # a @ v (1-D)
        return f"pj.matmul({a}, {_const(draw, (k,))})"
    if choice == 2:                                   # W @ a, a seen as the right operand
        rows = s[-2] if len(s) >= 2 else s[-1]
        lead = draw(st.sampled_from([(), (rows,), (2, rows)] if len(s) < 3 else [(), (rows,)]))
        return f"pj.matmul({_const(draw, lead)}, {a})" if lead else None
    if choice == 3 and len(s) >= 2:                   # a @ a^T: both operands depend on x
        return f"pj.matmul({a}, pj.swapaxes({a}, -1, -2))"
    partners = [n for n, t in pool.items() if t and (t[0] if len(t) == 1 else t[-2]) == k
                and _matmul_ok(s, t)]
    if partners:                                      # a @ b, b another value
        return f"pj.matmul({a}, {draw(st.sampled_from(partners))})"
    return None


def _matmul_ok(s, t) -> bool:
    try:
        np.matmul(np.zeros(s), np.zeros(t))
        return True
    except ValueError:
        return False


def gen_einsum(draw, a, s, pool):
    if len(s) == 2:
        return draw(st.sampled_from([
            f"pj.einsum('ij->ji', {a})", f"pj.einsum('ij,jk->ik', {a}, {_const(draw, (s[1], 2))})",
            f"pj.einsum('ij,ij->i', {a}, {a})", f"pj.einsum('ij,kj->ik', {a}, {a})"]))
    if len(s) == 1:
        return f"pj.einsum('i,j->ij', {a}, {_const(draw, (2,))})"
    return None


def gen_layout(draw, a, s, pool):
    """broadcast_to, tile, pad, split."""
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return f"pj.broadcast_to({a}, {(2,) + tuple(s)})"
    if choice == 1:
        reps = tuple(draw(st.integers(1, 2)) for _ in s) or (2,)
        return f"pj.tile({a}, {reps})"
    if choice == 2 and s:
        widths = tuple((draw(st.integers(0, 1)), draw(st.integers(0, 1))) for _ in s)
        return f"pj.pad({a}, {widths}, {draw(st.sampled_from([0.0, 1.5]))})"
    if choice == 3 and s and s[-1] >= 2:
        at = draw(st.integers(1, s[-1] - 1))
        part = draw(st.integers(0, 1))
        return f"pj.split({a}, [{at}], axis={len(s) - 1})[{part}]"
    return None


def gen_softmax(draw, a, s, pool):
    if not s:
        return None
    fn = draw(st.sampled_from(["softmax", "log_softmax"]))
    return f"pj.{fn}({a}, axis={draw(st.integers(-len(s), len(s) - 1))})"


def gen_vmap(draw, a, s, pool):
    """A pfor inside the program: the Jacobian then vectorizes converter output again."""
    if not s or not s[0]:
        return None
    bodies = ["lambda r: pj.sin(r) * pj.sum(r)", "lambda r: pj.tanh(r) * {a}[0]",
              "lambda r: pj.logsumexp(r, axis=None) + pj.square(r)"]
    if len(s) >= 2:
        bodies += [f"lambda r: pj.matmul(r, {_const(draw, (s[-1], 2))})",
                   "lambda r: r[::-1] * r[-1]",
                   "lambda r: pj.gather(r, np.array([0, 0], np.int32), axis=0)"]
    if draw(st.booleans()):
        return f"pj.vectorized_map({draw(st.sampled_from(bodies)).format(a=a)}, {a})"
    reverse = f"pj.gather({a}, pj.reshape({s[0] - 1} - i, (1,)), axis=0)[0]"
    return f"pj.pfor(lambda i: {a}[i] * {reverse}, {s[0]})"


GENERATORS = [gen_unary, gen_binary, gen_binary, gen_reduce, gen_reshape, gen_transpose,
              gen_slice, gen_gather, gen_concat, gen_matmul, gen_einsum, gen_layout, gen_softmax]
# with loops inside the program (pfor, vectorized_map): opt-in, since they run extra loops
WITH_LOOPS = GENERATORS + [gen_vmap]


def x_shapes(max_size: int = 12, max_rank: int = 3):
    dims = st.integers(0, 12).map(lambda k: 1 + k % 4 if k else 0)   # now and then an empty axis
    return st.lists(dims, max_size=max_rank).map(tuple).filter(
        lambda s: _size(s) <= max_size)


@st.composite
def random_programs(draw, x_shape=None, max_steps: int = 7, generators=GENERATORS):
    """Draws a RandomProgram whose output depends on its source x."""
    x_shape = draw(x_shapes()) if x_shape is None else tuple(x_shape)
    x_seed = draw(st.integers(0, 2**16))
    program = RandomProgram(x_shape, [], x_seed)
    pool = {"v0": x_shape}
    values = {"v0": pj.constant(program.x())}
    steps = draw(st.integers(1, max_steps))
    for _ in range(3 * steps):
        if len(program.lines) >= steps:
            break
        last = f"v{len(program.lines)}"
        a = last if draw(st.integers(0, 2)) else draw(st.sampled_from(sorted(pool)))
        line = draw(st.sampled_from(generators))(draw, a, pool[a], pool)
        if line is None:
            continue
        value = _try(line, values)
        if value is None or value.size > MAX_SIZE or value.dtype != np.float64:
            continue
        name = f"v{len(program.lines) + 1}"
        program.lines.append(f"{name} = {line}")
        pool[name], values[name] = tuple(value.shape), value
    last = f"v{len(program.lines)}"
    while _size(pool[last]) > MAX_OUT:                    # keep the Jacobian small
        program.lines.append(f"v{len(program.lines) + 1} = pj.sum({last}, axis=0)")
        pool[f"v{len(program.lines)}"] = pool[last][1:]
        last = f"v{len(program.lines)}"
    return program


def _try(line: str, values: dict):
    scope = {"pj": pj, "np": np, "C": C, **values}
    try:
        with np.errstate(all="ignore"):
            value = eval(line, scope)
    except (ValueError, IndexError, TypeError):
        return None
    if not isinstance(value, pj.Tensor) or not np.all(np.isfinite(value.numpy())) \
            or np.abs(value.numpy()).max(initial=0.0) > 1e6:
        return None
    return value


def finite_program_value(program: RandomProgram, x: np.ndarray) -> bool:
    with np.errstate(all="ignore"):
        y = program.function()(pj.constant(x)).numpy()
    return bool(np.all(np.isfinite(y))) and math.isfinite(float(np.abs(y).max(initial=0.0)))
