"""The fuzzer's driver: `python -m tests.fuzz --profile long --programs 20000`.

Profiles: `ci` (the pytest entry's: finite differences and numpy only) and `long`
(adds the JAX oracle when a Python with JAX is found: $PFORJAC_FUZZ_JAX_PYTHON or
/tmp/fw/bin/python). Programs are `generator.generate(seed)` for seed in
[--start, --start + --programs) (with --ops, generated from those ops only). The JAX worker runs beside the checks: a program is sent
to it while fewer than `--jax-queue` wait, so JAX checks as many as it keeps up with.

Writes to --out (default /tmp/pforjac-fuzz): mismatches.jsonl (every mismatch, with its
program), new.md (one minimized reproducer per new signature) and summary.json, which
it also prints: programs, compared calls, mismatches (known and new), declined oracles.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import queue
import threading
import time

from . import check, generator, interp, oracle
from .ops import OPS
from .minimize import minimize, signature


class Run:
    """Counts and files of one run."""

    def __init__(self, out_dir: str | None, minimize_seconds: float):
        self.counts = collections.Counter()
        self.paths: set = set()
        self.ops = collections.Counter()
        self.new: dict = {}             # signature -> (record, minimized program)
        self.known = collections.Counter()
        self.minimize_seconds = minimize_seconds
        self.out_dir = out_dir
        self.log = None
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            self.log = open(os.path.join(out_dir, "mismatches.jsonl"), "w")

    def finish(self, out: check.Outcome) -> None:
        kind = "special" if out.program.get("special") else "batch" if out.program.get("batch") \
            else "smooth"
        self.counts["programs"] += 1
        self.counts[f"programs.{kind}.{out.program['dtype']}"] += 1
        self.counts["compared calls"] += out.compared
        self.counts["declined oracles"] += len(out.declined)
        self.paths |= out.paths
        self.ops.update(interp.used_ops(out.program))
        for m in out.mismatches:
            self._mismatch(m)
        out.calls = []

    def _mismatch(self, m: dict) -> None:
        self.counts["mismatches"] += 1
        if self.log:
            self.log.write(json.dumps(m, default=str) + "\n")
            self.log.flush()
        if m["known"]:
            self.known[m["known"]] += 1
            return
        sig = signature(m)
        if sig in self.new:
            self.counts["mismatches.new"] += 1
            return
        small = minimize(m, self.minimize_seconds) if self.minimize_seconds else m["program"]
        again = _known_when_small(m, small)
        if again:           # the original's other lines kept the known test from deciding
            self.known[again] += 1
            return
        self.counts["mismatches.new"] += 1
        self.new[sig] = (m, small)

    def summary(self, seconds: float) -> dict:
        return {"counts": dict(self.counts), "known": dict(self.known), "seconds": round(seconds, 1),
                "paths": sorted(self.paths), "new": [
                    {"path": m["path"], "what": m["what"], "seed": m["seed"], "detail": m["detail"],
                     "minimized": small} for m, small in self.new.values()]}

    def write(self, seconds: float) -> dict:
        summary = self.summary(seconds)
        if self.out_dir:
            with open(os.path.join(self.out_dir, "summary.json"), "w") as f:
                json.dump(summary, f, indent=1, default=str)
            with open(os.path.join(self.out_dir, "new.md"), "w") as f:
                for m, small in self.new.values():
                    f.write(f"## {m['path']}: {m['what']} (seed {m['seed']})\n\n{m['detail']}\n\n"
                            f"```\n{interp.source(small)}\n```\n\n`{interp.dumps(small)}`\n\n")
        return summary


def _known_when_small(m: dict, small: dict) -> str | None:
    """The known issue the minimized program's same mismatch is, if any."""
    if small is m["program"]:
        return None
    out = check.check_program(m["seed"], small)
    return next((n["known"] for n in out.mismatches if signature(n) == signature(m)), None)


class JaxPipe:
    """The JAX worker with a reader thread: replies arrive on `replies` as they come."""

    def __init__(self, limit: int):
        self.oracle = oracle.JaxOracle()
        self.limit, self.waiting, self.dead = limit, {}, False
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                (reply,) = self.oracle.receive(1)
            except Exception:       # noqa: BLE001  (the worker ended)
                return
            self.replies.put(reply)

    def offer(self, seed: int, program: dict) -> bool:
        if self.dead or len(self.waiting) >= self.limit or program.get("special"):
            return False
        try:
            self.oracle.send([check.jax_request(seed, program)])
        except OSError:         # the worker died: the run goes on without JAX
            self.dead = True
            return False
        self.waiting[seed] = None
        return True

    def collect(self, run: Run, block: float = 0.0) -> None:
        while self.waiting:
            try:
                reply = self.replies.get(timeout=block) if block else self.replies.get_nowait()
            except queue.Empty:
                return
            out = self.waiting.pop(reply["id"], None)
            if out is not None:
                run.counts["jax replies"] += 1
                try:
                    check.apply_jax(out, reply)
                except Exception:       # noqa: BLE001
                    run.counts["harness errors"] += 1
                run.finish(out)


