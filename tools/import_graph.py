"""The import graph of the pforjac package: `python tools/import_graph.py` prints its
cycles (every import counts, at module level or inside a function) and the modules of
the eager core that import the compiled layer. tests/test_layers.py asserts both are
empty."""
from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "pforjac"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: pathlib.Path, modules: set[str]) -> set[str]:
    """The pforjac modules `path` imports (`from . import x` of a submodule counts as x)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "pforjac")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("pforjac"):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != name}


def graph() -> dict[str, set[str]]:
    paths = sorted(ROOT.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def _package_edge(a: str, b: str) -> bool:
    """A package importing its own submodules (or a submodule its package) is how Python
    packages are built, not a cycle between layers."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w == "pforjac":
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


# front ends built on the compiled layer (DESIGN.md, "Layers"): they may import it
ABOVE_COMPILED = ("pforjac.sparse", "pforjac.dask", "pforjac.scipy._solving",
                  "pforjac.scipy.optimize", "pforjac.scipy.integrate",
                  "pforjac.autograd.scipy.integrate")


def core_importing_compiled(g: dict[str, set[str]]) -> dict[str, set[str]]:
    compiled = "pforjac.compiled"
    return {m: {d for d in deps if d.startswith(compiled)} for m, deps in g.items()
            if not m.startswith(compiled) and m != "pforjac" and not m.startswith(ABOVE_COMPILED)
            and any(d.startswith(compiled) for d in deps)}


if __name__ == "__main__":
    g = graph()
    for c in cycles(g):
        print("cycle:", " <-> ".join(c))
    for m, deps in core_importing_compiled(g).items():
        print(f"core module {m} imports the compiled layer: {sorted(deps)}")
