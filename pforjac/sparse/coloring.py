"""Colourings of a sparsity pattern: which columns (or rows) one derivative pass can share.

A Jacobian pattern `P` (bool, m x n) is compressed by a *column colouring* when no two
columns that share a row get the same colour (a distance-2 colouring of the bipartite
graph): then one forward pass per colour, seeded with the sum of its columns' basis
vectors, gives every entry of those columns unmixed. A *row colouring* is the same for
`P.T` and reverse passes. A symmetric Hessian pattern can use a *star colouring* of its
adjacency graph (every path on four vertices uses at least three colours): each entry is
then read directly from one of the two compressed columns it appears in (Gebremedhin,
Manne and Pothen, "What color is your Jacobian?", SIAM Review 2005).

The greedy first-fit colouring is sequential by nature (a vertex's colour depends on its
predecessors', and along a band that chain is as long as the matrix), so it is one tight
loop over Python lists of the CSR arrays (about 1 us a vertex). Everything else is
numpy/scipy.sparse: the conflict graphs, the orders, the lower bounds, the band colouring
(`j mod width`, which covers banded patterns without a greedy pass), Culberson's
recolouring by whole colour classes (one vectorized step a class) and the checks.

Example:
    >>> import numpy as np, scipy.sparse as sp
    >>> P = sp.csr_array(np.eye(5, dtype=bool) | np.eye(5, k=1, dtype=bool))
    >>> column_coloring(P).tolist()
    [0, 1, 0, 1, 0]
"""
from __future__ import annotations

import numpy as np

__all__ = ["as_pattern", "band_coloring", "column_coloring", "hub_coloring", "row_coloring",
           "star_coloring", "greedy_coloring", "recolor_by_classes", "check_column_coloring",
           "check_star_coloring"]

# the greedy star colouring visits about sum(degree**2) neighbours in Python: above this it
# is skipped (the distance-2 and hub colourings, valid for a symmetric matrix, remain)
_STAR_WORK_LIMIT = 20_000_000


def _sp():
    try:
        import scipy.sparse
    except ImportError as e:       # pragma: no cover - scipy is in the [scipy] and [test] extras
        raise ImportError("pforjac.sparse needs scipy: pip install 'pforjac[scipy]'") from e
    return scipy.sparse


def as_pattern(pattern, shape: tuple[int, int] | None = None, what: str = "sparsity"):
    """A bool `scipy.sparse.csr_array` with sorted, unique indices from a scipy.sparse
    matrix or array, or a dense array-like; `shape` (m, n) is checked when given."""
    sp = _sp()
    if not sp.issparse(pattern):
        dense = np.asarray(pattern)
        if dense.ndim != 2:
            raise ValueError(f"{what} must be a 2-D pattern (m outputs x n inputs), got an array "
                             f"of shape {dense.shape}")
        pattern = dense != 0
    csr = sp.csr_array(pattern, dtype=bool)
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    if shape is not None and tuple(csr.shape) != tuple(shape):
        raise ValueError(f"{what} has shape {tuple(csr.shape)}, but the function needs a pattern "
                         f"of shape {tuple(shape)} (outputs x inputs, each flattened in C order)")
    return csr


def _column_conflicts(pattern):
    """The columns' conflict graph: j ~ k when columns j and k share a row (no self-loops)."""
    p = pattern.astype(np.int32)      # (int8 would wrap at 256 shared rows)
    graph = (p.T @ p).tocsr()
    graph.setdiag(0)
    graph.eliminate_zeros()
    return graph


def greedy_coloring(graph, order) -> np.ndarray:
    """First-fit colouring of `graph` (a scipy.sparse adjacency) visiting vertices in `order`."""
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    colors = [-1] * graph.shape[0]
    for v in order:
        used = {colors[w] for w in indices[indptr[v]:indptr[v + 1]]}
        c = 0
        while c in used:
            c += 1
        colors[v] = c
    return np.asarray(colors, dtype=np.intp)


def _orders(graph):
    """The natural order, then largest degree first (ties in natural order) unless every
    degree is the same (the same order again)."""
    n = graph.shape[0]
    yield range(n)
    degrees = np.diff(graph.indptr)
    if degrees.size and degrees.min() != degrees.max():
        yield np.argsort(-degrees, kind="stable").tolist()


