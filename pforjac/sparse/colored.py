"""`ColoredPattern`: a sparsity pattern, its colouring and the direction of its passes."""
from __future__ import annotations

import numpy as np

__all__ = ["ColoredPattern"]

MODES = ("forward", "reverse", "star")


class ColoredPattern:
    """A pattern (bool `scipy.sparse.csr_array`, outputs x inputs) with the colour of each
    column (forward mode, Hessians' star colouring) or row (reverse mode).

    Example:
        >>> import numpy as np, scipy.sparse as sp
        >>> P = sp.csr_array(np.eye(4, dtype=bool))
        >>> ColoredPattern(P, np.zeros(4, int), "forward")
        ColoredPattern(4x4, nnz=4, sparsity=75.0%, forward, 1 colour)
    """

    def __init__(self, pattern, colors: np.ndarray, mode: str):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.pattern = pattern
        self.colors = np.asarray(colors, dtype=np.intp)
        self.colors.setflags(write=False)
        self.mode = mode

    @property
    def ncolors(self) -> int:
        """How many compressed passes one evaluation makes (vectorized into one)."""
        return int(self.colors.max()) + 1 if self.colors.size else 0

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.pattern.shape)

    @property
    def nnz(self) -> int:
        return int(self.pattern.nnz)

    def __repr__(self) -> str:
        m, n = self.shape
        sparsity = 100.0 * (1 - self.nnz / (m * n)) if m * n else 100.0
        colours = "colour" if self.ncolors == 1 else "colours"
        return (f"ColoredPattern({m}x{n}, nnz={self.nnz}, sparsity={sparsity:.1f}%, {self.mode}, "
                f"{self.ncolors} {colours})")

    def spy(self, path, markersize: float | None = None, title: str | None = None) -> None:
        """Writes a spy plot of the pattern to `path` (a PNG), through matplotlib's object
        API (no pyplot, so no global backend is chosen); needs the `pforjac[plot]` extra."""
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
        except ImportError as e:
            raise ImportError("ColoredPattern.spy needs matplotlib: pip install "
                              "'pforjac[plot]' (or pip install matplotlib)") from e
        m, n = self.shape
        fig = Figure(figsize=(5, 5 * max(m, 1) / max(n, 1) if n else 5), dpi=120)
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        size = markersize if markersize is not None else max(0.1, 200.0 / max(m, n, 1))
        ax.spy(self.pattern.tocoo(), markersize=size)
        ax.set_title(title or repr(self), fontsize=8)
        fig.savefig(path, format="png")
