"""Modules and functions past the size limits: `python tools/sizes.py [folder]` (default
pforjac) prints every module over 500 lines and every function whose body (its docstring
left out) is over 40 lines, one a line; nothing when all fit."""
from __future__ import annotations

import ast
import pathlib
import sys

MODULE_LINES, FUNCTION_LINES = 500, 40


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's end."""
    body = node.body
    first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) \
        and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else body[0]
    return node.end_lineno - first.lineno + 1


def violations(path: pathlib.Path) -> list[str]:
    source = path.read_text()
    found = []
    if source.count("\n") > MODULE_LINES:
        found.append(f"MODULE {path}: {source.count(chr(10))} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_lines(node) > FUNCTION_LINES:
            found.append(f"FUNC {path}:{node.lineno} {node.name}: {body_lines(node)}")
    return found


def main(argv: list[str]) -> int:
    root = pathlib.Path(argv[0] if argv else "pforjac")
    for path in sorted(root.rglob("*.py")):
        for line in violations(path):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
