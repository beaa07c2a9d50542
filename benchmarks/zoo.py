"""A zoo of 21 realistic Jacobian and Hessian workloads: pforjac vs JAX, side by side in one run.

    python benchmarks/zoo.py                             # all workloads -> results/zoo.md
    python benchmarks/zoo.py --only ln_mlp,lorenz96      # names or prefixes -> results/zoo_only.md
    python benchmarks/zoo.py --rounds 9 --no-write       # print only
    python benchmarks/zoo.py --no-cold                   # skip the fresh-process compile times
    python benchmarks/zoo.py --threads 1                 # every library on one thread, one core

Each workload (layernorm MLP, attention, RNN, Lennard-Jones, Lorenz-96, reaction
networks, logistic regression, convolutions, batchnorm, embeddings, ...) is written once
against a small op namespace, so pforjac and JAX run the same model on the same
float32 inputs. Timed is one call from the input array to the finished Jacobian,
forward pass included, with the result in row-major order (a transposed pforjac view
is copied inside the timing, as XLA writes its results in that order):

- pforjac `pfor` (GradientTape `jacobian` / `batch_jacobian`, the Hessians as the
  outer tape's Jacobian of the inner tape's gradient), `compiled` (`pforjac.function`
  of the same call, generated numpy code), `compiled (numba)` (the same with
  `backend="numba"`: one native function, when numba is installed) and `while-loop`
  (`experimental_use_pfor=False`);
- JAX `jit(vmap(jacrev))` per example, `jit(jacrev)` for full Jacobians,
  `jit(hessian)` (per-example Hessians: `jit(vmap(hessian))`), weights passed as
  arguments so XLA cannot constant-fold them.

JAX is optional and never a pforjac dependency (install it in a throwaway
environment, see benchmarks/README.md): if `import jax` fails the script says so and
times pforjac's three variants only, without ratios. The variants of a workload are
timed in `--rounds` interleaved rounds (default 7, each variant >= 0.3 s in all),
every block after the thread pools have settled, as in compare.py; times are medians
over all rounds, ratios are to JAX.

Before timing, each workload is checked: `compiled`, `compiled (numba)` and `while-loop`
against `pfor` (float32, rtol 1e-4), and, with JAX, pforjac's pfor result on float64
inputs against JAX's in float64 (x64 enabled for that check only, rtol 1e-10). Any
disagreement is marked DIFFERS and the exit code is 1. A workload whose program numba
does not take completely says so in its numba cell ("numpy fallback: op ...").

Then (unless `--no-cold`) each workload's numba function is made in two fresh processes
sharing one new cache directory: the first compiles it, the second loads it from the
disk cache; a second table gives both times (benchmarks/_numba_columns.py).
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _blas_env  # noqa: E402
_blas_env.use_openblas_own_kernel()
_blas_env.use_threads()
import numpy as np  # noqa: E402

from _common import fmt_ms, machine_header, markdown_table, time_in_rounds, write_result  # noqa: E402
import _numba_columns as nbc  # noqa: E402

import pforjac as pj  # noqa: E402

MIN_SECONDS = 0.3           # timed per variant and workload, over all rounds
RTOL32, RTOL64 = 1e-4, 1e-10


# -- workloads: fwd(m, x, p, c) with m the op namespace, p trainable weights, c constants ----------
def ln_mlp(m, x, p, c):
    mu = m.mean(x, -1, keepdims=True)
    xc = x - mu
    var = m.mean(xc * xc, -1, keepdims=True)
    h = xc / m.sqrt(var + 1e-5) * p["g"] + p["b"]
    h = m.tanh(h @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


def attention(m, x, p, c):          # x (seq, d)
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    a = m.softmax(q @ m.transpose(k) * c["scale"], -1)
    return (a @ v) @ p["wo"] + x


def attention_b(m, x, p, c):        # x (B, seq, d)
    q, k, v = x @ p["wq"], x @ p["wk"], x @ p["wv"]
    s = m.einsum("bqd,bkd->bqk", q, k) * c["scale"]
    a = m.softmax(s, -1)
    return m.einsum("bqk,bkd->bqd", a, v) @ p["wo"]


def xent(m, z, p, c):               # mean loss of logits z (B, K)
    return -m.sum(c["y"] * m.log_softmax(z, -1)) / z.shape[0]


def xent_row(m, z, p, c):           # summed loss: its Hessian is block-diagonal per example
    return -m.sum(c["y"] * m.log_softmax(z, -1))


def resmlp(m, x, p, c):
    h = x + m.softplus(x @ p["w1"] + p["b1"]) @ p["w2"]
    u = h @ p["w3"]
    gelu = 0.5 * u * (1 + m.tanh(0.7978845608 * (u + 0.044715 * u * u * u)))
    h = h + gelu @ p["w4"]
    return h @ p["w5"]


def rnn(m, x, p, c):                # x (B, T, D) -> h (B, H)
    h = m.tanh(x[:, 0] @ p["wx"] + p["b"])
    for t in range(1, x.shape[1]):
        h = m.tanh(x[:, t] @ p["wx"] + h @ p["wh"] + p["b"])
    return h


def lj(m, x, p, c):                 # x (3N,) -> energy
    X = m.reshape(x, (-1, 3))
    d = X[:, None, :] - X[None, :, :]
    r2 = m.sum(d * d, -1) + c["eye"]
    inv2 = 1.0 / r2
    inv6 = inv2 * inv2 * inv2
    return 0.5 * m.sum(c["mask"] * (inv6 * inv6 - inv6))


def lorenz96(m, x, p, c):           # x (n,)
    xp1 = m.concat([x[1:], x[:1]], 0)
    xm1 = m.concat([x[-1:], x[:-1]], 0)
    xm2 = m.concat([x[-2:], x[:-2]], 0)
    return (xp1 - xm2) * xm1 - x + 8.0


def lorenz96_b(m, x, p, c):         # x (B, n)
    xp1 = m.concat([x[:, 1:], x[:, :1]], 1)
    xm1 = m.concat([x[:, -1:], x[:, :-1]], 1)
    xm2 = m.concat([x[:, -2:], x[:, :-2]], 1)
    return (xp1 - xm2) * xm1 - x + 8.0


def reaction(m, x, p, c):           # mass action, x (B, S) > 0
    rates = c["k"] * m.exp(m.log(x) @ c["R"])
    return rates @ c["St"]


def gauss_nll(m, th, p, c):         # th = (mu, log sigma), (2D,)
    D = c["data"].shape[1]
    mu, logs = th[:D], th[D:]
    z = (c["data"] - mu) / m.exp(logs)
    return m.sum(logs + 0.5 * z * z)


def logreg(m, w, p, c):
    s = c["X"] @ w
    return m.sum(m.softplus(s) - c["y"] * s) + 0.5 * 1e-2 * m.sum(w * w)


def poly(m, x, p, c):               # x (B, 4)
    B = x.shape[0]
    x2 = m.reshape(m.einsum("bi,bj->bij", x, x), (B, 16))
    x3 = m.reshape(m.einsum("bi,bj,bk->bijk", x, x, x), (B, 64))
    f = m.concat([x, x2, x3], -1)
    return m.tanh(f @ p["w"])


def conv_slices(m, x, p, c):        # x (B, L, C)
    L, K = x.shape[1], p["k"].shape[0]
    patches = m.stack([x[:, k:k + L - K + 1, :] for k in range(K)], 2)      # (B, L', K, C)
    y = m.tanh(m.einsum("blkc,kco->blo", patches, p["k"]))
    return m.mean(y, 1) @ p["wo"]


def conv_gather(m, x, p, c):        # im2col by gather + matmul
    B = x.shape[0]
    patches = m.gather(x, c["idx"], 1)                  # (B, L', K, C)
    Lp, K, C = c["idx"].shape[0], c["idx"].shape[1], x.shape[2]
    y = m.tanh(m.reshape(patches, (B, Lp, K * C)) @ m.reshape(p["k"], (K * C, -1)))
    return m.mean(y, 1) @ p["wo"]


def batchnorm(m, x, p, c):          # statistics over the batch: every row's output depends on every row
    mu = m.mean(x, 0, keepdims=True)
    xc = x - mu
    var = m.mean(xc * xc, 0, keepdims=True)
    return m.tanh(xc / m.sqrt(var + 1e-5) * p["g"] + p["b"])


def logsoftmax_head(m, x, p, c):
    z = x @ p["w"]
    return m.concat([m.log_softmax(z, -1), m.logsumexp(z, -1, keepdims=True)], -1)


def l2norm(m, x, p, c):
    n = m.sqrt(m.sum(x * x, -1, keepdims=True) + 1e-12)
    return (x / n) @ p["w"]


def maxpool(m, x, p, c):
    h = m.tanh(x @ p["w1"])
    B = h.shape[0]
    hp = m.max(m.reshape(h, (B, -1, 4)), -1)
    return hp @ p["w2"]


def embedding(m, E, p, c):          # differentiated w.r.t. the table E (V, d)
    e = m.gather(E, c["tok"], 0)          # (B, T, d)
    return m.tanh(m.mean(e, 1) @ p["w"])


@dataclass
class Workload:
    name: str
    what: str
    kind: str                       # "batch", "full", "hessian" or "batch_hessian" (per-example)
    fwd: Callable
    x: np.ndarray
    p: dict
    c: dict


KIND_LABELS = {"batch": "batch_jacobian", "full": "jacobian", "hessian": "hessian",
               "batch_hessian": "per-example hessians"}


def nrm(rng, shape, scale=1.0):
    return rng.normal(size=shape) * scale


def make_workloads(dtype) -> list[Workload]:
    """All workloads in `dtype`; drawn in float64 from one seed, so both dtypes hold the same values."""
    rng = np.random.default_rng(0)
    W = []

    def add(name, what, kind, fwd, x, p=None, c=None):
        W.append(Workload(name, what, kind, fwd, x, p or {}, c or {}))

    add("ln_mlp", "layernorm + tanh MLP 64-128-32", "batch", ln_mlp, nrm(rng, (64, 64)),
        dict(g=1 + 0.1 * nrm(rng, 64), b=0.1 * nrm(rng, 64), w1=nrm(rng, (64, 128), 64 ** -.5),
             b1=0.1 * nrm(rng, 128), w2=nrm(rng, (128, 32), 128 ** -.5), b2=0.1 * nrm(rng, 32)))
    d = 32
    add("attention_full", "self-attention + residual", "full", attention, nrm(rng, (32, d)),
        {k: nrm(rng, (d, d), d ** -.5) for k in ("wq", "wk", "wv", "wo")}, dict(scale=np.float64(d ** -.5)))
    add("attention_batch", "self-attention, per sequence", "batch", attention_b, nrm(rng, (8, 16, d)),
        {k: nrm(rng, (d, d), d ** -.5) for k in ("wq", "wk", "wv", "wo")}, dict(scale=np.float64(d ** -.5)))
    y = np.eye(10)[rng.integers(0, 10, 32)]
    add("xent_hessian", "softmax cross-entropy of logits", "hessian", xent, nrm(rng, (32, 10)), {}, dict(y=y))
    add("xent_per_ex_hessian", "softmax cross-entropy of logits", "batch_hessian", xent_row,
        nrm(rng, (64, 10)), {}, dict(y=np.eye(10)[rng.integers(0, 10, 64)]))
    add("resmlp_gelu", "residual MLP, softplus and GELU", "batch", resmlp, nrm(rng, (64, 64)),
        dict(w1=nrm(rng, (64, 128), 64 ** -.5), b1=0.1 * nrm(rng, 128), w2=nrm(rng, (128, 64), 128 ** -.5),
             w3=nrm(rng, (64, 128), 64 ** -.5), w4=nrm(rng, (128, 64), 128 ** -.5), w5=nrm(rng, (64, 16), 64 ** -.5)))
    add("rnn16", "tanh RNN, 16 steps", "batch", rnn, nrm(rng, (32, 16, 8)),
        dict(wx=nrm(rng, (8, 32), 8 ** -.5), wh=nrm(rng, (32, 32), 32 ** -.5), b=0.1 * nrm(rng, 32)))
    N = 32
    g = np.stack(np.meshgrid(np.arange(4), np.arange(4), np.arange(2), indexing="ij"), -1).reshape(-1, 3)
    pos = (g * 1.2 + 0.05 * nrm(rng, (N, 3))).reshape(-1)
    add("lj_hessian", "Lennard-Jones energy, 32 atoms", "hessian", lj, pos, {},
        dict(eye=np.eye(N), mask=1 - np.eye(N)))
    add("lorenz96_200", "Lorenz-96 vector field", "full", lorenz96, nrm(rng, 200) + 8)
    add("lorenz96_batch", "Lorenz-96 vector field", "batch", lorenz96_b, nrm(rng, (64, 40)) + 8)
    S, R = 12, 20
    Rm = (rng.random((S, R)) < 0.15).astype(float)
    Pm = (rng.random((S, R)) < 0.15).astype(float)
    add("reaction_net", "mass-action kinetics, 12 species, 20 reactions", "batch", reaction,
        rng.random((64, S)) + 0.1, {}, dict(k=rng.random(R) + 0.5, R=Rm, St=(Pm - Rm).T))
    add("gauss_nll_hessian", "Gaussian NLL of 500 points in 10 dims", "hessian", gauss_nll,
        np.concatenate([nrm(rng, 10), 0.1 * nrm(rng, 10)]), {}, dict(data=nrm(rng, (500, 10))))
    add("logreg_hessian", "L2 logistic regression, 1000 points", "hessian", logreg, 0.1 * nrm(rng, 50), {},
        dict(X=nrm(rng, (1000, 50)), y=(rng.random(1000) < .5).astype(float)))
    add("poly_features", "cubic features + tanh layer", "batch", poly, nrm(rng, (128, 4)),
        dict(w=nrm(rng, (84, 8), 84 ** -.5)))
    add("conv1d_slices", "conv1d k=5 by slices + einsum", "batch", conv_slices, nrm(rng, (32, 64, 4)),
        dict(k=nrm(rng, (5, 4, 8), 20 ** -.5), wo=nrm(rng, (8, 10), 8 ** -.5)))
    add("conv1d_gather", "conv1d k=5 by gather + matmul", "batch", conv_gather, nrm(rng, (32, 64, 4)),
        dict(k=nrm(rng, (5, 4, 8), 20 ** -.5), wo=nrm(rng, (8, 10), 8 ** -.5)),
        dict(idx=np.arange(60)[:, None] + np.arange(5)[None]))
    add("batchnorm_full", "batchnorm + tanh (rows mix)", "full", batchnorm, nrm(rng, (32, 16)),
        dict(g=1 + 0.1 * nrm(rng, 16), b=0.1 * nrm(rng, 16)))
    add("logsoftmax_head", "log_softmax + logsumexp head", "batch", logsoftmax_head, nrm(rng, (64, 32)),
        dict(w=nrm(rng, (32, 100), 32 ** -.5)))
    add("l2norm", "row L2 normalization + linear", "batch", l2norm, nrm(rng, (64, 128)),
        dict(w=nrm(rng, (128, 16), 128 ** -.5)))
    add("maxpool", "tanh layer + max-pool by 4 + linear", "batch", maxpool, nrm(rng, (64, 64)),
        dict(w1=nrm(rng, (64, 128), 64 ** -.5), w2=nrm(rng, (32, 10), 32 ** -.5)))
    add("embedding_full", "embedding lookup, w.r.t. the table", "full", embedding, nrm(rng, (200, 32)),
        dict(w=nrm(rng, (32, 8), 32 ** -.5)), dict(tok=rng.integers(0, 200, (16, 12))))
    for w in W:
        w.x = np.asarray(w.x, dtype)
        w.p = {k: np.asarray(v, dtype) for k, v in w.p.items()}
        w.c = {k: (v.astype(dtype) if np.asarray(v).dtype.kind == "f" else v) for k, v in w.c.items()}
    return W


# -- pforjac ---------------------------------------------------------------------------------------
PJ_OPS = SimpleNamespace(exp=pj.exp, log=pj.log, tanh=pj.tanh, sqrt=pj.sqrt, sum=pj.sum, mean=pj.mean,
                         max=pj.max, logsumexp=pj.logsumexp, softmax=pj.softmax, log_softmax=pj.log_softmax,
                         concat=pj.concat, stack=pj.stack, reshape=pj.reshape, transpose=pj.transpose,
                         einsum=pj.einsum, softplus=pj.softplus, gather=pj.gather)


def tape_jacobian(w: Workload, use_pfor: bool) -> Callable:
    """x -> the workload's Jacobian (or Hessian) by GradientTape; the weights are pj.Variables,
    as a user holds trainable parameters, so `pforjac.function` cannot fold them."""
    params = {k: pj.Variable(v) for k, v in w.p.items()}

    def run(x):
        x = pj.constant(x) if isinstance(x, np.ndarray) else x
        if w.kind in ("hessian", "batch_hessian"):
            with pj.GradientTape(persistent=not use_pfor) as tape:
                tape.watch(x)
                with pj.GradientTape() as inner:
                    inner.watch(x)
                    f = w.fwd(PJ_OPS, x, params, w.c)
                y = inner.gradient(f, x)
        else:
            with pj.GradientTape(persistent=not use_pfor) as tape:
                tape.watch(x)
                y = w.fwd(PJ_OPS, x, params, w.c)
        if w.kind in ("batch", "batch_hessian"):
            return tape.batch_jacobian(y, x, experimental_use_pfor=use_pfor)
        return tape.jacobian(y, x, experimental_use_pfor=use_pfor)
    return run


def pforjac_variants(w: Workload, while_loop: bool = True) -> dict:
    pfor = tape_jacobian(w, True)
    out = {"pfor": pfor, "compiled": pj.function(pfor, backend="numpy")}
    if nbc.available():
        out["compiled (numba)"] = pj.function(pfor, backend="numba")
    if while_loop:
        out["while-loop"] = tape_jacobian(w, False)
    return out


# -- JAX -------------------------------------------------------------------------------------------
def load_jax():
    """(jax or None, a note for the header)."""
    try:
        import jax
    except Exception as e:  # noqa: BLE001 (ImportError, or a broken install)
        return None, f"jax not importable ({type(e).__name__}: {str(e)[:80]}): pforjac only, no ratios"
    return jax, f"jax {jax.__version__}"


def jax_ops(jax) -> SimpleNamespace:
    jnp = jax.numpy
    return SimpleNamespace(exp=jnp.exp, log=jnp.log, tanh=jnp.tanh, sqrt=jnp.sqrt, sum=jnp.sum, mean=jnp.mean,
                           max=jnp.max, logsumexp=jax.scipy.special.logsumexp, softmax=jax.nn.softmax,
                           log_softmax=jax.nn.log_softmax, concat=lambda v, axis=0: jnp.concatenate(v, axis),
                           stack=jnp.stack, reshape=jnp.reshape, transpose=jnp.transpose, einsum=jnp.einsum,
                           softplus=jax.nn.softplus, gather=lambda x, i, axis=0: jnp.take(x, i, axis=axis))


def jax_jacobian(w: Workload, jax) -> Callable:
    """x -> JAX's Jacobian (or Hessian) of the same workload, weights passed as jit arguments."""
    m, jnp = jax_ops(jax), jax.numpy
    params = {k: jnp.asarray(v) for k, v in w.p.items()}
    f = lambda x, p: w.fwd(m, x, p, w.c)  # noqa: E731
    if w.kind == "batch":
        row = lambda xi, p: w.fwd(m, xi[None], p, w.c)[0]  # noqa: E731
        jit = jax.jit(jax.vmap(jax.jacrev(row), in_axes=(0, None)))
    elif w.kind == "full":
        jit = jax.jit(jax.jacrev(f))
    elif w.kind == "hessian":
        jit = jax.jit(jax.hessian(f))
    else:
        row = lambda xi, yi, p: w.fwd(m, xi[None], p, dict(w.c, y=yi[None]))  # noqa: E731
        per_example = jax.jit(jax.vmap(jax.hessian(row), in_axes=(0, 0, None)))
        jit = lambda x, p: per_example(x, w.c["y"], p)  # noqa: E731
    return lambda x: jit(jnp.asarray(x), params)


