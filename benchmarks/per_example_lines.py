"""The per-example-gradient program's generated numpy code, line by line, each line timed alone.

    python benchmarks/per_example_lines.py [small|medium] [float32|float64]

Prints the generated source that a call of `pj.function(pj.vmap(pj.grad(loss), in_axes=(None,
0, 0)))` runs through its lean entry (`_Compiled.lean_code`: inputs C-contiguous) on a
workload of `_per_example_workloads.py`, each line with its median time in microseconds (the
line run by `exec` on the values the lines before it made; a line that writes into a buffer,
`out=`, gets that buffer's old contents back before each run), and the whole code's time.
Each line's time includes about 0.15 us of `exec`; pin it (`taskset -c 1`) on a loaded machine.
"""
from __future__ import annotations

import os
import re
import statistics
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np  # noqa: E402

import _per_example_workloads as w  # noqa: E402
import pforjac as pj  # noqa: E402
from pforjac.compiled.codegen import namespace_of, program_to_source  # noqa: E402
from pforjac.tree_util import tree_leaves  # noqa: E402


def line_time(code, ns: dict, line: str) -> float:
    """Median seconds of one run of `code` (the compiled `line`) in `ns`."""
    written = re.search(r"out=(\w+)", line)
    if written is None:
        return statistics.median(timeit.repeat(lambda: exec(code, ns), number=20, repeat=50)) / 20
    buffer = ns[written.group(1)]
    kept, times = buffer.copy(), []
    for _ in range(1000):
        np.copyto(buffer, kept)
        start = timeit.default_timer()
        exec(code, ns)
        times.append(timeit.default_timer() - start)
    np.copyto(buffer, kept)
    return statistics.median(times)


def main(size: str = "small", dtype: str = "float32") -> None:
    f = pj.function(pj.vmap(pj.grad(w.make_loss(np)), in_axes=(None, 0, 0)))
    args = w.make(size, dtype)
    f(*args)
    compiled = f._compiled(args, {})[0]
    inputs = tree_leaves(args)
    code = compiled.lean_code()
    whole = min(timeit.repeat(lambda: code(*inputs, compiled._consts), number=20,
                              repeat=100)) / 20
    lines = program_to_source(compiled.program, compiled.name, compiled.exact,
                              c_inputs=True).splitlines()
    names = re.match(r"def \w+\((.*)\):", lines[0]).group(1).split(", ")
    ns = dict(namespace_of(compiled.program))
    ns.update(zip(names, inputs + [compiled._consts]))
    total = 0.0
    for line in (x.strip() for x in lines[1:]):
        if line.startswith("return"):
            break
        code = compile(line, "<line>", "exec")
        t = line_time(code, ns, line)
        exec(code, ns)                     # the values the next lines read
        total += t
        if line != "pass":
            print(f"{t * 1e6:6.2f}  {line}")
    print(f"sum of lines {total * 1e6:.1f} us; the whole code, best of 100 x 20 calls, "
          f"{whole * 1e6:.1f} us")


if __name__ == "__main__":
    main(*sys.argv[1:3])