def run(programs: int, start: int = 0, jax: str = "auto", out_dir: str | None = None,
        minimize_seconds: float = 20.0, jax_queue: int = 3, progress: int = 0,
        names: list | None = None) -> dict:
    use_jax = jax == "on" or (jax == "auto" and oracle.jax_available())
    pipe = JaxPipe(jax_queue) if use_jax else None
    book = Run(out_dir, minimize_seconds)
    t0 = time.time()
    for seed in range(start, start + programs):
        program = check.program_for(seed) if names is None else generator.generate(seed, names=names)
        sent = pipe is not None and pipe.offer(seed, program)
        try:
            out = check.check_program(seed, program)
        except Exception as e:      # noqa: BLE001  (the harness's fault: counted, the run goes on)
            book.counts["harness errors"] += 1
            out = check.Outcome(seed, program, declined=[f"harness: {type(e).__name__}: {e}"])
        if sent:
            pipe.waiting[seed] = out
        else:
            book.finish(out)
        if pipe is not None:
            pipe.collect(book)
        if progress and (seed - start + 1) % progress == 0:
            book.write(time.time() - t0)
            print(json.dumps({"programs": seed - start + 1, **book.counts}), flush=True)
    if pipe is not None:
        deadline = time.time() + 300
        while pipe.waiting and time.time() < deadline and pipe.oracle.proc.poll() is None:
            pipe.collect(book, block=5.0)
        for out in pipe.waiting.values():       # no reply came: checked without JAX
            if out is not None:
                book.finish(out)
        pipe.oracle.close()
        book.counts["jax version " + pipe.oracle.version] = 1
    return book.write(time.time() - t0)


PROFILES = {"ci": {"programs": 150, "jax": "off", "classes": "programs", "points": 50},
            "long": {"programs": 20000, "jax": "auto", "classes": "programs,conformance,complex",
                     "points": 2000}}
CLASSES = ("programs", "conformance", "complex")


def _selected(spec: str | None) -> list | None:
    if not spec:
        return None
    wanted = set(spec.split(","))
    names = [n for n, o in OPS.items() if (n in wanted or o.family in wanted) and o.family != "none"]
    if not names:
        raise SystemExit(f"--ops {spec!r} names no op or family of tests/fuzz/ops.py")
    return names


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--profile", choices=sorted(PROFILES), default="long")
    parser.add_argument("--programs", type=int)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--jax", choices=("auto", "on", "off"))
    parser.add_argument("--jax-queue", type=int, default=3)
    parser.add_argument("--out", default="/tmp/pforjac-fuzz")
    parser.add_argument("--minimize-seconds", type=float, default=20.0)
    parser.add_argument("--progress", type=int, default=500)
    parser.add_argument("--ops", help="comma-separated op names or families (e.g. custom, "
                        "conform): programs drawn from those ops only")
    parser.add_argument("--classes", help=f"comma-separated point classes of {CLASSES}: the "
                        f"random programs, the conformance grid (tests/conformance.py), random "
                        f"complex expressions (points.py); the profile's by default")
    parser.add_argument("--points", type=int, help="how many complex points (class complex)")
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    classes = (args.classes or profile["classes"]).split(",")
    unknown = sorted(set(classes) - set(CLASSES))
    if unknown:
        raise SystemExit(f"--classes: {unknown} are not among {CLASSES}")
    jax = args.jax or profile["jax"]
    if "programs" in classes:
        summary = run(args.programs or profile["programs"], args.start, jax, args.out,
                      args.minimize_seconds, args.jax_queue, args.progress, _selected(args.ops))
        print(json.dumps({k: summary[k] for k in ("counts", "known", "seconds")}, indent=1))
        for n in summary["new"]:
            print(f"NEW {n['path']}: {n['what']} (seed {n['seed']}): {n['detail'][:200]}")
    _point_classes(classes, args.points or profile["points"], args.start, jax, args.out)


def _point_classes(classes, points_wanted: int, start: int, jax: str, out_dir) -> None:
    """Runs the conformance and complex classes (points.py), writing points.json to out."""
    from . import points
    results = {}
    t0 = time.time()
    if "conformance" in classes:
        results["conformance"] = points.run_conformance()
    if "complex" in classes:
        python = os.environ.get("PFORJAC_FUZZ_JAX_PYTHON", "/tmp/fw/bin/python")
        use_jax = jax == "on" or (jax == "auto" and oracle.jax_available(python))
        results["complex"] = points.run_complex(points_wanted, start, python if use_jax else None)
    if not results:
        return
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "points.json"), "w") as f:
            json.dump(results, f, indent=1)
    for name, r in results.items():
        print(json.dumps({name: {k: v for k, v in r.items() if k != "problems"},
                          "seconds": round(time.time() - t0, 1)}))
        for p in r["problems"][:20]:
            print(f"NEW {name}: {p[:300]}")
