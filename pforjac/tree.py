"""The structure of `sources` and `targets`: pytrees, as `pforjac.tree_util` flattens them
(kept as the name the core modules import)."""
from .tree_util import (_LEAF, flatten_like, flatten_up_to, tree_flatten,  # noqa: F401
                        tree_map, tree_unflatten)

__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]
