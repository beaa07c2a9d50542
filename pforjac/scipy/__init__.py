"""`pforjac.scipy.special`: scipy's names and signatures on pforjac Tensors (needs scipy,
the `pforjac[scipy]` extra)."""
