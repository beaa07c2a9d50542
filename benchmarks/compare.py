"""pforjac vs TensorFlow, JAX and PyTorch: the same Jacobians, same inputs, side by side in one run.

    python benchmarks/compare.py --quick                 # seed batch 200, 3 reps
    python benchmarks/compare.py                         # full sizes -> results/compare.md
    python benchmarks/compare.py --only hessian,exp --reps 9 --frameworks jax,torch

The frameworks are never pforjac dependencies: install whichever you want to
compare against in a throwaway environment (see benchmarks/README.md); missing
ones are skipped with a note. For every workload each variant is one call from
an input array (already converted to the framework's tensor type) to the
finished Jacobian: the forward pass AND the Jacobian are timed (unlike
loop_vs_pfor.py, which records the forward pass once outside the timing), and
the result ends in row-major order (a transposed view, as pforjac's and torch's
per-example Jacobians can be, is copied inside the timing, as XLA and TF write
theirs in that order).
The variants of a workload are timed in interleaved rounds (every variant in
turn, `--rounds` times), so the ratios are taken under the same conditions.
Weights are held the way a user would hold trainable parameters
(pj.Variable / tf.Variable; function arguments for jax.jit; closed-over tensors
in PyTorch), so no compiler can constant-fold them.

pforjac variants: `while-loop` (experimental_use_pfor=False), `pfor` (eager),
`compiled` (`pforjac.function`, if the installed pforjac has it: generated numpy
code) and `compiled (numba)` (`backend="numba"`, when numba is installed; a program
numba does not take completely is marked "numpy fallback: ..."). Every result
is checked against pforjac's eager pfor result (float32 tolerances). Ratios
are to the fastest non-pforjac variant of the same workload in this run. Unless
`--no-cold`, each workload's numba function is then made in two fresh processes on
one new cache directory: first compile and cached load (benchmarks/_numba_columns.py).

Peak memory: `tracemalloc` is the tracemalloc peak (numpy buffers + Python
objects) of pforjac and numpy variants; `RSS` is the rise of the process's
VmHWM over VmRSS during one untimed call (VmHWM reset through
/proc/self/clear_refs, free heap returned with malloc_trim first), for every
variant. RSS deltas are approximate: framework allocators may reuse pooled
memory (under-count) and lazily zeroed pages that are never written are not
counted at all.
"""
from __future__ import annotations

import argparse
import os
import sys


def _preparse_threads(argv) -> int:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--threads", type=int, default=None)
    a, _ = p.parse_known_args(argv)
    if a.threads is not None:
        return a.threads
    return os.cpu_count() or 1


# Thread settings must be in the environment before numpy / the frameworks load their runtimes.
# With fewer threads than cores the process is also pinned to that many cores: XLA's CPU
# runtime (JAX 0.10) ignores its thread flags and used both cores of a "one-thread" run.
THREADS = _preparse_threads(sys.argv[1:])
PINNED = False
if THREADS < (os.cpu_count() or 1) and hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:THREADS]))
    PINNED = True
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
             "NUMBA_NUM_THREADS"):
    os.environ[_var] = str(THREADS)
os.environ["TF_NUM_INTEROP_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blas_env  # noqa: E402
_blas_env.use_openblas_own_kernel()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
if THREADS == 1:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               " --xla_cpu_multi_thread_eigen=false").strip()

import ctypes  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

from _common import (fmt_ms, machine_header, mapped_bytes, markdown_table, mib,  # noqa: E402
                     time_in_rounds, write_result)
from loop_vs_pfor import _normal  # noqa: E402
import _numba_columns as nbc  # noqa: E402

import pforjac as pj  # noqa: E402

F32 = np.float32

# -- workloads: one forward function per workload, written once against a tiny op namespace ----


def fwd_seed(m, x, p):
    h1 = m.sigmoid(x @ p["w1"] + p["b1"])
    h2 = m.sigmoid(h1 @ p["w2"] + p["b2"])
    return h2 @ p["w3"] + p["b3"]


def fwd_mlp(m, x, p):
    h = m.tanh(x @ p["w1"] + p["b1"])
    h = m.tanh(h @ p["w2"] + p["b2"])
    return h @ p["w3"] + p["b3"]


def fwd_elementwise(m, x, p):
    return m.sin(x) * m.exp(x) + x ** 2


def fwd_logistic(m, x, p):          # sum(log(1 + exp(A @ x))), x a vector
    return m.sum(m.log(1 + m.exp(m.matvec(p["a"], x))), None)


def fwd_exp_reducer(m, x, p):       # the seed's x.exp().sum(axis=1)
    return m.sum(m.exp(x), 1)


def fwd_square(m, x, p):
    return x * x


def fwd_cube(m, x, p):
    return x * x * x


