"""Line numbers of generated code: statement k of the body on line k + 2, so a traceback's
line names the equation that raised."""
from __future__ import annotations

import ast

from ..program import Program

__all__ = ["number_lines", "equation_at_line"]


def number_lines(body: list[ast.stmt]) -> None:
    """Every node of statement k on line k + 2, as program_to_source prints it, so a
    traceback's line is the source's line."""
    for line, stmt in enumerate(body, 2):
        for node in ast.walk(stmt):
            if "lineno" in node._attributes:
                node.lineno = node.end_lineno = line
                node.col_offset, node.end_col_offset = 0, 0


def equation_at_line(program: Program, line: int):
    """The equation the generated code runs at `line` (1-based, as `program_to_source`
    prints it), or None for a constant's or the return line."""
    k = line - 2 - len(program.consts)
    return program.equations[k] if 0 <= k < len(program.equations) else None
