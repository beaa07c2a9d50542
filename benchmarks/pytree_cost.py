"""Flatten + unflatten cost of pforjac.tree_util against optree (if installed).

Two trees: a 10-leaf dict of dicts (an MLP's parameters) and a 100-leaf list.
Medians of interleaved rounds, microseconds per flatten+unflatten.

    python benchmarks/pytree_cost.py
"""
import statistics
import time

import numpy as np

from pforjac import tree_util


def _trees():
    leaf = np.zeros(3)
    params = {f"layer{k}": {"w": leaf, "b": leaf} for k in range(5)}
    return {"dict of dicts, 10 leaves": params, "list, 100 leaves": [leaf] * 100}


def _round_trip_pforjac(tree):
    leaves, treedef = tree_util.tree_flatten(tree)
    return tree_util.tree_unflatten(treedef, leaves)


def _round_trip_optree(tree):
    import optree
    leaves, treedef = optree.tree_flatten(tree, none_is_leaf=False)
    return optree.tree_unflatten(treedef, leaves)


def _time(fn, tree, reps=2000) -> float:
    start = time.perf_counter()
    for _ in range(reps):
        fn(tree)
    return (time.perf_counter() - start) / reps * 1e6


def main(rounds: int = 15) -> None:
    ways = {"pforjac.tree_util": _round_trip_pforjac}
    try:
        import optree  # noqa: F401
        ways["optree"] = _round_trip_optree
    except ImportError:
        print("optree is not installed: pforjac.tree_util alone")
    for name, tree in _trees().items():
        times = {way: [] for way in ways}
        for _ in range(rounds):
            for way, fn in ways.items():
                times[way].append(_time(fn, tree))
        row = ", ".join(f"{way} {statistics.median(t):.1f} us" for way, t in times.items())
        print(f"{name}: {row}")


if __name__ == "__main__":
    main()
