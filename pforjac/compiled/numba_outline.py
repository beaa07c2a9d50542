"""Repeated loop nests of a generated numba function as one helper, compiled once.

numba pays for every loop it compiles (typing, lowering, LLVM's loop passes: tens of
milliseconds a loop nest), and a program unrolled over the steps of a recurrence (an RNN
over 16 steps, its gradient's 15 steps back) repeats the same nests over and over, each
reading other arrays. A nest here is what `LoopNest` renders: its result's allocation,
the statements before its loops, the loops, the statements after them. Each nest's text
is made canonical (operands `a_0, a_1, ...` in order of first use, its own names `l_0,
l_1, ...`, and the integers it indexes arrays with inside its loops set apart), and the
nests whose canonical text occurs at least `MIN_REPEATS` times become calls of one
helper, typed and compiled once per argument types. Indexing integers that differ
between the nests of one text (the step a nest reads, `x[i_0, 5, i_1]`) become
arguments of the helper; the others stay written in. A nest that occurs once stays in
place: a helper of its own would cost a compile of its own.

The rewriting works on the generated lines: the generator's names (`v_*`, `t_*`, `s_*`)
are its only variables, each assigned before it is read, and each nest's statements are
contiguous. A value crosses a helper's boundary as an argument (arrays by reference: a
nest storing into an array made before it stores into the caller's array) or as a
returned value, so the computation and its results are the same.
"""
from __future__ import annotations

import hashlib
import re

__all__ = ["outline", "MIN_REPEATS"]

_NAME = re.compile(r"(?<![.\w])(?:v_\w+|t_\d+|s_\w+)\b")
_TARGETS = re.compile(r"^\s*((?:v_\w+|t_\d+|s_\w+)(?:\s*,\s*(?:v_\w+|t_\d+|s_\w+))*)\s*=(?!=)")
_BEFORE = re.compile(r"^(?:(?:v_\w+|t_\d+) = (?:(?:np|K)\.(?:empty|zeros|large|merged_axes)\(|"
                     r"(?:v_\w+|t_\d+)$|K\.reshaped\((?:v_\w+|t_\d+), [\d, ()]*\)$)|s_\w+ = )")
_VIEW = re.compile(r"^(?:v_\w+|t_\d+) = K\.merged_axes\(")
_AFTER = re.compile(r"^(?:v_\w+|t_\d+) = s_\w+$")
_INTEGER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_LOOP_INDEX = re.compile(r"\bi_\d+\b")
_HOLE = "\x00"

MIN_REPEATS = 2
MAX_RUN = 8         # statements in a repeated run made one helper
MIN_SAVED = 20      # lines a helper of repeated runs must save (a helper is a compile)
# (helpers are called from the generated code only: no wrappers for calls from Python; and
# not cached on their own: the function calling them is, with their machine code linked in,
# and no other program's module calls them)
HELPER_OPTIONS = "cache=False, no_cpython_wrapper=True, no_cfunc_wrapper=True, error_model='numpy'"


def outline(lines: list[str], params: list[str], calls: list | None = None) -> tuple[list[str], list[str]]:
    """(the helpers' sources, the body with each repeated loop nest, then each repeated run
    of statements, a call of its helper) for the body `lines` of a function taking
    `params` (its last line the return). `calls`, if given, receives (helper name,
    {its name: the body's name}) for every call made, so that the helpers' types can be
    checked against the body's values."""
    nest_helpers, lines = _outlined(lines, params, _groups(lines, _statements(lines)), calls)
    run_helpers, lines = _outlined(lines, params, _runs(lines), calls)
    return nest_helpers + run_helpers, lines


def _outlined(lines: list[str], params: list[str], groups: list[tuple[int, int]], calls=None):
    """(helpers, body) with the `groups` of lines (in order, not overlapping) whose
    canonical text occurs `MIN_REPEATS` times or more made calls of one helper."""
    last_use, defined, nests = _last_use(lines), set(params), []
    for k, (start, end) in enumerate(groups):
        before = lines[groups[k - 1][1] if k else 0:start]
        defined.update(t for line in before for t in _targets(line))
        nests.append(_Nest(lines[start:end], defined, {t for t, at in last_use.items() if at >= end}))
        defined.update(t for line in lines[start:end] for t in _targets(line))
    varying, body, helpers, position = _varying(nests), [], {}, 0
    for (start, end), nest in zip(groups, nests):
        if nest.abstract in varying:
            name, source = nest.helper(varying[nest.abstract])
            helpers.setdefault(name, source)
            if calls is not None:
                calls.append((name, {canonical: own for own, canonical in nest.rename.items()}))
            body += lines[position:start] + [nest.call(name, varying[nest.abstract])]
            position = end
    return list(helpers.values()), body + lines[position:]


