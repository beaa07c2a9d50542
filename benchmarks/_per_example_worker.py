"""A worker of benchmarks/per_example.py for one library ("jax" or "torch"), run in that
library's Python: builds the per-example gradient for every workload, then answers commands
on stdin, one a line, with one line of JSON on stdout:

    time <size> <dtype> <reps>   -> {"seconds": per call, one round of reps,
                                     "cpu": the process's CPU time per call}
    grads <size> <dtype> <path>  -> {"saved": path}   (the gradients as .npz)
"""
from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _per_example_workloads as w  # noqa: E402


def jax_builder():
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    fn = jax.jit(jax.vmap(jax.grad(w.make_loss(jnp)), in_axes=(None, 0, 0)))

    def build(params, X, Y):
        args = (jax.tree_util.tree_map(jnp.asarray, params), jnp.asarray(X), jnp.asarray(Y))
        run = lambda: jax.block_until_ready(fn(*args))  # noqa: E731
        return run, lambda: {k: np.asarray(v) for k, v in run().items()}
    return build


def torch_builder():
    import torch
    from torch.func import grad, vmap
    fn = vmap(grad(w.make_loss(_TorchNamespace(torch))), in_dims=(None, 0, 0))

    def build(params, X, Y):
        args = ({k: torch.from_numpy(v) for k, v in params.items()}, torch.from_numpy(X),
                torch.from_numpy(Y))
        run = lambda: fn(*args)  # noqa: E731
        return run, lambda: {k: v.numpy() for k, v in run().items()}
    return build


class _TorchNamespace:
    """numpy's names for the few torch functions the loss uses."""

    def __init__(self, torch):
        self.tanh, self.log, self.exp, self.sum = torch.tanh, torch.log, torch.exp, torch.sum
        self.max = torch.max


def main(library: str) -> None:
    build = {"jax": jax_builder, "torch": torch_builder}[library]()
    runs = {}
    for size, dtype in w.CONFIGS:
        run, values = build(*w.make(size, dtype))
        run()                                              # compile (jit) / warm up
        runs[(size, dtype)] = (run, values)
    print(json.dumps({"ready": library}), flush=True)
    for line in sys.stdin:
        cmd, size, dtype, arg = line.split()
        run, values = runs[(size, dtype)]
        if cmd == "time":
            start, cpu = time.perf_counter(), time.process_time()
            for _ in range(int(arg)):
                run()
            print(json.dumps({"seconds": (time.perf_counter() - start) / int(arg),
                              "cpu": (time.process_time() - cpu) / int(arg)}), flush=True)
        else:
            np.savez(arg, **values())
            print(json.dumps({"saved": arg}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