# -- checks and timing -----------------------------------------------------------------------------
def agreement(out: np.ndarray, ref: np.ndarray, rtol: float) -> tuple[bool, float]:
    """(allclose with atol rtol x max|ref|, largest difference relative to max|ref|)."""
    scale = max(float(np.max(np.abs(ref))), 1e-300)
    diff = float(np.max(np.abs(out - ref))) / scale
    return bool(np.allclose(out, ref, rtol=rtol, atol=rtol * scale)), diff


def check(w32: Workload, w64: Workload, outs: dict, jax) -> tuple[bool, str]:
    """pforjac's variants against its pfor in float32; its pfor against JAX in float64."""
    results = [(name, *agreement(outs[name], outs["pfor"], RTOL32)) for name in outs
               if name not in ("pfor", "JAX")]
    if jax is not None:
        mine = tape_jacobian(w64, True)(w64.x).numpy()
        with jax.enable_x64(True):
            ref = np.asarray(jax_jacobian(w64, jax)(w64.x))
        results.append(("jax f64", *agreement(mine, ref, RTOL64)))
    ok = all(r[1] for r in results)
    detail = ", ".join(f"{name} {diff:.1g}" + ("" if good else " DIFFERS") for name, good, diff in results)
    return ok, f"{'ok' if ok else 'DIFFERS'} ({detail})"


