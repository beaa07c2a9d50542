"""The JAX oracle's worker: `python -m tests.fuzz.jax_worker`, in a Python that has JAX.

Reads one JSON request a line, {"id", "program", "x": flat float64 list, "want": ["jac",
"hess"]}, runs the program on jax.numpy in float64 (tests/fuzz/ops.py's references) and
writes {"id", "jac": nested list, "hess": ...} or {"id", "error": text} a line. It imports
no pforjac: the oracle is JAX's own differentiation of the same op list.
"""
from __future__ import annotations

import json
import sys


def _answer(request, jax, jnp, interp, Ref, weights):
    program = request["program"]
    x = jnp.asarray(request["x"], jnp.float64).reshape(program["x_shape"])

    def f(z):
        return interp.run_ref(program, Ref(jnp), z, "float64")[-1]
    reply = {"id": request["id"]}
    if "jac" in request["want"]:
        reply["jac"] = jax.jit(jax.jacrev(f))(x).tolist()
    if "hess" in request["want"]:
        w = jnp.asarray(weights(f(x).shape))
        reply["hess"] = jax.jit(jax.hessian(lambda z: jnp.sum(w * f(z))))(x).tolist()
    return reply


def main() -> None:
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from tests.fuzz import interp
    from tests.fuzz.ops import Ref
    from tests.fuzz.oracle import hessian_weights
    print("ready", jax.__version__, flush=True)
    for count, line in enumerate(sys.stdin, 1):
        if count % 200 == 0:        # every program compiles anew: bound the memory it keeps
            jax.clear_caches()
        request = json.loads(line)
        try:
            reply = _answer(request, jax, jnp, interp, Ref, hessian_weights)
        except Exception as e:      # noqa: BLE001  (reported back, the worker goes on)
            reply = {"id": request["id"], "error": f"{type(e).__name__}: {str(e)[:300]}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
