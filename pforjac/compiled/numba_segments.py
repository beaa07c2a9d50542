"""A Program with ops numba cannot lower, run as numba segments joined by numpy calls.

`split_program(program, declined)` cuts a program into segments: each a Program of its
own, whose inputs are the values it reads from the program's inputs or from earlier
segments, and whose outputs are the values later segments or the program's outputs read.
Lowered equations go to even levels (numba segments), declined ones to odd levels
(numpy segments); each equation takes the lowest level of its kind at or past the levels
of the values it reads, so independent work shares a segment and the number of segments
is the least the dependencies allow. Within a level the program's order is kept.

`segmented_runner(program, segments)` chains the segments' code into one function with
the signature of generated code (`fn(*input_arrays, consts) -> tuple of arrays`).
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from ..program import Program

__all__ = ["Segment", "split_program", "segmented_runner"]


@dataclasses.dataclass
class Segment:
    """Equations that run as one piece of code: numba's (`native`) or numpy's."""
    native: bool
    program: Program
    consts: list[int]           # positions in the whole program's consts of its consts
    code: Callable | None = None


def _levels(program: Program, declined: set[int]) -> list[int]:
    """The level of each equation (even: numba, odd: numpy), as the module's doc says."""
    level_of: dict[int, int] = {}
    levels = []
    for k, eqn in enumerate(program.equations):
        at_least = max((level_of.get(id(v), 0) for v in eqn.inputs), default=0)
        wanted = 1 if k in declined else 0
        level = at_least + ((wanted - at_least) % 2)
        levels.append(level)
        level_of.update((id(v), level) for v in eqn.outputs)
    return levels


def split_program(program: Program, declined: set[int]) -> list[Segment]:
    """The segments of `program`, `declined` naming (by index) the equations numba cannot
    lower, in the order they run."""
    levels = _levels(program, declined)
    read_later: dict[int, int] = {id(v): len(levels) + 1 for v in program.outputs}
    for k, eqn in enumerate(program.equations):         # the last level reading each value
        for v in eqn.inputs:
            read_later[id(v)] = max(read_later.get(id(v), -1), levels[k])
    const_pos = {id(c): k for k, c in enumerate(program.consts)}
    segments = []
    for level in sorted(set(levels)):
        eqns = [e for e, lv in zip(program.equations, levels) if lv == level]
        segments.append(_segment(program, eqns, level, read_later, const_pos))
    return segments


def _segment(program: Program, eqns: list, level: int, read_later: dict, const_pos: dict) -> Segment:
    made = {id(v) for e in eqns for v in e.outputs}
    inputs, consts, seen = [], [], set()
    for e in eqns:
        for v in e.inputs:
            if id(v) in made or id(v) in seen:
                continue
            seen.add(id(v))
            (consts if id(v) in const_pos else inputs).append(v)
    outputs = [v for e in eqns for v in e.outputs if read_later.get(id(v), -1) > level]
    sub = Program(inputs=inputs, consts=consts,
                  const_values=[program.const_values[const_pos[id(c)]] for c in consts],
                  equations=eqns, outputs=outputs, trace_level=program.trace_level)
    return Segment(level % 2 == 0, sub, [const_pos[id(c)] for c in consts])


def segmented_runner(program: Program, segments: list[Segment], name: str) -> Callable:
    """One function running the segments' code in order, passing values by identity. An
    output that is an input or a constant itself is copied, as generated code copies it
    (the segments' code copies the views of their inputs they return): a result never is
    an array the caller passed in, nor a Variable's."""
    input_ids = [id(v) for v in program.inputs]
    const_ids = [id(c) for c in program.consts]
    steps = [([id(v) for v in s.program.inputs], s.consts, [id(v) for v in s.program.outputs], s.code)
             for s in segments]
    output_ids = [id(v) for v in program.outputs]
    given = set(input_ids) | set(const_ids)
    borrowed = [k in given for k in output_ids]

    def run(*arrays_and_consts):
        consts = arrays_and_consts[-1]
        env = dict(zip(input_ids, arrays_and_consts[:-1]))
        env.update(zip(const_ids, consts))
        for ins, const_positions, outs, code in steps:
            results = code(*[env[k] for k in ins], [consts[k] for k in const_positions])
            env.update(zip(outs, results))
        return tuple(np.copy(env[k]) if copy else env[k] for k, copy in zip(output_ids, borrowed))

    run.__name__ = run.__qualname__ = name
    run.segments = segments
    return run
