"""Computes tests/data/autograd_examples.json: the results of tests/autograd_examples/*.py
run with HIPS autograd itself (their `pforjac.autograd` imports read as `autograd`), the
values tests/test_autograd_api.py compares pforjac.autograd's with. Run with an
interpreter that has autograd: `python tests/data/make_autograd_examples.py`."""
import json
import pathlib
import types

import numpy as np

HERE = pathlib.Path(__file__).parent
EXAMPLES = HERE.parent / "autograd_examples"


def run(name: str) -> dict:
    source = (EXAMPLES / f"{name}.py").read_text().replace("pforjac.autograd", "autograd")
    module = types.ModuleType(name)
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    out = module.main()
    return {k: _plain(v) for k, v in out.items()}


def _plain(value):
    value = np.asarray(value)
    if np.iscomplexobj(value):
        return {"real": value.real.tolist(), "imag": value.imag.tolist()}
    return value.tolist()


def main():
    listing: dict = {}
    exec((EXAMPLES / "__init__.py").read_text(), listing)
    values = {name: run(name) for name in listing["EXAMPLES"]}
    (HERE / "autograd_examples.json").write_text(json.dumps(values, indent=1) + "\n")
    print("wrote", sorted(values))


if __name__ == "__main__":
    main()
