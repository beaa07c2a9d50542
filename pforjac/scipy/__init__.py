"""`pforjac.scipy.special`: scipy's names and signatures on pforjac Tensors (needs scipy,
the `pforjac[scipy]` extra). `pforjac.scipy.optimize` and `pforjac.scipy.integrate`: scipy's
solvers with exact derivatives filled in (import them; `import pforjac` does not)."""
