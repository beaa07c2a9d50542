"""Sparse Jacobians and Hessians (placeholder: the pattern detection is `pattern`)."""
