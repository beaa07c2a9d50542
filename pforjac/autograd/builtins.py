"""autograd's `builtins`: its containers are Python's own here (pforjac differentiates
through lists, tuples and dicts as they are)."""
from builtins import dict, isinstance, list, tuple, type  # noqa: F401