@dataclass
class Workload:
    name: str
    description: str
    kind: str                       # "batch" (per-example), "full" or "hessian"
    fwd: Callable
    x: np.ndarray
    params: dict
    shape: tuple
    slow: bool = False              # the full seed jacobian: few reps
    baselines: dict = field(default_factory=dict)   # hand-written numpy: name -> fn()


def _mlp_params(rng, sizes, bias_scale):
    p = {}
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:]), 1):
        p[f"w{k}"] = _normal(rng, (i, o), i ** -0.5)
        p[f"b{k}"] = _normal(rng, (o,)) if bias_scale else np.zeros(o, F32)
    return p


def make_workloads(size, rng) -> list[Workload]:
    b = size["seed_batch"]
    seed_p = _mlp_params(rng, [784, 256, 128, 1], 1)
    seed_x = _normal(rng, (b, 784))
    mb = size["mlp_batch"]
    es = size["elementwise"]
    ex = _normal(rng, es, 0.5)
    hm, hn = size["hessian"]
    small = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
    w = [
        Workload("seed_jacobian", f"seed net 784-256-128-1 sigmoid, full jacobian, x ({b},784)",
                 "full", fwd_seed, seed_x, seed_p, (b, 1, b, 784), slow=True),
        Workload("seed_batch_jacobian", f"seed net, batch_jacobian, x ({b},784)", "batch", fwd_seed,
                 seed_x, seed_p, (b, 1, 784)),
        Workload("mlp_batch_jacobian", f"tanh MLP 784-256-128-10, per-example jacobian, batch {mb}",
                 "batch", fwd_mlp, _normal(rng, (mb, 784)), _mlp_params(rng, [784, 256, 128, 10], 0),
                 (mb, 10, 784)),
        Workload("elementwise", f"sin(x)*exp(x)+x**2, batch_jacobian, x {es}", "batch",
                 fwd_elementwise, ex, {}, (es[0], es[1], es[1])),
        Workload("hessian", f"Hessian of sum(log(1+exp(A@x))), A ({hm},{hn})", "hessian",
                 fwd_logistic, _normal(rng, (hn,)), {"a": _normal(rng, (hm, hn), hn ** -0.5)}, (hn, hn)),
        Workload("exp_reducer", f"seed exp_reducer x.exp().sum(axis=1), full jacobian, x {size['exp_reducer']}",
                 "full", fwd_exp_reducer, rng.random(size["exp_reducer"], dtype=F32), {},
                 (size["exp_reducer"][0],) + tuple(size["exp_reducer"])),
        Workload("small_batch_jacobian", "seed example: batch_jacobian of x*x, x (2,2)", "batch",
                 fwd_square, small, {}, (2, 2, 2)),
        Workload("small_jacobian", "seed example: jacobian of x*x*x, x (2,2)", "full", fwd_cube, small, {},
                 (2, 2, 2, 2)),
    ]
    w[0].baselines = _seed_full_baselines(seed_x, seed_p)
    w[3].baselines = _elementwise_baselines(ex)
    w[2].baselines = _mlp_batch_baselines(w[2].x, w[2].params)
    return w


def _np_seed_batch(x, p):
    """Hand-written numpy per-example gradient of the seed net: (b, 1, 784)."""
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    h1 = sig(x @ p["w1"] + p["b1"])
    h2 = sig(h1 @ p["w2"] + p["b2"])
    g2 = (h2 * (1 - h2)) * p["w3"][:, 0]
    g1 = (g2 @ p["w2"].T) * (h1 * (1 - h1))
    return (g1 @ p["w1"].T)[:, None, :]


def _seed_full_baselines(x, p):
    b = x.shape[0]
    idx = np.arange(b)

    def zeros_scatter():        # np.zeros is lazily zeroed: only pages holding the blocks are touched
        out = np.zeros((b, 1, b, 784), F32)
        out[idx, 0, idx, :] = _np_seed_batch(x, p)[:, 0, :]
        return out

    def full_write():           # every byte of the 784 MB result written
        out = np.empty((b, 1, b, 784), F32)
        out.fill(0)
        out[idx, 0, idx, :] = _np_seed_batch(x, p)[:, 0, :]
        return out
    return {"np per-example grad + zeros + scatter": zeros_scatter,
            "np per-example grad + write all zeros + scatter": full_write}


def _mlp_batch_baselines(x, p):
    """The per-example Jacobian of the tanh MLP as the fewest numpy passes I can write: the
    floor for any numpy-backed engine (the same gemms as XLA's program, unfused elementwise)."""
    w1, b1, w2, b2, w3 = (p[k] for k in ("w1", "b1", "w2", "b2", "w3"))

    def by_hand():
        f = x @ w1
        f += b1
        np.tanh(f, out=f)
        k = f @ w2
        k += b2
        np.tanh(k, out=k)
        dk = np.subtract(1, np.square(k, out=k), out=k)       # tanh' at layer 2, (b, 128)
        df = np.subtract(1, np.square(f, out=f), out=f)       # tanh' at layer 1, (b, 256)
        rows = np.ascontiguousarray(w3.T)[None] * dk[:, None, :]    # (b, 10, 128)
        g = (rows.reshape(-1, rows.shape[2]) @ w2.T).reshape(len(x), rows.shape[1], -1)
        g *= df[:, None, :]
        return (g.reshape(-1, g.shape[2]) @ w1.T).reshape(len(x), rows.shape[1], -1)
    return {"np hand-written per-example jacobian": by_hand}


