"""Writes numba_workloads_jax.npz next to this file: JAX's float64 Jacobians and Hessians of
the benchmark programs of tests/numba_workloads.py whose results are small (up to 5000
values), computed on the same inputs. Run with an interpreter that has jax (the oracle,
never a dependency), from the repository root:
    python tests/data/make_numba_workloads_jax.py"""
import pathlib
import sys
from types import SimpleNamespace

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent)]
LIMIT = 5000


def _jacobian(jax, kind: str, f, x):
    """JAX's Jacobian of f at x as pforjac's kind of it ('batch': the per-example blocks)."""
    if kind == "hessian":
        return jax.hessian(f)(x)
    full = jax.jacrev(f)(x)
    if kind == "batch":
        b = x.shape[0]
        return full[np.arange(b), :, np.arange(b), :] if full.ndim == 4 else full[np.arange(b), np.arange(b)]
    return full


def main():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    from numba_workloads import benchmark_module, compare_workloads, scipy_problems
    zoo = benchmark_module("zoo")
    out = {}
    for w in zoo.make_workloads(np.float64):
        value = np.asarray(zoo.jax_jacobian(w, jax)(w.x))
        if value.size <= LIMIT:
            out[f"zoo.{w.name}"] = value
    m = SimpleNamespace(sigmoid=jax.nn.sigmoid, tanh=jnp.tanh, sin=jnp.sin, exp=jnp.exp,
                        log=jnp.log, sum=jnp.sum)
    for name, (kind, fwd, x, p) in compare_workloads(np.float64).items():
        out[f"compare.{name}"] = np.asarray(_jacobian(jax, kind, lambda z: fwd(m, z, p), jnp.asarray(x)))
    for name, (kind, f, args) in scipy_problems(jnp, np.float64).items():
        if kind == "grad":
            value = jax.grad(f)(*args)
        elif kind == "hvp":
            value = jax.jvp(jax.grad(f), (args[0],), (args[1],))[1]
        else:
            value = jax.jacfwd(f)(*args)
        out[f"scipy.{name}"] = np.asarray(value)
    np.savez_compressed(HERE / "numba_workloads_jax.npz", **out)
    print({k: v.shape for k, v in out.items()})


if __name__ == "__main__":
    main()
