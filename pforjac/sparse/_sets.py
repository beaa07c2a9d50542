"""Index sets, one per element of a value, as rows of a boolean CSR matrix.

A value's gradient pattern has a row per element (C order) and a column per input: row e
holds the inputs element e can depend on. Its Hessian pattern has a row per element and a
column per unordered pair of inputs (i <= j, column i * n + j). A *relation* says which
elements of an op's input each output element reads:

    IDENTITY        output element e reads input element e (same size)
    Select(src)     output element e reads input element src[e] (none where src[e] < 0)
    ALL             every output element reads every input element
    a csr_array     (outputs x inputs): output element e reads the row's columns

`compose(relation, sets)` gives each output element the union of the sets it reads: an
index gather over CSR arrays, never a loop over elements. Every set matrix made here is
canonical (sorted, no duplicates), which the gathers keep.
"""
from __future__ import annotations

import numpy as np

try:
    import scipy.sparse as sp
except ImportError as e:        # pragma: no cover  (scipy is in the test extra)
    raise ImportError("pforjac.sparse needs scipy, an optional dependency of pforjac: "
                      "pip install 'pforjac[scipy]'") from e

__all__ = ["IDENTITY", "ALL", "Select", "compose", "union", "pairs", "empty", "identity",
           "ranges", "from_parts", "from_rows", "kron_relation", "scatter_relation",
           "PAIR_LIMIT"]

PAIR_LIMIT = 200_000_000      # index pairs one Hessian step may form before it refuses
_PRODUCT_COLUMNS = 1 << 22    # wider set matrices are composed without scipy's product


class _Named:
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


IDENTITY, ALL = _Named("IDENTITY"), _Named("ALL")


class Select:
    """Output element e reads input element `src[e]` (none where it is negative)."""

    def __init__(self, src):
        self.src = np.asarray(src, np.int64).ravel()


def from_parts(indptr, indices, shape, canonical: bool):
    m = sp.csr_array((np.ones(len(indices), bool), indices, indptr), shape=shape)
    if canonical:
        m.has_canonical_format = True
    else:
        m.sum_duplicates()
    return m


def empty(rows: int, ncols: int):
    return from_parts(np.zeros(rows + 1, np.int64), np.zeros(0, np.int64), (rows, ncols), True)


def identity(n: int):
    return from_parts(np.arange(n + 1), np.arange(n), (n, n), True)


def from_rows(rows, cols, shape):
    """The relation (or sets) holding the pairs (rows[p], cols[p])."""
    m = sp.csr_array((np.ones(len(rows), bool), (np.asarray(rows), np.asarray(cols))),
                     shape=shape)
    m.sum_duplicates()
    return m


def ranges(starts, lengths):
    """The concatenation of arange(s, s + l) for each pair: every row's slice, gathered."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    shift = np.repeat(np.asarray(starts, np.int64) - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift


def _row_of_entries(m):
    return np.repeat(np.arange(m.shape[0]), np.diff(m.indptr))


def compose(relation, sets, out_size: int):
    """Each output element's union of the sets (rows of `sets`) that `relation` reads."""
    if relation is IDENTITY:
        return sets
    if relation is ALL:
        every = np.unique(sets.indices)
        return from_parts(np.arange(out_size + 1) * len(every), np.tile(every, out_size),
                          (out_size, sets.shape[1]), True)
    if isinstance(relation, Select):
        return _select(relation.src, sets)
    return _gather(relation, sets)


def _select(src, sets):
    """Row e: row src[e] of `sets` (empty where src[e] < 0), by scipy's row indexing over
    `sets` with one empty row appended (its indptr repeated: no copy of the entries)."""
    rows = sets.shape[0]
    if src.size and src.min() < 0:
        sets = sp.csr_array((sets.data, sets.indices, np.append(sets.indptr, sets.indptr[-1])),
                            shape=(rows + 1, sets.shape[1]))
        src = np.where(src < 0, rows, src)
    out = sets[src]
    out.has_canonical_format = True       # rows of a canonical matrix
    return out


def _gather(relation, sets):
    """Row e of the result: the union of the rows of `sets` in row e of `relation`: a
    boolean product where `sets` has few columns (scipy's product keeps a mask as long as a
    row), else gathered and deduplicated (a Hessian's n*n columns)."""
    if sets.shape[1] <= _PRODUCT_COLUMNS:
        out = relation @ sets
        out.sort_indices()
        out.has_canonical_format = True   # (a boolean product has no duplicates)
        return out
    read = relation.indices
    lengths = np.diff(sets.indptr)[read]
    indices = sets.indices[ranges(sets.indptr[read], lengths)]
    counts = np.bincount(_row_of_entries(relation), weights=lengths,
                         minlength=relation.shape[0]).astype(np.int64)
    one_each = relation.nnz == 0 or np.diff(relation.indptr).max() <= 1
    return from_parts(np.concatenate([[0], np.cumsum(counts)]), indices,
                      (relation.shape[0], sets.shape[1]), one_each)


def union(matrices: list, rows: int, ncols: int):
    """Row by row, the union of the set matrices (all of `rows` rows): scipy's sum of
    canonical boolean matrices, a merge of sorted rows."""
    matrices = [m for m in matrices if m is not None and m.nnz]
    if not matrices:
        return empty(rows, ncols)
    out = matrices[0]
    for m in matrices[1:]:
        out = out + m
    return out


def pairs(a, b, n: int, op: str):
    """Row by row, the unordered pairs {i, j} with i in a's row and j in b's (as columns
    i * n + j, i <= j, of an n*n-column set matrix). `b is a` gives the row's square."""
    rows_a = _row_of_entries(a)
    lengths = np.diff(b.indptr)[rows_a]
    total = int(lengths.sum())
    if total > PAIR_LIMIT:
        raise MemoryError(f"pforjac.sparse.hessian_sparsity: op '{op}' would form {total:,} "
                          f"index pairs (its elements depend on many inputs each); the "
                          f"Hessian is nearly dense there: compute it densely instead")
    first = np.repeat(a.indices.astype(np.int64), lengths)       # (i * n + j needs 64 bits)
    second = b.indices[ranges(b.indptr[rows_a], lengths)].astype(np.int64)
    rows = np.repeat(rows_a, lengths)
    if b is a:
        keep = first <= second
        first, second, rows = first[keep], second[keep], rows[keep]
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    counts = np.bincount(rows, minlength=a.shape[0])
    return from_parts(np.concatenate([[0], np.cumsum(counts)]), lo * n + hi,
                      (a.shape[0], n * n), False)


def kron_relation(outer: int, block, inner: int):
    """The relation of an op that maps each of `outer` x `inner` independent lines through
    `block` (a boolean (out_len, in_len) array): cumsum, an unknown gather along an axis."""
    block = sp.csr_array(np.asarray(block, bool))
    left = sp.kron(sp.eye_array(outer, dtype=bool, format="csr"), block, format="csr")
    m = sp.kron(left, sp.eye_array(inner, dtype=bool, format="csr"), format="csr")
    m = sp.csr_array(m, dtype=bool)
    m.sum_duplicates()
    return m


def scatter_relation(dst, out_size: int):
    """Input element p is added into output element dst[p] (none where it is negative)."""
    dst = np.asarray(dst, np.int64).ravel()
    src = np.arange(len(dst))
    keep = dst >= 0
    return from_rows(dst[keep], src[keep], (out_size, len(dst)))