def _elementwise_baselines(x):
    n = x.shape[1]
    idx = np.arange(n)

    def diag():
        d = np.cos(x) * np.exp(x) + np.sin(x) * np.exp(x) + 2 * x
        out = np.zeros((x.shape[0], n, n), F32)
        out[:, idx, idx] = d
        return out
    return {"np derivative + diagonal embed": diag}


# -- pforjac -------------------------------------------------------------------------------------
PJ_OPS = SimpleNamespace(sigmoid=pj.sigmoid, tanh=pj.tanh, sin=pj.sin, exp=pj.exp, log=pj.log,
                         sum=lambda x, axis: pj.sum(x, axis=axis), matvec=lambda a, x: a @ x)


def pforjac_variants(w: Workload) -> dict:
    params = {k: pj.Variable(v) for k, v in w.params.items()}

    def run(x, use_pfor):
        x = pj.constant(x) if isinstance(x, np.ndarray) else x
        if w.kind == "hessian":
            with pj.GradientTape(persistent=not use_pfor) as outer:
                outer.watch(x)
                with pj.GradientTape() as inner:
                    inner.watch(x)
                    f = w.fwd(PJ_OPS, x, params)
                g = inner.gradient(f, x)
            return outer.jacobian(g, x, experimental_use_pfor=use_pfor)
        with pj.GradientTape(persistent=not use_pfor) as tape:
            tape.watch(x)
            y = w.fwd(PJ_OPS, x, params)
        if w.kind == "batch":
            return tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor)
        return tape.jacobian(y, x, experimental_use_pfor=use_pfor)

    x = w.x
    out = {"pfor": lambda: run(x, True)}       # first: the reference every other result is checked against
    if hasattr(pj, "function"):
        compiled = pj.function(lambda x: run(x, True), backend="numpy")
        out["compiled"] = lambda: compiled(x)
        if nbc.available():
            native = pj.function(lambda x: run(x, True), backend="numba")
            out["compiled (numba)"] = lambda: native(x)
            out["compiled (numba)"].function = native        # (what lowered: the summary says)
    out["while-loop"] = lambda: run(x, False)
    return out


# -- JAX -------------------------------------------------------------------------------------------
def jax_variants(w: Workload, jax) -> dict:
    jnp = jax.numpy
    m = SimpleNamespace(sigmoid=jax.nn.sigmoid, tanh=jnp.tanh, sin=jnp.sin, exp=jnp.exp, log=jnp.log,
                        sum=lambda x, axis: jnp.sum(x, axis=axis), matvec=lambda a, x: a @ x)
    params = {k: jnp.asarray(v) for k, v in w.params.items()}
    x = jnp.asarray(w.x)
    f = lambda x, p: w.fwd(m, x, p)  # noqa: E731
    out = {}
    if w.kind == "batch":
        row = lambda xi, p: w.fwd(m, xi[None], p)[0]  # noqa: E731
        for name, jac in (("jacrev", jax.jacrev), ("jacfwd", jax.jacfwd)):
            fn = jax.vmap(jac(row), in_axes=(0, None))
            jit = jax.jit(fn)
            out[f"jit(vmap({name}))"] = lambda jit=jit: jit(x, params).block_until_ready()
        fn = jax.vmap(jax.jacrev(row), in_axes=(0, None))
        out["vmap(jacrev) no jit"] = lambda: fn(x, params).block_until_ready()
    elif w.kind == "full":
        jacs = [("jacrev", jax.jacrev)] + ([("jacfwd", jax.jacfwd)] if w.x.size <= 10_000 else [])
        for name, jac in jacs:
            jit = jax.jit(jac(f))
            out[f"jit({name})"] = lambda jit=jit: jit(x, params).block_until_ready()
        fn = jax.jacrev(f)
        out["jacrev no jit"] = lambda: fn(x, params).block_until_ready()
    else:
        for name, hess in (("jacfwd(jacrev)", jax.jacfwd(jax.jacrev(f))),
                           ("jacrev(jacrev)", jax.jacrev(jax.jacrev(f)))):
            jit = jax.jit(hess)
            out[f"jit({name})"] = lambda jit=jit: jit(x, params).block_until_ready()
        fn = jax.hessian(f)
        out["hessian no jit"] = lambda: fn(x, params).block_until_ready()
    return out


