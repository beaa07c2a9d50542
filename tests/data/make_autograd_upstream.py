"""Computes tests/data/autograd_upstream.json: what each of tests/autograd_upstream/'s
examples prints when run with HIPS autograd itself: the files run as they are, their
`pforjac.autograd...` modules being autograd's own (aliased in sys.modules), with
numpy's global generator seeded with 0, as the test seeds it. Run with an interpreter
that has autograd: `python tests/data/make_autograd_upstream.py`."""
import contextlib
import importlib
import io
import json
import pathlib
import runpy
import sys
import types

import numpy as np

HERE = pathlib.Path(__file__).parent
EXAMPLES = HERE.parent / "autograd_upstream"
MODULES = ["numpy", "numpy.random", "numpy.linalg", "misc", "misc.optimizers",
           "misc.flatten", "misc.fixed_points", "scipy", "scipy.special", "scipy.stats",
           "scipy.stats.norm", "scipy.stats.multivariate_normal", "scipy.integrate",
           "extend", "tracer", "util", "builtins", "test_util"]


def alias_autograd() -> None:
    """`pforjac.autograd.X` is `autograd.X` (for this process only)."""
    import autograd
    package = types.ModuleType("pforjac")
    package.autograd = autograd
    sys.modules["pforjac"], sys.modules["pforjac.autograd"] = package, autograd
    for name in MODULES:
        sys.modules[f"pforjac.autograd.{name}"] = importlib.import_module(f"autograd.{name}")


def run(name: str) -> str:
    np.random.seed(0)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="__main__")
    return out.getvalue()


def main():
    alias_autograd()
    listing: dict = {}
    exec((EXAMPLES / "__init__.py").read_text(), listing)
    outputs = {name: run(name) for name in listing["EXAMPLES"]}
    (HERE / "autograd_upstream.json").write_text(json.dumps(outputs, indent=1) + "\n")
    print("wrote", sorted(outputs))


if __name__ == "__main__":
    main()
