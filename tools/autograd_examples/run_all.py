"""Runs every one of HIPS autograd's examples under autograd and under pforjac.autograd
(its import lines alone rewritten), with the same capped iteration counts, and writes a
table: example, seconds under each, their ratio, and whether the printed values agree.

    python tools/autograd_examples/run_all.py --examples PATH/TO/autograd/examples \\
        --autograd-python /path/with/autograd/bin/python [--iters 20] [--lines 40] \\
        [--budget 120] [--only rnn,gmm] [--out table.md]

Caps (see run_one.py): `minimize` and the optimizers stop at --iters iterations, each
run at --lines lines of output, and a run still going at --budget seconds is stopped.
Both run the same copy of the examples, autograd's with pforjac.autograd's modules
aliased to autograd's. The seconds are the example's own (interpreter start and the autograd/pforjac imports
left out), from one run each, autograd's and pforjac's run one after the other. Values
agree when every number printed matches to --rtol (graph node ids renumbered).
Examples that download MNIST are listed and not run. BLAS runs on --blas-threads threads
(default 1) in both: on a busy machine OpenBLAS's threads wait for each other, and a
2x2 triangular solve with 500 right-hand sides took 15-25 ms on 2 threads against 0.23 ms
on one (gmm's covariance solves).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SKIP = {"__init__.py", "data.py", "data_mnist.py"}
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def examples(folder: pathlib.Path) -> list[pathlib.Path]:
    return sorted(p.relative_to(folder) for p in folder.rglob("*.py") if p.name not in SKIP)


def needs_download(source: str) -> bool:
    return "data_mnist" in source or "load_mnist" in source


def ported(source: str) -> str:
    """The source with `import autograd...` / `from autograd...` read as pforjac.autograd."""
    return re.sub(r"^(\s*)(import|from)(\s+)autograd\b", r"\1\2\3pforjac.autograd", source,
                  flags=re.M)


def prepare(folder: pathlib.Path, work: pathlib.Path) -> pathlib.Path:
    """A copy of the examples with their imports rewritten: both run this copy (autograd's
    run with pforjac.autograd aliased to autograd), as some train on their own text."""
    port = work / "examples"
    shutil.copytree(folder, port)
    for path in port.rglob("*.py"):
        path.write_text(ported(path.read_text()))
    return port


def run(python: str, path: pathlib.Path, args, extra_path: str = "") -> dict:
    threads = str(args.blas_threads)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1", OPENBLAS_NUM_THREADS=threads,
               OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads,
               PYTHONPATH=os.pathsep.join(p for p in (str(HERE / "stub"), extra_path) if p))
    command = [python, str(HERE / "run_one.py"), str(path), str(args.iters), str(args.lines)]
    if not extra_path:
        command.append("--autograd")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.budget,
                              env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return {"rc": None, "seconds": None, "out": out, "error": ""}
    found = re.search(r"##elapsed ([\d.]+)", done.stderr)
    error = [line for line in done.stderr.splitlines() if line and not line.startswith(" ")
             and not line.startswith("##")]
    values = "".join(line + "\n" for line in done.stderr.splitlines()
                     if line.startswith("##value"))
    return {"rc": done.returncode, "seconds": float(found.group(1)) if found else None,
            "out": done.stdout + values, "error": error[-1] if done.returncode and error else ""}


def _normalized(text: str) -> str:
    ids: dict = {}
    return re.sub(r"node_\d+", lambda m: ids.setdefault(m.group(0), f"node_{len(ids)}"), text)


def agree(a: str, b: str, rtol: float, atol: float = 1e-9) -> tuple[bool, str]:
    """Whether two outputs print the same text and the same numbers to rtol (numbers
    within atol of each other agree: a gradient at a stationary point is rounding)."""
    a, b = _normalized(a), _normalized(b)
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False, "different text"
    x = [float(v) for v in NUMBER.findall(a)]
    y = [float(v) for v in NUMBER.findall(b)]
    worst = max((abs(p - q) / max(abs(p), abs(q)) for p, q in zip(x, y)
                 if abs(p - q) > atol), default=0.0)
    return worst <= rtol, f"{len(x)} numbers; largest relative difference {worst:.0e}"


def _common_lines(a: str, b: str) -> tuple[str, str]:
    """The complete lines both printed (a stopped run's output is cut anywhere)."""
    a_lines, b_lines = a.split("\n")[:-1], b.split("\n")[:-1]
    n = min(len(a_lines), len(b_lines))
    return "\n".join(a_lines[:n]), "\n".join(b_lines[:n])


def row(name: str, ag: dict, pj: dict, rtol: float) -> dict:
    stopped = ag["rc"] is None or pj["rc"] is None
    outs = _common_lines(ag["out"], pj["out"]) if stopped else (ag["out"], pj["out"])
    same, detail = agree(*outs, rtol)
    if stopped:
        verdict = ("stopped at the budget" + (" (both)" if ag["rc"] == pj["rc"] else "")
                   + ("; the lines both printed agree" if same else "; values differ"))
    elif ag["rc"] and pj["rc"]:
        same_error = ag["error"].split(":")[0] == pj["error"].split(":")[0]
        verdict = ("fails as under autograd: " if same_error else "both fail: ") + pj["error"]
    elif pj["rc"]:
        verdict = "fails: " + pj["error"]
    elif ag["rc"]:
        verdict = "autograd fails: " + ag["error"]
    elif same and detail.startswith("0 numbers"):
        verdict = "same output, no numbers printed"
    else:
        verdict = "same values" if same else "values differ"
    return {"example": name, "autograd": ag["seconds"], "pforjac": pj["seconds"],
            "verdict": verdict, "detail": detail}


def _seconds(value) -> str:
    return "-" if value is None else (f"{value:.2f}" if value >= 1 else f"{value:.3f}")


def table(rows: list[dict]) -> str:
    lines = ["| example | autograd s | pforjac s | ratio | result |",
             "| --- | --- | --- | --- | --- |"]
    for r in rows:
        ratio = (f"{r['pforjac'] / r['autograd']:.2f}x" if r["autograd"] and r["pforjac"]
                 else "-")
        lines.append(f"| {r['example']} | {_seconds(r['autograd'])} | {_seconds(r['pforjac'])} "
                     f"| {ratio} | {r['verdict']} ({r['detail']}) |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", required=True, type=pathlib.Path)
    parser.add_argument("--autograd-python", required=True)
    parser.add_argument("--pforjac-python", default=sys.executable)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--lines", type=int, default=40)
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--only", default="")
    parser.add_argument("--blas-threads", type=int, default=1)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args(argv)
    rows = run_examples(args)
    text = table(rows)
    print("\n" + text)
    if args.out:
        args.out.write_text(text)


def run_examples(args) -> list[dict]:
    only = set(filter(None, args.only.split(",")))
    rows = []
    with tempfile.TemporaryDirectory() as work:
        port = prepare(args.examples, pathlib.Path(work))
        for rel in examples(port):
            name = str(rel.with_suffix(""))
            if only and name not in only and rel.stem not in only:
                continue
            if needs_download((port / rel).read_text()):
                rows.append({"example": name, "autograd": None, "pforjac": None,
                             "verdict": "not run", "detail": "downloads MNIST"})
                continue
            ag = run(args.autograd_python, port / rel, args)
            pj = run(args.pforjac_python, port / rel, args, extra_path=str(ROOT))
            rows.append(row(name, ag, pj, args.rtol))
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
    return rows


if __name__ == "__main__":
    main()
