"""pforjac.dask: Jacobians on a Dask cluster, as dask arrays (`pip install pforjac[dask]`).

- `jacobian(f, x, chunk_size=k, mode="reverse"|"forward")`: one task per chunk of k output
  rows (or input columns), each running the chunk's compiled numpy code;
- `batch_jacobian(f, x)`: per-example Jacobians block by block along the batch axis;
- `sparse_jacobian(prepared, x, f)`: the colour groups of a prepared sparse Jacobian as tasks,
  assembled into one scipy.sparse matrix on the client.

The chunk programs are traced and compiled once, on the client, and are one key of the
graph: each worker receives them once and compiles their source once. Whatever scheduler
is active runs the graph (a `distributed.Client`, the threaded default, `dask.config`).
See docs/dask.md.
"""
try:
    import dask.array  # noqa: F401
except ImportError as e:          # (pforjac itself does not need dask)
    raise ImportError(f"pforjac.dask needs dask's arrays ({e}); install the extra: "
                      f"pip install 'pforjac[dask]' (dask[array] and distributed)") from e

from .arrays import batch_jacobian, jacobian
from .artifact import compile_count
from .sparse import sparse_jacobian

__all__ = ["jacobian", "batch_jacobian", "sparse_jacobian", "compile_count"]
