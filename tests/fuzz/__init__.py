"""An adversarial fuzzer: random programs through every path of pforjac, against oracles
independent of pforjac's rules (finite differences on numpy in float64, numpy's own
forward, and, in the long profile, JAX in a worker process).

    python -m tests.fuzz --profile long --programs 20000      # the long run (see cli.py)
    python -m pytest -q tests/test_fuzz.py                     # the ci profile, in the suite

Modules: ops (the op table: pforjac's call and a reference per op), interp (programs as
JSON op lists and running them), generator, oracle (finite differences, the JAX worker's
client), jax_worker, paths (every pforjac path), check / batch / special (the
comparisons), known (known issues), minimize, cli.
"""
