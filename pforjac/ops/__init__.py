"""pforjac's ops, one module per family; every public function is re-exported here."""
from .broadcasting import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .nn import *  # noqa: F401,F403
from . import broadcasting, elementwise, reductions, shape, indexing, linalg, nn
from .dense_linalg import *  # noqa: F401,F403
from .triangular import *  # noqa: F401,F403
from .matrix_functions import *  # noqa: F401,F403
from .spectral import *  # noqa: F401,F403
from .determinant import *  # noqa: F401,F403
from .eigenvalues import *  # noqa: F401,F403
from . import dense_linalg, triangular, matrix_functions, spectral, determinant, eigenvalues
from ._methods import install as _install

__all__ = [name for family in (broadcasting, elementwise, reductions, shape, indexing,
                                           linalg, nn)
           for name in family.__all__]
__all__ += (dense_linalg.__all__ + triangular.__all__ + matrix_functions.__all__
            + spectral.__all__ + determinant.__all__ + eigenvalues.__all__)

from . import special, bessel  # noqa: E402,F401  (scipy.special's primitives; names in pforjac.scipy)

_install()

from . import products, arrays, statistics  # noqa: E402  (numpy's structure functions)
from .products import *  # noqa: E402,F401,F403
from .arrays import *  # noqa: E402,F401,F403
from .statistics import *  # noqa: E402,F401,F403

__all__ += products.__all__ + arrays.__all__ + statistics.__all__

from .ufuncs import *  # noqa: F401,F403,E402  (numpy's array functions and other ufuncs)
from .sorting import *  # noqa: F401,F403,E402
from .scans import *  # noqa: F401,F403,E402
from .convolution import *  # noqa: F401,F403,E402
from .numeric import *  # noqa: F401,F403,E402
from .complex_parts import *  # noqa: F401,F403,E402
from . import ufuncs, sorting, scans, convolution, numeric, complex_parts  # noqa: E402
__all__ += [name for family in (ufuncs, sorting, scans, convolution, numeric, complex_parts)
            for name in family.__all__]
