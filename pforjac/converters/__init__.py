"""pfor converters, one module per op family, registered with `register_converter`.

Importing this package registers every built-in converter.
"""
from . import elementwise, reductions, shape, indexing, linalg  # noqa: F401
from . import dense_linalg  # noqa: F401

from . import sorting, scans, convolution  # noqa: F401
from . import custom_calls  # noqa: F401
