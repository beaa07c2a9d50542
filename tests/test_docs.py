"""The docs' Python examples run, so they can't go stale.

Every ```python block of README.md, docs/*.md, benchmarks/README.md and CONTRIBUTING.md
is executed, each file's blocks in order in one namespace (later blocks use earlier
names). Output shown in trailing `# ...` comments is not compared, but every block must
run, and must not warn unless it catches the warning itself. Blocks fenced as bash or
text are not run. Relative links between these pages must point at files that exist,
and at headings that exist where they name one.
"""
from __future__ import annotations

import linecache
import pathlib
import re
import warnings

import pytest

from pforjac.testing import isolated_registries

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
         "benchmarks/README.md", "CONTRIBUTING.md"]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def run_page(page: str) -> None:
    """Runs the page's blocks in order in one namespace; errors name the page and block."""
    namespace = {"__name__": f"docs_{pathlib.Path(page).stem}"}
    with isolated_registries(), warnings.catch_warnings():
        warnings.simplefilter("error")      # an example must not warn where it doesn't say so
        for k, block in enumerate(python_blocks((ROOT / page).read_text())):
            # (dont_inherit: a block runs as a user's script does, without this module's
            # `from __future__ import annotations`, which dataclasses in a block trip over)
            # (its source in linecache, as IPython keeps a cell's: tracebacks show its lines,
            # and pfor can read a body's source, as it does from a file)
            name = f"{page}[python block {k}]"
            linecache.cache[name] = (len(block), None, block.splitlines(True), name)
            exec(compile(block, name, "exec", dont_inherit=True), namespace)


def _has_examples(page: str) -> bool:
    return bool(python_blocks((ROOT / page).read_text()))


def test_every_page_is_found():
    assert {"docs/user-guide.md", "docs/reliability.md", "docs/design.md"} <= set(PAGES)
    assert all((ROOT / page).is_file() for page in PAGES)
    assert all(_has_examples(page) for page in ["README.md", "docs/user-guide.md", "docs/design.md"])


@pytest.mark.parametrize("page", [p for p in PAGES if p != "CONTRIBUTING.md" and _has_examples(p)])
def test_python_blocks_run(page, capsys):
    run_page(page)
    assert capsys.readouterr().out.strip(), f"{page}'s examples print nothing to look at"


def test_contributing_worked_example_runs_end_to_end(capsys):
    """CONTRIBUTING.md's worked example adds `softsign`: its blocks declare the op, watch it
    fall back without a converter, register one and pass the checks."""
    blocks = python_blocks((ROOT / "CONTRIBUTING.md").read_text())
    assert len(blocks) >= 5
    assert any("register_converter" in b for b in blocks)
    assert any("check_grads" in b and "check_converter" in b for b in blocks)
    run_page("CONTRIBUTING.md")
    out = capsys.readouterr().out
    assert "softsign" in out and "per-iteration" in out


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _prose(path: pathlib.Path) -> str:
    """The page without its code blocks and inline code (where `[a](b)` is no link)."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path: pathlib.Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
    source = ROOT / page
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(source)):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        path = (source.parent / file_part).resolve() if file_part else source
        if not path.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target} (no such heading in {path.relative_to(ROOT)})")
    assert not broken, f"{page} links to: {broken}"