def _runs(lines: list[str]) -> list[tuple[int, int]]:
    """(first, past the last) line of the runs of consecutive top-level statements that
    repeat (the steps of an unrolled loop, once their nests are calls): again and again,
    the runs of one canonical text (of 2 to `MAX_RUN` statements, taken left to right
    where none taken before overlaps) whose helper saves the most lines, while it saves
    `MIN_SAVED` lines or more."""
    statements = _statements(lines)[:-1]            # (the return stays)
    names = {t for line in lines for t in _NAME.findall(line)}
    # (a merged view belongs to the nest after it: a run of views alone is no step's work)
    taken = [_VIEW.match(lines[start]) is not None for start, _ in statements]
    found, texts = [], {}
    while True:
        best, best_saved = [], MIN_SAVED - 1
        for length in range(2, min(MAX_RUN, len(statements) // 2) + 1):
            for starts in _repeats(lines, statements, taken, length, names, texts).values():
                size = statements[starts[0] + length - 1][1] - statements[starts[0]][0]
                if (len(starts) - 1) * size > best_saved:
                    best, best_saved = [(k, length) for k in starts], (len(starts) - 1) * size
        if not best:
            return sorted(found)
        for k, length in best:
            taken[k:k + length] = [True] * length
            found.append((statements[k][0], statements[k + length - 1][1]))


def _repeats(lines, statements, taken, length: int, names: set, texts: dict) -> dict[str, list[int]]:
    """{canonical text: the first statements of its runs of `length` statements, none
    overlapping another or one taken}, for the texts with `MIN_REPEATS` runs or more
    (`texts`: the canonical texts by (first statement, length), made once)."""
    keys: dict[str, list[int]] = {}
    for k in range(len(statements) - length + 1):
        if not any(taken[k:k + length]):
            if (k, length) not in texts:
                texts[k, length] = _Nest(lines[statements[k][0]:statements[k + length - 1][1]],
                                         names, set()).abstract
            starts = keys.setdefault(texts[k, length], [])
            if not starts or k >= starts[-1] + length:
                starts.append(k)
    return {text: starts for text, starts in keys.items() if len(starts) >= MIN_REPEATS}


def _statements(lines: list[str]) -> list[tuple[int, int]]:
    """(first, past the last) line of each top-level statement (a line and the lines
    indented under it)."""
    starts = [k for k, line in enumerate(lines) if not line.startswith(" ")]
    return list(zip(starts, starts[1:] + [len(lines)]))


def _groups(lines: list[str], statements: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first, past the last) line of each loop nest: a top-level `for` with the one-line
    statements before it that allocate its result, name the array it overwrites (a helper
    given that array twice, as two arguments, would have loops LLVM must assume may
    overlap themselves: run scalar, not vectorized) or set its scalars, and the ones after
    it that name a scalar it computed."""
    groups: list[tuple[int, int]] = []
    taken = 0           # (statements before this index belong to an earlier group)
    for k, (start, _) in enumerate(statements):
        if k < taken or not lines[start].startswith("for "):
            continue
        first, last = k, k
        while first - 1 >= taken and _one_line(statements[first - 1]) \
                and _BEFORE.match(lines[statements[first - 1][0]]):
            first -= 1
        while last + 1 < len(statements) and _one_line(statements[last + 1]) \
                and _AFTER.match(lines[statements[last + 1][0]]):
            last += 1
        groups.append((statements[first][0], statements[last][1]))
        taken = last + 1
    return groups


def _one_line(statement: tuple[int, int]) -> bool:
    return statement[1] - statement[0] == 1


def _targets(line: str) -> list[str]:
    found = _TARGETS.match(line)
    return [] if found is None else [t.strip() for t in found.group(1).split(",")]


def _last_use(lines: list[str]) -> dict[str, int]:
    """{name: the last line naming it}."""
    return {token: k for k, line in enumerate(lines) for token in _NAME.findall(line)}


class _Nest:
    """One loop nest as a helper: the names made before it are its arguments, the names it
    makes that later lines read its results; its text with canonical names (`a_k` for
    arguments, `l_k` for its own) and its indexing integers set apart (`abstract`,
    `literals`)."""

    def __init__(self, lines: list[str], defined: set, used_after: set):
        order = list(dict.fromkeys(t for line in lines for t in _NAME.findall(line)))
        made = {t for line in lines for t in _targets(line)}
        self.args = [t for t in order if t in defined]
        self.results = [t for t in order if t in made and t in used_after]
        self.rename = rename = {t: f"a_{k}" for k, t in enumerate(self.args)}
        rename.update((t, f"l_{k}") for k, t in enumerate(t for t in order if t not in rename))
        text = [_NAME.sub(lambda m: rename[m.group(0)], line) for line in lines]
        if self.results:
            returned = ", ".join(rename[t] for t in self.results)
            text.append(f"return {returned}" if len(self.results) == 1 else f"return ({returned})")
        self.params = [rename[t] for t in self.args]
        self.abstract, self.literals = _abstracted(text)

    def helper(self, varying: list[int]) -> tuple[str, str]:
        """(name, source) of the helper taking the integers at positions `varying` as
        arguments (`n_k`), the others written in."""
        parts, numbered = self.abstract.split(_HOLE), iter(range(len(varying)))
        text = parts[0] + "".join((f"n_{next(numbered)}" if k in varying else self.literals[k]) + part
                                  for k, part in enumerate(parts[1:]))
        params = self.params + [f"n_{k}" for k in range(len(varying))]
        name = "nest_" + hashlib.sha256(f"{params}\n{text}".encode()).hexdigest()[:12]
        return name, (f"@numba.njit({HELPER_OPTIONS})\ndef {name}({', '.join(params)}):\n"
                      + "".join(f"    {line}\n" for line in text.split("\n")))

    def call(self, name: str, varying: list[int]) -> str:
        # (np.intp: a literal argument would be typed as its value, one compile per value)
        args = self.args + [f"np.intp({self.literals[k]})" for k in varying]
        call = f"{name}({', '.join(args)})"
        return f"{', '.join(self.results)} = {call}" if self.results else call


def _abstracted(text: list[str]) -> tuple[str, list[str]]:
    """(the lines joined, each integer that is a whole index of an array read or written
    in a loop (`x[i_0, 5, i_1]`) a hole; those integers, in order)."""
    literals, out = [], []
    for line in text:
        pieces, at = [], 0
        for m in _INTEGER.finditer(line):
            if _loop_subscript_item(line, m.start(), m.end()) or _step_argument(line, m.start(), m.end()):
                pieces += [line[at:m.start()], _HOLE]
                literals.append(m.group(0))
                at = m.end()
        out.append("".join(pieces) + line[at:])
    return "\n".join(out), literals


def _step_argument(line: str, start: int, end: int) -> bool:
    """Whether line[start:end] is the integer a call passes a helper (`np.intp(5)`)."""
    return line[:start].endswith("np.intp(") and line[end:].startswith(")")


def _loop_subscript_item(line: str, start: int, end: int) -> bool:
    """Whether line[start:end] is one whole item of a subscript `x[...]` whose items
    include a loop index (an array's element: never a tuple's, whose items may differ in
    type)."""
    before, after = line[:start].rstrip(), line[end:].lstrip()
    if not (before.endswith(("[", ",")) and after.startswith(("]", ","))):
        return False
    opened = []
    for k, c in enumerate(line[:start]):
        if c in "([":
            opened.append((c, k))
        elif c in ")]" and opened:
            opened.pop()
    if not opened or opened[-1][0] != "[":
        return False
    close, depth = opened[-1][1], 0
    for k in range(opened[-1][1], len(line)):
        depth += {"[": 1, "]": -1}.get(line[k], 0)
        if depth == 0:
            close = k
            break
    return bool(_LOOP_INDEX.search(line[opened[-1][1]:close]))


def _varying(nests: list[_Nest]) -> dict[str, list[int]]:
    """{canonical text occurring at least `MIN_REPEATS` times: the positions of its
    integers that differ between its nests}."""
    seen: dict[str, list] = {}
    for nest in nests:
        seen.setdefault(nest.abstract, []).append(nest.literals)
    return {text: [k for k in range(len(found[0])) if len({v[k] for v in found}) > 1]
            for text, found in seen.items() if len(found) >= MIN_REPEATS}
