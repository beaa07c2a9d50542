"""A sum of a bool mask cast to floats, computed by np.einsum, keeps the C order codegen
counts on for a sum's result: of a transposed mask, einsum would lay its result out as
the mask is (F order), and a lean entry hands out an output it counts C-ordered as it is."""
import numpy as np

import pforjac as pj


def _counts(x):
    mask = pj.cast(pj.transpose(x, (2, 1, 0)) > 0.0, np.float64)
    return pj.sum(mask, axis=1)


def test_a_count_sum_of_a_transposed_mask_is_handed_out_c_ordered():
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    f = pj.function(_counts)
    want = np.asarray(_counts(x))
    for _ in range(3):                      # (the first calls trace; then the lean entry)
        got = f(x)
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