# -- TensorFlow ------------------------------------------------------------------------------------
def tf_variants(w: Workload, tf) -> dict:
    m = SimpleNamespace(sigmoid=tf.sigmoid, tanh=tf.tanh, sin=tf.sin, exp=tf.exp, log=tf.math.log,
                        sum=lambda x, axis: tf.reduce_sum(x, axis=axis), matvec=tf.linalg.matvec)
    params = {k: tf.Variable(v) for k, v in w.params.items()}
    x = tf.constant(w.x)

    def run(x):
        if w.kind == "hessian":
            with tf.GradientTape(watch_accessed_variables=False) as outer:
                outer.watch(x)
                with tf.GradientTape(watch_accessed_variables=False) as inner:
                    inner.watch(x)
                    f = w.fwd(m, x, params)
                g = inner.gradient(f, x)
            return outer.jacobian(g, x)
        with tf.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(x)
            y = w.fwd(m, x, params)
        return tape.batch_jacobian(y, x) if w.kind == "batch" else tape.jacobian(y, x)

    what = {"batch": "batch_jacobian", "full": "jacobian", "hessian": "jacobian of gradient"}[w.kind]
    graph = tf.function(run)
    xla = tf.function(run, jit_compile=True)
    return {f"eager {what}": lambda: run(x),
            "tf.function": lambda: graph(x),
            "tf.function(jit_compile=True)": lambda: xla(x)}


# -- PyTorch ---------------------------------------------------------------------------------------
def torch_variants(w: Workload, torch) -> dict:
    m = SimpleNamespace(sigmoid=torch.sigmoid, tanh=torch.tanh, sin=torch.sin, exp=torch.exp,
                        log=torch.log, sum=lambda x, axis: torch.sum(x) if axis is None else torch.sum(x, dim=axis),
                        matvec=lambda a, x: a @ x)
    params = {k: torch.from_numpy(v.copy()) for k, v in w.params.items()}
    x = torch.from_numpy(w.x.copy())
    f = lambda x: w.fwd(m, x, params)  # noqa: E731
    tf_ = torch.func
    AF = torch.autograd.functional
    out = {}
    if w.kind == "batch":
        row = lambda xi: w.fwd(m, xi[None], params)[0]  # noqa: E731
        out["func.vmap(jacrev)"] = lambda: tf_.vmap(tf_.jacrev(row))(x)
        out["func.vmap(jacfwd)"] = lambda: tf_.vmap(tf_.jacfwd(row))(x)
        # batch-independent functions: d sum_b f(x)_b / dx is the per-example Jacobian (out, B, in)
        nout = len(w.shape) - 2
        out["autograd jacobian(vectorize) of batch sum"] = lambda: torch.movedim(
            AF.jacobian(lambda x: f(x).sum(0), x, vectorize=True), nout, 0)
    elif w.kind == "full":
        out["func.jacrev"] = lambda: tf_.jacrev(f)(x)
        if w.x.size <= 10_000:
            out["func.jacfwd"] = lambda: tf_.jacfwd(f)(x)
        out["autograd jacobian(vectorize)"] = lambda: AF.jacobian(f, x, vectorize=True)
    else:
        out["func.hessian"] = lambda: tf_.hessian(f)(x)
        out["func.jacrev(jacrev)"] = lambda: tf_.jacrev(tf_.jacrev(f))(x)
        out["autograd hessian(vectorize)"] = lambda: AF.hessian(f, x, vectorize=True)
    return out


# -- measurement -----------------------------------------------------------------------------------
def _c_ordered(fn):
    """`fn` ending with its result in row-major (C) order, in the library's own array type:
    XLA's and TensorFlow's results always are; pforjac's and torch's may be transposed views
    (a per-example Jacobian assembled loop axis first), which would save them the copy."""
    def call():
        out = fn()
        if hasattr(out, "contiguous"):                 # torch
            return out.contiguous()
        if isinstance(out, pj.Tensor):
            array = out.numpy()
            return out if array.flags.c_contiguous else np.ascontiguousarray(array)
        return out
    return call


def _to_numpy(out) -> np.ndarray:
    if hasattr(out, "detach"):
        out = out.detach()
    if hasattr(out, "numpy"):
        return np.asarray(out.numpy())
    return np.asarray(out)


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


try:
    _LIBC = ctypes.CDLL("libc.so.6")
except OSError:
    _LIBC = None


def rss_peak(fn) -> tuple[int | None, object]:
    """VmHWM - VmRSS over one call of fn (None if the kernel won't reset VmHWM)."""
    gc.collect()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _status("VmRSS")
    except OSError:
        return None, fn()
    out = fn()
    return _status("VmHWM") - base, out