def as_array(result) -> np.ndarray:
    """A Tensor's array (the eager variants), or the array a compiled function returns."""
    return result.numpy() if isinstance(result, pj.Tensor) else np.asarray(result)


def run_workload(w32: Workload, w64: Workload, jax, rounds: int, while_loop: bool = True):
    """Checks and times one workload; returns (checks ok, its table row, (numba / JAX, lowering))."""
    fns = {}
    if jax is not None:
        jac = jax_jacobian(w32, jax)
        fns["JAX"] = lambda: jac(w32.x).block_until_ready()
    variants = pforjac_variants(w32, while_loop)
    for name, jacobian in variants.items():
        fns[name] = lambda jacobian=jacobian: np.ascontiguousarray(as_array(jacobian(w32.x)))
    outs, note = {}, ""
    for name, fn in fns.items():                                       # first calls: tracing, compiling
        outs[name], note = nbc.first_call(fn) if name == "compiled (numba)" else (fn(), note)
        outs[name] = np.asarray(outs[name])
    ok, status = check(w32, w64, outs, jax)
    lowered = nbc.lowering(variants["compiled (numba)"], note) if "compiled (numba)" in variants else None
    shape = outs["pfor"].shape
    rounds_times = time_in_rounds(list(fns.values()), rounds, 1, MIN_SECONDS / rounds, 10 ** 6)
    med = {name: statistics.median(x for block in t for x in block)
           for name, t in zip(fns, rounds_times)}
    cells = [fmt_ms(t) + (f" ({t / med['JAX']:.2f}x)" if jax is not None and name != "JAX" else "")
             for name, t in med.items()]
    if lowered is not None and lowered != "numba":
        cells[list(med).index("compiled (numba)")] += f" {lowered}"
    what = f"{w32.what}; {KIND_LABELS[w32.kind]}, x {w32.x.shape} -> {shape}"
    print(f"{w32.name:20} {'  '.join(f'{n} {c}' for n, c in zip(med, cells))}  {status}", flush=True)
    ratio = med["compiled (numba)"] / med["JAX"] if jax is not None and lowered is not None else None
    return ok, [w32.name, what, *cells, status], (ratio, lowered)


