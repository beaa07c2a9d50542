"""Line numbers of generated code: statement k of the body on line k + 2, so a traceback's
line names the equation that raised."""
from __future__ import annotations

import ast

from ..program import Program

__all__ = ["number_lines", "place_function", "equation_at_line"]


def number_lines(body: list[ast.stmt]) -> None:
    """Every node of statement k on line k + 2, as program_to_source prints it, so a
    traceback's line is the source's line."""
    for line, stmt in enumerate(body, 2):
        _place(stmt, line)


def _place(node: ast.AST, line: int) -> None:
    """`node` and everything under it on `line`, column 0. (A direct walk of the fields:
    `ast.walk` and then `ast.fix_missing_locations` took half of codegen's time.)"""
    if node._attributes:
        node.lineno = node.end_lineno = line
        node.col_offset = node.end_col_offset = 0
    for field in node._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    _place(item, line)
        elif isinstance(value, ast.AST):
            _place(value, line)


def place_function(fn: ast.FunctionDef) -> None:
    """The `def` line (1) for the function node and its arguments, whose body
    `number_lines` placed: every node then has a location, as `compile` requires."""
    fn.lineno, fn.col_offset = 1, 0
    fn.end_lineno, fn.end_col_offset = max(1, len(fn.body) + 1), 0
    for arg in fn.args.args:
        _place(arg, 1)


def equation_at_line(program: Program, line: int):
    """The equation the generated code runs at `line` (1-based, as `program_to_source`
    prints it), or None for a constant's or the return line."""
    k = line - 2 - len(program.consts)
    return program.equations[k] if 0 <= k < len(program.equations) else None