def measure_memory(fn, traced: bool):
    """(tracemalloc peak or None, RSS peak or None, result) of one untimed call."""
    if not traced:
        rss, out = rss_peak(fn)
        return None, rss, out
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        rss, out = rss_peak(fn)
        peak = tracemalloc.get_traced_memory()[1] - base + mapped_bytes(out)
    finally:
        tracemalloc.stop()
    return peak, rss, out


def first_call(fn, traced: bool) -> dict:
    """The untimed part of a variant: its first call (tracing / compiling), its peak memory
    during one more call, and its result."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    peak, rss, out = measure_memory(fn, traced)
    return {"first": first, "times": [], "peak": peak, "rss": rss, "out": _to_numpy(out)}


def round_ratios(mine: list[list[float]], frameworks: list[list[list[float]]]) -> list[float]:
    """Paired ratios, one per round: this variant's median in the round over the fastest
    framework's median in the same round. Rounds run seconds apart, so the spread of these
    ratios shows how far the machine's phases move a verdict."""
    return [statistics.median(t) / min(statistics.median(f[k]) for f in frameworks)
            for k, t in enumerate(mine)]


def fmt_spread(ratios: list[float]) -> str:
    return f"{min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else "n/a"


def load_frameworks(wanted: list[str]) -> tuple[dict, list[str]]:
    fws, notes = {}, []
    for name, mod in (("jax", "jax"), ("tensorflow", "tensorflow"), ("torch", "torch")):
        if name not in wanted:
            notes.append(f"{name}: not requested (--frameworks)")
            continue
        try:
            module = __import__(mod)
        except Exception as e:  # noqa: BLE001 (ImportError, or a broken install)
            notes.append(f"{name}: skipped, not importable ({type(e).__name__}: {str(e)[:80]})")
            continue
        if name == "torch":
            module.set_num_threads(THREADS)
            try:
                module.set_num_interop_threads(1)
            except RuntimeError:
                pass
        if name == "tensorflow":
            try:
                module.config.threading.set_intra_op_parallelism_threads(THREADS)
                module.config.threading.set_inter_op_parallelism_threads(1)
            except RuntimeError:
                pass
        fws[name] = module
    return fws, notes


def versions(fws) -> str:
    parts = [f"numpy {np.__version__}"]
    for name in ("jax", "tensorflow", "torch"):
        parts.append(f"{name} {fws[name].__version__}" if name in fws else f"{name} not installed")
    return ", ".join(parts)


def thread_settings() -> str:
    s = (f"threads {THREADS}: OPENBLAS/OMP/MKL_NUM_THREADS={THREADS}, TF intra-op {THREADS} inter-op 1, "
         f"torch.set_num_threads({THREADS})")
    s += ", XLA_FLAGS=" + (os.environ.get("XLA_FLAGS") or "(default: Eigen pool over all cores)")
    if PINNED:
        s += f"; process pinned to {THREADS} of {os.cpu_count()} cores (sched_setaffinity)"
    return s


