"""CONTRIBUTING.md's worked example is executed here, block by block, so it can't go stale."""
import pathlib
import re
import warnings

from pforjac.testing import isolated_registries

DOC = pathlib.Path(__file__).resolve().parents[1] / "CONTRIBUTING.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_contributing_has_the_worked_example():
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 5
    assert any("register_converter" in b for b in blocks)
    assert any("check_grads" in b and "check_converter" in b for b in blocks)


def test_contributing_example_runs_end_to_end(capsys):
    namespace = {"__name__": "contributing_example"}
    with isolated_registries(), warnings.catch_warnings():
        warnings.simplefilter("error")      # the example must not warn where it doesn't say so
        for k, block in enumerate(python_blocks(DOC.read_text())):
            exec(compile(block, f"CONTRIBUTING.md[block {k}]", "exec"), namespace)
    out = capsys.readouterr().out
    assert "softsign" in out and "per-iteration" in out