def child_main(name: str) -> int:
    """`--cold NAME`: the first call of the workload's numba function, timed (a child of
    `cold_table`, in a fresh process)."""
    w = {w.name: w for w in make_workloads(np.float32)}[name]
    fn = pj.function(tape_jacobian(w, True), backend="numba")
    nbc.child_measure(lambda: fn(w.x))
    return 0


def cold_table(pairs, jobs: int = 1) -> str:
    """Compile and cached-load times of every workload's numba function, fresh processes
    (`jobs` workloads at a time: their CPU times stay comparable, their wall times less)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(w32):
        cells = nbc.cold_cells(nbc.cold_times([os.path.abspath(__file__), "--cold", w32.name]))
        print(f"{w32.name:20} " + "  ".join(f"{h.split(' s')[0]} {c}" for h, c
                                             in zip(nbc.COLD_HEADER, cells)), flush=True)
        return [w32.name, *cells]
    with ThreadPoolExecutor(jobs) as pool:
        rows = list(pool.map(one, [w32 for w32, _ in pairs]))
    return markdown_table(["workload", *nbc.COLD_HEADER], rows)


def cold_section(pairs, jobs: int) -> str:
    print("\nnumba compile and cached load, fresh processes:")
    start = nbc.numba_start()
    return (f"\n\n## numba: first compile and cached load per workload\n\nEach workload's "
            f"`pj.function(..., backend=\"numba\")` made in two fresh processes on one new "
            f"cache directory (numba imported before the clock starts): the time making "
            f"native code (lowering + numba's compile, then numba's load from the disk "
            f"cache), wall and CPU, and the whole first call (trace, simplify, native code, "
            f"run); {jobs} workload(s) at a time. {start}.\n\n{cold_table(pairs, jobs)}")


def cold_only(pairs, header: str, versions: str, args) -> int:
    cold = cold_section(pairs, args.cold_jobs)
    print(cold)
    if not args.no_write:
        text = (f"# numba compile and cached load per zoo workload\n\n`python benchmarks/zoo.py "
                f"--cold-only --cold-jobs {args.cold_jobs}`\n\n{header}\n\n{versions}{cold}\n")
        print("wrote", write_result("zoo_cold.md", text))
    return 0


def numba_summary(scores: list) -> str:
    """How many workloads numba runs at <= 1.0x JAX, and the worst ratio."""
    ratios = [(r, name) for name, (r, _) in scores if r is not None]
    if not ratios:
        return ""
    fallbacks = [name for name, (_, lowered) in scores if lowered not in (None, "numba")]
    worst = max(ratios)
    return (f"compiled (numba) <= 1.0x JAX on {sum(r <= 1.0 for r, _ in ratios)} of {len(ratios)} "
            f"workloads, <= 1.5x on {sum(r <= 1.5 for r, _ in ratios)}; worst {worst[0]:.2f}x "
            f"({worst[1]}); not lowered completely: {', '.join(fallbacks) or 'none'}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=None, help="comma-separated workload names or prefixes")
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds per workload")
    p.add_argument("--no-write", action="store_true", help="print only, don't write results/zoo*.md")
    p.add_argument("--no-cold", action="store_true",
                   help="skip the numba compile / cached-load times in fresh processes")
    p.add_argument("--cold", default=None, help=argparse.SUPPRESS)    # (the child's mode)
    p.add_argument("--cold-only", action="store_true",
                   help="only the numba compile / cached-load table (-> results/zoo_cold.md)")
    p.add_argument("--cold-jobs", type=int, default=1,
                   help="workloads measured at once in the cold table (CPU times stay comparable)")
    p.add_argument("--no-while-loop", action="store_true",
                   help="skip the while-loop variant (the slowest: shortens a run on a loaded machine)")
    p.add_argument("--threads", type=int, default=None,
                   help="threads for every library (read before they load; see _blas_env.py)")
    p.add_argument(_blas_env.KEEP_FLAG, action="store_true",
                   help="keep OPENBLAS_CORETYPE (default: dropped before numpy loads; see _blas_env.py)")
    args = p.parse_args(argv)
    if args.cold:
        return child_main(args.cold)
    jax, jax_note = load_jax()
    gc.collect()
    gc.freeze()         # time_reps collects before every block: not through JAX's ~100k objects
    pairs = list(zip(make_workloads(np.float32), make_workloads(np.float64)))
    if args.only:
        want = [s.strip() for s in args.only.split(",") if s.strip()]
        pairs = [(a, b) for a, b in pairs if any(a.name.startswith(s) for s in want)]
        if not pairs:
            p.error(f"--only {args.only!r} matches no workload")
    header = machine_header()
    versions = f"pforjac {pj.__version__}, numpy {np.__version__}, {jax_note}; " \
               f"{_blas_env.describe_threads()}"
    if args.cold_only:
        return cold_only(pairs, header, versions, args)
    print(f"{header}\n{versions}\n")
    rows, all_ok, scores = [], True, []
    for w32, w64 in pairs:
        ok, row, score = run_workload(w32, w64, jax, args.rounds, not args.no_while_loop)
        rows.append(row)
        scores.append((w32.name, score))
        all_ok &= ok
    names = ("pforjac pfor", "compiled", *(("compiled (numba)",) if nbc.available() else ()),
             *(() if args.no_while_loop else ("while-loop",)))
    columns = ["JAX ms", *(f"{n} ms (ratio to JAX)" for n in names)] if jax else [f"{n} ms" for n in names]
    table = markdown_table(["workload", "description", *columns, "check (max diff / max abs J)"], rows)
    summary = numba_summary(scores)
    print(f"\n{table}\n\n{summary}")
    cold = ""
    if nbc.available() and not args.no_cold:
        cold = cold_section(pairs, args.cold_jobs)
        print(cold)
    if not all_ok:
        print("SOME RESULTS DIFFER (see the check column)")
    if not args.no_write:
        cmd = "python benchmarks/zoo.py" + (f" --only {args.only}" if args.only else "") + \
              (f" --threads {args.threads}" if args.threads is not None else "") + \
              (" --no-while-loop" if args.no_while_loop else "") + \
              (f" --rounds {args.rounds}" if args.rounds != 7 else "")
        text = (f"# pforjac workload zoo vs JAX\n\n`{cmd}`\n\n{header}\n\n{versions}\n\n"
                f"float32; each variant timed from input array to finished row-major Jacobian, "
                f"forward pass included: median over {args.rounds} interleaved rounds (>= {MIN_SECONDS} s "
                f"per variant in all) after one untimed first call. Checks: compiled, compiled (numba) and while-loop "
                f"against pfor in float32, pfor against JAX in float64 (see zoo.py).\n\n{table}\n\n"
                f"{summary}{cold}\n")
        print("wrote", write_result("zoo" + ("_only" if args.only else "") + ".md", text))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
