"""Cases ported from HIPS autograd's own test-suite (tests/test_systematic.py, test_numpy.py,
test_linalg.py, test_scipy.py): the cases, not the code. Each case is written once against a
namespace triple (numpy, scipy.special, scipy.linalg) so that the same source runs on
autograd's wrappers (the reference, `make_reference.py`), on pforjac Tensors through numpy's
own functions (dispatch) and through `pforjac.numpy`. This package imports neither pforjac
nor autograd."""