def _best_greedy(graph, lower_bound: int) -> np.ndarray:
    """The greedy colouring with the fewest colours over `_orders`, each improved by
    `recolor_by_classes`; stops at `lower_bound`."""
    best = None
    for order in _orders(graph):
        colors = recolor_by_classes(graph, greedy_coloring(graph, order), lower_bound)
        if best is None or _count(colors) < _count(best):
            best = colors
        if _count(best) <= lower_bound:
            break
    return best


def recolor_by_classes(graph, colors: np.ndarray, lower_bound: int = 0,
                       passes: int = 4) -> np.ndarray:
    """Culberson's iterated greedy: first-fit again, visiting the colour classes whole, in
    reverse order. A class has no inner edges, so each is coloured in one vectorized step,
    and the result never has more colours than the input; repeated while it gains."""
    indptr, indices = graph.indptr, graph.indices
    for _ in range(passes):
        k = _count(colors)
        if k <= max(lower_bound, 1):
            break
        new = np.full(colors.size, -1, np.intp)
        for c in range(k - 1, -1, -1):
            members = np.flatnonzero(colors == c)
            new[members] = _smallest_free(members, indptr, indices, new, k)
        if _count(new) >= k:
            break
        colors = new
    return colors


def _smallest_free(vertices: np.ndarray, indptr, indices, colors: np.ndarray, k: int):
    """For each vertex, the smallest colour none of its coloured neighbours has."""
    counts = indptr[vertices + 1] - indptr[vertices]
    owner = np.repeat(np.arange(vertices.size), counts)
    starts = np.repeat(indptr[vertices] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    neighbour_colors = colors[indices[starts + np.arange(owner.size)]]
    keep = neighbour_colors >= 0
    keys = np.unique(owner[keep].astype(np.int64) * k + neighbour_colors[keep])
    free = np.zeros(vertices.size, np.intp)
    if keys.size == 0:
        return free
    who, used = keys // k, keys % k
    groups, first, sizes = np.unique(who, return_index=True, return_counts=True)
    rank = np.arange(keys.size) - np.repeat(first, sizes)
    gap = np.where(used != rank, rank, k + 1)      # the first colour missing in the sorted run
    smallest = np.minimum.reduceat(gap, first)
    free[groups] = np.where(smallest > k, sizes, smallest)
    return free


def _count(colors: np.ndarray) -> int:
    return int(colors.max()) + 1 if colors.size else 0


def column_coloring(pattern) -> np.ndarray:
    """Colours of the columns such that columns sharing a row differ (forward mode): the
    band colouring `j mod width` when it reaches the lower bound (the largest row count),
    else the fewest-coloured of it and the greedy colourings."""
    pattern = as_pattern(pattern)
    if pattern.shape[1] == 0:
        return np.zeros(0, np.intp)
    row_counts = np.diff(pattern.indptr)
    lower = int(row_counts.max()) if row_counts.size else 0
    band = band_coloring(pattern)
    if _count(band) <= lower:
        return band
    greedy = _best_greedy(_column_conflicts(pattern), lower)
    return band if _count(band) < _count(greedy) else greedy


def band_coloring(pattern) -> np.ndarray:
    """`j mod w` for the width w of the band holding every entry (columns j - i in
    [lo, hi] for row i; w = hi - lo + 1): columns sharing a row are less than w apart."""
    rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
    offsets = pattern.indices - rows
    width = int(offsets.max() - offsets.min()) + 1 if offsets.size else 1
    return np.arange(pattern.shape[1], dtype=np.intp) % width


def row_coloring(pattern) -> np.ndarray:
    """Colours of the rows such that rows sharing a column differ (reverse mode)."""
    return column_coloring(as_pattern(pattern).T)


def _neighbours(pattern):
    """The symmetric adjacency of a square pattern: (P or P.T) without its diagonal."""
    sym = (pattern + pattern.T).astype(bool).tocsr()
    sym.setdiag(False)
    sym.eliminate_zeros()
    sym.sort_indices()
    return sym


def star_coloring(pattern) -> np.ndarray:
    """Colours of a symmetric pattern's columns from which every entry can be read directly
    (see `check_star_coloring`): the fewest-coloured of the distance-2 column colouring
    (which is one), `hub_coloring`, and a greedy star colouring (largest degree first)."""
    pattern = as_pattern(pattern)
    if pattern.shape[0] != pattern.shape[1]:
        raise ValueError(f"a Hessian pattern must be square, got shape {tuple(pattern.shape)}")
    sym = as_pattern(pattern + pattern.T)
    candidates = [column_coloring(sym), hub_coloring(sym)]
    adjacency = _neighbours(sym)
    degrees = np.diff(adjacency.indptr)
    best = min((c for c in candidates if c is not None), key=_count)
    if _count(best) <= _star_lower_bound(adjacency, degrees) \
            or int((degrees.astype(np.int64) ** 2).sum()) > _STAR_WORK_LIMIT:
        return best
    star = _greedy_star(adjacency, np.argsort(-degrees, kind="stable").tolist())
    return star if _count(star) < _count(best) else best


def hub_coloring(sym) -> np.ndarray | None:
    """A colour of its own for each hub (a row far longer than the median), and the
    distance-2 colouring of the rest without the hubs: an entry between two others is
    alone in its row among the others, and the hubs' colours are alone everywhere. Two
    colours for an arrowhead, which a distance-2 colouring gives n. None without hubs."""
    counts = np.diff(sym.indptr)
    hubs = counts > max(8, 4 * np.median(counts)) if counts.size else counts.astype(bool)
    if not hubs.any():
        return None
    rest = np.flatnonzero(~hubs)
    colors = np.empty(sym.shape[0], np.intp)
    colors[rest] = column_coloring(sym[rest][:, rest]) if rest.size else []
    colors[hubs] = _count(colors[rest]) + np.arange(int(hubs.sum()))
    return colors


def _star_lower_bound(adjacency, degrees: np.ndarray) -> int:
    """3 if some edge joins two vertices of degree >= 2 (a path on four vertices, which a
    star colouring gives three colours, or a triangle), else 2 with any edge, else 1."""
    if adjacency.nnz == 0:
        return 1
    rows = np.repeat(np.arange(adjacency.shape[0]), degrees)
    return 3 if np.any((degrees[rows] >= 2) & (degrees[adjacency.indices] >= 2)) else 2


def _greedy_star(graph, order) -> np.ndarray:
    """Greedy star colouring (Algorithm 4.1 of Gebremedhin, Manne and Pothen 2005): a colour
    is forbidden for v when it would make a path on four vertices two-coloured."""
    indptr, indices = graph.indptr.tolist(), graph.indices.tolist()
    nbrs = [indices[indptr[v]:indptr[v + 1]] for v in range(graph.shape[0])]
    colors = [-1] * graph.shape[0]
    seen = [dict() for _ in nbrs]     # seen[x][c]: how many coloured neighbours of x have c
    for v in order:
        forbidden = {colors[w] for w in nbrs[v]}
        for w in nbrs[v]:
            cw = colors[w]
            for x in nbrs[w]:
                cx = colors[x]
                if x == v or cx < 0:
                    continue
                # w uncoloured: v and x would both colour w's neighbours alike;
                # w coloured: x already has another neighbour coloured like w
                if cw < 0 or seen[x].get(cw, 0) >= 2:
                    forbidden.add(cx)
        c = 0
        while c in forbidden:
            c += 1
        colors[v] = c
        for x in nbrs[v]:
            seen[x][c] = seen[x].get(c, 0) + 1
    return np.asarray(colors, dtype=np.intp)


def unique_in_row(pattern, colors: np.ndarray) -> np.ndarray:
    """For each stored entry (CSR order): whether its column's colour occurs once in its row."""
    rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
    k = max(_count(colors), 1)
    keys = rows.astype(np.int64) * k + colors[pattern.indices]
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inverse.ravel()] == 1


def check_column_coloring(pattern, colors: np.ndarray) -> bool:
    """Whether no two columns sharing a row of `pattern` have the same colour."""
    pattern = as_pattern(pattern)
    return bool(np.all(unique_in_row(pattern, np.asarray(colors))))


def transpose_positions(pattern) -> np.ndarray:
    """For each stored entry (i, j) of a structurally symmetric CSR pattern with sorted
    indices: the position of its mirror entry (j, i)."""
    n = pattern.shape[1]
    rows = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
    keys = rows * n + pattern.indices           # increasing: CSR order with sorted indices
    return np.searchsorted(keys, pattern.indices.astype(np.int64) * n + rows)


def check_star_coloring(pattern, colors: np.ndarray) -> bool:
    """Whether every entry (i, j) of the symmetric `pattern` can be read directly: colour j
    is alone in row i, or colour i alone in row j."""
    sym = as_pattern(as_pattern(pattern) + as_pattern(pattern).T)
    alone = unique_in_row(sym, np.asarray(colors))
    return bool(np.all(alone | alone[transpose_positions(sym)]))