# Targets of issues 5 and 7: workload -> list of (label, mode, max ratio to best framework).
TARGETS = {
    "mlp_batch_jacobian": [("#5 compiled <= 1x best", "compiled", 1.0), ("#5 eager <= 1.5x best", "pfor", 1.5)],
    "seed_batch_jacobian": [("#5 compiled <= 1x best", "compiled", 1.0), ("#5 eager <= 1.5x best", "pfor", 1.5)],
    "elementwise": [("#5 compiled <= 1x best", "compiled", 1.0), ("#7 eager <= 1/3 best", "pfor", 1 / 3),
                    ("#7 compiled <= 1/3 best", "compiled", 1 / 3)],
    "hessian": [("#5 compiled <= 2x best", "compiled", 2.0), ("#5 eager <= 30x best", "pfor", 30.0)],
    "exp_reducer": [("#5 compiled <= 1.5x best", "compiled", 1.5)],
    "small_batch_jacobian": [("#5 compiled <= 5x best", "compiled", 5.0)],
    "small_jacobian": [("#5 compiled <= 5x best", "compiled", 5.0)],
    "seed_jacobian": [("#7 eager <= 1/3 best", "pfor", 1 / 3), ("#7 compiled <= 1/3 best", "compiled", 1 / 3)],
}
# The numba backend's targets: per-example rows at or under the best framework, the 2x2
# seed examples at half its time.
NUMBA_TARGETS = {
    "mlp_batch_jacobian": [("numba <= 1x best", "compiled (numba)", 1.0)],
    "seed_batch_jacobian": [("numba <= 1x best", "compiled (numba)", 1.0)],
    "small_batch_jacobian": [("numba <= 0.5x best", "compiled (numba)", 0.5)],
    "small_jacobian": [("numba <= 0.5x best", "compiled (numba)", 0.5)],
}
TF_EAGER_FACTOR = 10.0   # target: eager pfor at least 10x faster than TensorFlow eager pfor


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="seed batch 200 instead of 500, 3+ reps")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions per variant (median), default 7")
    p.add_argument("--rounds", type=int, default=5,
                   help="interleaved timing rounds per workload (each round times every variant in turn)")
    p.add_argument("--only", default=None, help="comma-separated workload names or prefixes")
    p.add_argument("--frameworks", default="jax,tensorflow,torch",
                   help="comma-separated subset of jax,tensorflow,torch (default: all that import)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for every library (default: all cores); fewer than the cores "
                        "also pins the process to that many cores")
    p.add_argument("--no-write", action="store_true", help="don't write results/compare*.md")
    p.add_argument("--no-cold", action="store_true",
                   help="skip the numba compile / cached-load times in fresh processes")
    p.add_argument("--cold", default=None, help=argparse.SUPPRESS)    # (the child's mode)
    p.add_argument(_blas_env.KEEP_FLAG, action="store_true",
                   help="keep OPENBLAS_CORETYPE (default: dropped before numpy loads, so numpy's "
                        "OpenBLAS runs the kernel it picks for the CPU; see _blas_env.py)")
    args = p.parse_args(argv)
    mode = "quick" if args.quick else "full"
    size = dict(seed_batch=200 if args.quick else 500, mlp_batch=256, elementwise=(64, 512),
                hessian=(100, 200), exp_reducer=(128, 64))
    reps = args.reps or (3 if args.quick else 7)
    slow_reps = min(reps, 3)
    wanted_fw = [{"tf": "tensorflow"}.get(s.strip(), s.strip()) for s in args.frameworks.split(",")]
    if args.cold:
        return child_main(args.cold, size)

    fws, notes = load_frameworks(wanted_fw)
    # time_reps collects once per variant; with TF + torch + JAX loaded that walks ~475k
    # module-level objects (0.25 s a time). Freeze them into the permanent generation.
    gc.collect()
    gc.freeze()
    if not hasattr(pj, "function"):
        notes.append("pforjac.function: not in this pforjac; the `compiled` column is skipped")
    header = machine_header()
    vers = versions(fws)
    threads = thread_settings()
    print(f"pforjac compare ({mode} mode; median of >= {reps} reps after one untimed first call, "
          f"timed in {args.rounds} interleaved rounds (each variant >= 0.5 s in all); {slow_reps} "
          f"rounds of one call for the full seed jacobian)")
    print(header)
    print(vers)
    print(threads)
    for n in notes:
        print("note:", n)
    print()

    workloads = make_workloads(size, np.random.default_rng(0))
    if args.only:
        want = [s.strip() for s in args.only.split(",") if s.strip()]
        workloads = [w for w in workloads if any(w.name.startswith(s) for s in want)]
        if not workloads:
            p.error(f"--only {args.only!r} matches no workload")

    detail_rows, summary_rows, target_rows = [], [], []
    started = time.perf_counter()
    all_ok = True
    for w in workloads:
        print(f"[{w.name}] {w.description} -> {w.shape}", flush=True)
        pj_variants = pforjac_variants(w)
        variants = [("pforjac", n, _c_ordered(fn), True) for n, fn in pj_variants.items()]
        variants += [("numpy (hand-written)", n, fn, True) for n, fn in w.baselines.items()]
        builders = {"jax": jax_variants, "tensorflow": tf_variants, "torch": torch_variants}
        for fw_name, module in fws.items():
            try:
                variants += [(fw_name, n, _c_ordered(fn), False)
                             for n, fn in builders[fw_name](w, module).items()]
            except Exception as e:  # noqa: BLE001
                print(f"    {fw_name}: could not build variants: {type(e).__name__}: {e}")
        ref, results, timed = None, [], []
        for fw_name, vname, fn, traced in variants:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    r = first_call(fn, traced)
            except Exception as e:  # noqa: BLE001  (e.g. an op XLA can't compile)
                msg = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
                print(f"    {fw_name:10} {vname:44} FAILED {msg}", flush=True)
                results.append((fw_name, vname, None, msg))
                continue
            for c in {str(x.message) for x in caught}:
                print(f"    warning ({fw_name} {vname}): {c[:160]}")
            out = r.pop("out")
            if fw_name == "pforjac" and vname == "compiled (numba)":
                r["lowering"] = nbc.lowering(pj_variants[vname].function, nbc._note(caught))
            if fw_name == "pforjac" and vname == "pfor":
                ref = out
            check = _check(out, ref, w.shape)
            r["check"] = check
            all_ok &= check[0]
            results.append((fw_name, vname, r, None))
            timed.append((r, fn))
            del out
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # shown once above, at the first call
            fns = [fn for _, fn in timed]
            if w.slow:                 # one call a round
                all_times = time_in_rounds(fns, slow_reps)
            else:                      # >= 0.5 s / rounds and >= reps / rounds calls a round
                all_times = time_in_rounds(fns, args.rounds, -(-reps // args.rounds), 0.5 / args.rounds)
        for (r, _), t in zip(timed, all_times):
            r["rounds"] = t
            r["times"] = [x for block in t for x in block]
            r["median"] = statistics.median(r["times"])
        for fw_name, vname, r, _ in results:
            if r is None:
                continue
            mem = (f"tm {mib(r['peak'])} MiB, " if r["peak"] is not None else "") + \
                  (f"RSS {mib(r['rss'])} MiB" if r["rss"] is not None else "RSS n/a")
            print(f"    {fw_name:10} {vname:44} {fmt_ms(r['median']):>10} ms  first {fmt_ms(r['first']):>10} ms"
                  f"  {len(r['times'])} reps  {mem}  {r['check'][1]}", flush=True)
        fw_times = [(r["median"], f"{fw} {vn}") for fw, vn, r, _ in results
                    if r is not None and fw in fws]
        best = min(fw_times) if fw_times else None
        fw_rounds = [r["rounds"] for fw, vn, r, _ in results if r is not None and fw in fws]
        for fw_name, vname, r, err in results:
            if r is None:
                detail_rows.append([w.name, fw_name, vname, "failed: " + err, "", "", "", "", "", ""])
                continue
            ratio = f"{r['median'] / best[0]:.2f}" if best else "n/a"
            detail_rows.append([w.name, fw_name, vname, fmt_ms(r["median"]), fmt_ms(r["first"]),
                                str(len(r["times"])), ratio,
                                mib(r["peak"]) if r["peak"] is not None else "n/a",
                                mib(r["rss"]) if r["rss"] is not None else "n/a", r["check"][1]])
        pjr = {vn: r for fw, vn, r, _ in results if fw == "pforjac" and r is not None}
        tf_eager = [r["median"] for fw, vn, r, _ in results if fw == "tensorflow" and r is not None
                    and vn.startswith("eager")]
        cells = [w.name, f"{fmt_ms(best[0])} ({best[1]})" if best else "n/a"]
        for vn in ("while-loop", "pfor", "compiled", "compiled (numba)"):
            if vn in pjr:
                cells.append(fmt_ms(pjr[vn]["median"]) + (f" ({pjr[vn]['median'] / best[0]:.2f}x)" if best else "")
                             + ("" if pjr[vn].get("lowering", "numba") == "numba" else f" {pjr[vn]['lowering']}"))
            else:
                cells.append("n/a")
        if tf_eager and "pfor" in pjr:
            cells.append(f"{tf_eager[0] / pjr['pfor']['median']:.1f}x")
        else:
            cells.append("n/a")
        summary_rows.append(cells)
        if best:
            for label, vn, limit in TARGETS.get(w.name, []) + NUMBA_TARGETS.get(w.name, []):
                if vn not in pjr:
                    target_rows.append([w.name, label, "n/a", "n/a", "not measured"])
                    continue
                ratio = pjr[vn]["median"] / best[0]
                spread = fmt_spread(round_ratios(pjr[vn]["rounds"], fw_rounds))
                target_rows.append([w.name, label, f"{ratio:.2f}x", spread,
                                    _verdict(ratio <= limit, ratio / limit)])
            if tf_eager and "pfor" in pjr:
                f = tf_eager[0] / pjr["pfor"]["median"]
                target_rows.append([w.name, "#5 eager pfor >= 10x faster than TF eager", f"{f:.1f}x faster",
                                    "", _verdict(f >= TF_EAGER_FACTOR, TF_EAGER_FACTOR / f)])
        print()

    summary = markdown_table(["workload", "best framework ms (variant)", "pforjac while-loop ms (ratio)",
                              "pforjac pfor ms (ratio)", "pforjac compiled ms (ratio)",
                              "pforjac compiled (numba) ms (ratio)", "TF eager / pforjac pfor"],
                             summary_rows)
    targets = markdown_table(["workload", "target", "pforjac / best framework",
                              "per-round ratios, min-max", "status"], target_rows)
    detail = markdown_table(["workload", "library", "variant", "median ms", "first call ms", "reps",
                             "ratio to best framework", "tracemalloc peak MiB", "RSS peak MiB",
                             "check vs pforjac pfor"], detail_rows)
    cold = cold_section(workloads, args) if nbc.available() and not args.no_cold else ""
    total = time.perf_counter() - started
    print(summary, "\n")
    print(targets, "\n")
    print(detail)
    print(cold)
    print(f"\n{header}; total {total:.0f} s")
    if not all_ok:
        print("SOME RESULTS DISAGREE with pforjac's eager pfor result (see the check column)")
    if not args.no_write:
        cmd = "python benchmarks/compare.py" + (" --quick" if args.quick else "") + \
              (f" --reps {args.reps}" if args.reps else "") + (f" --only {args.only}" if args.only else "") + \
              (f" --threads {args.threads}" if args.threads is not None else "") + \
              (f" --rounds {args.rounds}" if args.rounds != 5 else "") + \
              (f" --frameworks {args.frameworks}" if args.frameworks != "jax,tensorflow,torch" else "")
        text = (f"# pforjac vs JAX, TensorFlow, PyTorch ({mode} mode)\n\n`{cmd}`\n\n{header}\n\n"
                f"{vers}; {threads}\n\n" + "".join(f"- note: {n}\n" for n in notes) +
                "\nEach variant is timed from input tensor to finished Jacobian (forward pass included): "
                "median of the listed reps after one untimed first call (reported separately: it "
                f"includes tracing/compilation), timed in {args.rounds} interleaved rounds (each round "
                "times every variant of the workload in turn, so a slow phase of the machine hits all "
                "alike). Ratios are to the fastest JAX/TensorFlow/PyTorch variant of "
                "the same workload in this run; the targets table also gives the range of the paired "
                "per-round ratios (a round's pforjac median over the fastest framework median of the "
                "same round), the spread the machine's phases put on a verdict. Every result is checked against pforjac's eager pfor "
                "result (`allclose`, rtol 1e-4, atol 1e-5 x max|J|). Peak memory: tracemalloc (pforjac, "
                "numpy) and the rise of VmHWM over VmRSS during one untimed call (all; approximate, see "
                "compare.py).\n\n## Summary\n\n" + summary +
                "\n\n## Targets (issues 5 and 7, and the numba backend's)\n\n" + targets +
                "\n\n## All variants\n\n" + detail + "\n" + cold)
        name = "compare" + ("" if mode == "full" and not args.only else f"_{mode}") + \
            ("_only" if args.only else "") + (f"_threads{THREADS}" if PINNED else "") + \
            ("_keep_blas_env" if args.keep_blas_env and "OPENBLAS_CORETYPE" in os.environ else "") + ".md"
        print("wrote", write_result(name, text))
    return 0 if all_ok else 1


def child_main(name: str, size: dict) -> int:
    """`--cold NAME`: the first call of the workload's numba function, timed (a child of
    `cold_section`, in a fresh process)."""
    w = {w.name: w for w in make_workloads(size, np.random.default_rng(0))}[name]
    call = pforjac_variants(w)["compiled (numba)"]
    nbc.child_measure(call)
    return 0


def cold_section(workloads, args) -> str:
    """Compile and cached-load times of every workload's numba function, fresh processes."""
    print("numba compile and cached load, fresh processes:")
    start, rows = nbc.numba_start(), []
    for w in workloads:
        argv = [os.path.abspath(__file__), "--cold", w.name] + (["--quick"] if args.quick else []) \
            + ([f"--threads={args.threads}"] if args.threads is not None else [])
        cells = nbc.cold_cells(nbc.cold_times(argv))
        print(f"    {w.name:24} " + "  ".join(f"{h.split(' s')[0]} {c}" for h, c
                                                 in zip(nbc.COLD_HEADER, cells)), flush=True)
        rows.append([w.name, *cells])
    return (f"\n## numba: first compile and cached load per workload\n\nEach workload's "
            f"`pj.function(..., backend=\"numba\")` made in two fresh processes on one new cache "
            f"directory (numba imported before the clock starts): the time making native code "
            f"(lowering + numba's compile, then numba's load from the disk cache) and the whole "
            f"first call (trace, simplify, native code, run). {start}.\n\n"
            + markdown_table(["workload", *nbc.COLD_HEADER], rows) + "\n")


NOISE_BAND = 0.10


def _verdict(met: bool, ratio_to_limit: float) -> str:
    """met / MISSED, marked when the ratio is within 10% of the limit: on this shared VM
    such a verdict flips between runs (run-to-run spread of a ratio is 10-30%)."""
    verdict = "met" if met else "MISSED"
    return verdict + (" (within 10% of the limit: noise decides)"
                      if abs(ratio_to_limit - 1) < NOISE_BAND else "")


def _check(out: np.ndarray, ref: np.ndarray | None, shape: tuple) -> tuple[bool, str]:
    if tuple(out.shape) != tuple(shape):
        return False, f"WRONG SHAPE {out.shape}"
    if ref is None:                       # pforjac's eager pfor failed: nothing to check against
        return False, "UNCHECKED (no pforjac pfor result)"
    if tuple(out.shape) != tuple(shape):
        return False, f"WRONG SHAPE {out.shape}"
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(out.astype(np.float64) - ref))) if out.size else 0.0
    ok = bool(np.allclose(out, ref, rtol=1e-4, atol=1e-5 * max(scale, 1e-30)))
    return ok, f"{'ok' if ok else 'DIFFERS'} (max abs diff {diff:.2g})"


if __name__ == "__main__":
    sys.exit(main())
