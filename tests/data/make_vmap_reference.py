"""Writes tests/data/vmap_jax.npz: the inputs of tests/vmap_cases.py and JAX's values of
every case. Run with the oracle Python (JAX is never a dependency of pforjac), from the
project root:

    /work/oracle/bin/python tests/data/make_vmap_reference.py

(JAX is imported inside `main`: pytest's doctest collection imports this module.)
"""
import os
import pathlib
import sys
import types

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
import vmap_cases  # noqa: E402


def main() -> None:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    jax.config.update("jax_enable_x64", True)
    jax.tree_util.register_pytree_node(vmap_cases.Params, lambda p: ((p.w, p.b), None),
                                       lambda _, ch: vmap_cases.Params(*ch))
    data = vmap_cases.make_data()
    T = types.SimpleNamespace(vmap=jax.vmap, grad=jax.grad, jacrev=jax.jacrev,
                              jacfwd=jax.jacfwd, vjp=jax.vjp, linearize=jax.linearize,
                              ravel_pytree=ravel_pytree)
    out = {f"input/{k}": v for k, v in data.items()}
    for name, thunk in vmap_cases.cases(jnp, T, data).items():
        for k, leaf in enumerate(jax.tree_util.tree_leaves(thunk())):
            out[f"{name}/{k}"] = np.asarray(leaf)
    np.savez_compressed(pathlib.Path(__file__).with_name("vmap_jax.npz"), **out)


if __name__ == "__main__":
    main()
