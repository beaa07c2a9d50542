"""autograd's tests/test_numpy.py: one case per check_grads call, real dtypes."""
from __future__ import annotations

from .spec import C, R, SPD


def build(np, sp, la, cases):
    _products_and_reductions(np, cases)
    _indexing(np, cases)
    _shapes(np, cases)
    _construction(np, cases)
    _misc(np, cases)


def _products_and_reductions(np, cases):
    for i, (a, b) in enumerate([(R(10, 11), R(11)), (R(10, 11), R(11, 10)), (R(10), R(10, 11)),
                                (R(11), R(11)), (R(10, 11), R()), (R(), R(10, 11)),
                                (R(10), R()), (R(), R(10))]):
        cases.add(f"np_dot_{i}", np.dot, a, b, wrt=(0, 1))
    cases.add("np_outer", np.outer, R(11), R(11), wrt=(0, 1))
    for name in ("max", "min"):
        f = getattr(np, name)
        cases.add(f"np_{name}", f, R(10, 11))
        cases.add(f"np_{name}_axis", lambda x, f=f: f(x, axis=1), R(3, 4, 5))
        cases.add(f"np_{name}_axis_keepdims", lambda x, f=f: f(x, axis=1, keepdims=True), R(3, 4, 5))
    for name in ("sum", "mean"):
        f = getattr(np, name)
        cases.add(f"np_{name}_1", f, R(10, 11))
        cases.add(f"np_{name}_2", lambda x, f=f: f(x, axis=0), R(10, 11))
        cases.add(f"np_{name}_3", lambda x, f=f: f(x, axis=0, keepdims=True), R(10, 11))
    cases.add("np_sum_axis_tuple", lambda x: np.sum(x, axis=(1, 2)), R(10, 11, 7))
    cases.add("np_non_numpy_sum", lambda x, y: sum([x, y]), R(10, 11), R(10, 11), wrt=(0, 1))
    for i, (axis, keep, shape) in enumerate([(None, False, (2, 3)), (0, False, (2, 3)),
                                             (0, True, (2, 3)), (None, False, (7,))]):
        cases.add(f"np_prod_{i + 1}", lambda x, a=axis, k=keep: np.prod(x, axis=a, keepdims=k),
                  R(*shape) ** 2 / 10.0 + 0.1)
    for i, (shape, axis, keep, ddof) in enumerate(
            [((3,), None, True, 0), ((3, 4), None, False, 1), ((1, 3), None, True, 1),
             ((3, 4), 1, False, 2), ((3, 4), None, True, 2), ((3, 4), 1, True, 2)]):
        for name in ("var", "std"):
            f = getattr(np, name)
            cases.add(f"np_{name}_ddof_{i}", lambda x, f=f, a=axis, k=keep, d=ddof:
                      f(x, axis=a, keepdims=k, ddof=d), R(*shape))
    cases.add("np_cumsum_axis0", lambda x: np.cumsum(x, axis=0), R(10, 11))
    cases.add("np_cumsum_axis1", lambda x: np.cumsum(x, axis=1), R(10, 11))
    cases.add("np_cumsum_1d", np.cumsum, R(10))
    cases.add("np_cumsum_no_axis", np.cumsum, R(10, 11))
    cases.add("np_mean_list", lambda x: np.mean(np.array([x, x + 2])), C(0.0))
    cases.add("np_std_list", lambda x: np.std(np.array([x, x + 2.0])), C(0.0))
    cases.add("np_var_list", lambda x: np.var(np.array([x, x + 2.0])), C(0.0))


def _indexing(np, cases):
    cases.add("np_index_ints", lambda x: x[3, 0, 1], R(5, 6, 4))
    cases.add("np_index_slice", lambda x: x[::-1, 2:4, :], R(5, 6, 4))
    cases.add("np_index_lists", lambda x: x[[0, 1, 2], :, :], R(5, 6, 4))
    cases.add("np_index_mixed", lambda x: x[3, 2:, [1, 3]], R(5, 6, 4))
    cases.add("np_vector_slice", lambda x: x[2:4], R(5))
    cases.add("np_index_slice_fanout", lambda x: x[::-1, 2:4, :] + x[::-1, 3:5, :], R(5, 6, 4))
    cases.add("np_index_multiple_slices", lambda x: x[2:6][1:3], R(7))
    cases.add("np_multi_index", lambda x: x[[0, 0]], R(3))
    cases.add("np_multi_index2", lambda x: np.array([x[[0, 1, 0]], x[[1, 1, 2]]]), R(3))
    cases.add("np_index_dot_slices", lambda x: np.dot(x[:2], x[2:]), R(4))
    cases.add("np_cast_to_int", lambda w: (w * np.ones((5, 10)))[[0, 2, 3], :].sum(), R(5, 10))
    cases.add("np_where", lambda a, b: np.where(np.arange(20).reshape(4, 5) % 3 > 0, a, b),
              R(4, 5), R(4, 5), wrt=(0, 1))


def _shapes(np, cases):
    cases.add("np_flipud", np.flipud, R(10, 11))
    cases.add("np_fliplr", np.fliplr, R(10, 11))
    cases.add("np_rot90", np.rot90, R(10, 11))
    cases.add("np_reshape_method", lambda x: x.reshape((5 * 4, 6)), R(5, 6, 4))
    cases.add("np_reshape_call", lambda x: np.reshape(x, (5 * 4, 6)), R(5, 6, 4))
    cases.add("np_reshape_method_nolist", lambda x: x.reshape(5 * 4, 6), R(5, 6, 4))
    cases.add("np_ravel_method", lambda x: x.ravel(), R(5, 6, 4))
    cases.add("np_ravel_call", np.ravel, R(5, 6, 4))
    cases.add("np_flatten_method", lambda x: x.flatten(), R(5, 6, 4))
    cases.add("np_transpose", lambda x: x.T, R(8, 8))
    cases.add("np_roll", lambda x: np.roll(x, 2, axis=1), R(4, 5))
    cases.add("np_roll_no_axis", lambda x: np.roll(x, 2), R(4, 5))
    cases.add("np_squeeze_func", np.squeeze, R(5, 1, 4))
    cases.add("np_squeeze_method", lambda x: x.squeeze(), R(5, 1, 4))
    for i, (shape, reps, axis) in enumerate([((5, 3, 4), 2, 1), ((5, 3, 4), 1, 1), ((5, 3), 2, 0),
                                             ((5,), 2, 0), ((5, 1), 1, 0)]):
        cases.add(f"np_repeat_{i}", lambda x, r=reps, a=axis: np.repeat(x, r, axis=a), R(*shape))
    cases.add("np_expand_dims", lambda x: np.expand_dims(x, 2), R(5, 1, 4))
    cases.add("np_diagonal_2d", lambda d: np.diagonal(d, axis1=-1, axis2=-2), R(4, 4))
    cases.add("np_diagonal_3d", lambda d: np.diagonal(d, axis1=-1, axis2=-2), R(3, 4, 4))


def _construction(np, cases):
    cases.add("np_append_list", lambda a, b: np.append(a, b), R(3), C(4.0), wrt=(0, 1))
    cases.add("np_append_2d", lambda a, b: np.append(a, b, axis=0), R(2, 3), R(1, 3), wrt=(0, 1))
    cases.add("np_concatenate_simple", lambda x: np.concatenate((np.ones((5, 6, 4)), x)),
              R(4, 6, 4))
    for axis in (0, 1):
        cases.add(f"np_concatenate_axis_{axis}",
                  lambda x, b, a=axis: np.concatenate((b, x, b), axis=a), R(5, 6, 4), R(5, 6, 4),
                  wrt=(0,))
    cases.add("np_concatenate_unnamed", lambda x, b: np.concatenate((b, x, b), 1), R(5, 6, 4),
              R(5, 6, 4), wrt=(0,))
    cases.add("np_1d_array", lambda x: np.array([x, x * 1.0, x + 2.5]), C(3.0))
    cases.add("np_2d_array", lambda x: np.array([[x, x * 1.0, x + 2.5], [x ** 2, x, x / 2.0]]),
              C(3.0))
    cases.add("np_1d_array_fanout", lambda x: (lambda a: a + a)(np.array([x, x * 1.0, x + 2.5])),
              C(3.0))
    cases.add("np_array_from_scalar", lambda x: np.array(x), C(3.0))
    cases.add("np_array_from_arrays", lambda x: np.array([x, x]), R(3, 2))
    cases.add("np_array_from_arrays_2", lambda x: np.array([[2 * x, x + 1], [x, x]]), R(3, 2))
    for i, (a, b) in enumerate([(C(1.2), C(3.4)), (C(1.2), C(-3.4)), (C(1.2), C(1.2))]):
        cases.add(f"np_linspace_{i}", lambda x, y: np.linspace(x, y, 5), a, b, wrt=(0, 1))


def _misc(np, cases):
    cases.add("np_trace", lambda x: np.trace(x, offset=3), R(10, 11))
    cases.add("np_trace2", lambda x: np.trace(x, offset=-4), R(11, 10))
    cases.add("np_trace_extradims", lambda x: np.trace(x, offset=2), R(5, 6, 4, 3))
    cases.add("np_diag", np.diag, R(10, 10))
    cases.add("np_triu", lambda x: np.triu(x, k=2), R(5, 5))
    cases.add("np_tril", lambda x: np.tril(x, k=2), R(5, 5))
    cases.add("np_clip", lambda x: np.clip(x, a_min=0.1, a_max=1.1), R(5, 5))
    cases.add("np_nan_to_num", lambda x: np.nan_to_num(x / np.array([1.0, 2.0, 3.0, 4.0])),
              R(4))
    cases.add("np_tensordot_by_position",
              lambda x: np.tensordot(x * np.ones((2, 2)), x * np.ones((2, 2)), 2), C(1.5))
    cases.add("np_max_equal_values", lambda x: np.max(np.array([x, x])), C(1.0), hessian=False)
    for v in (1.0, -1.0):
        cases.add(f"np_max_equal_values_2d_{v}",
                  lambda x: np.max(np.array([[x, x], [x, 0.5]]), axis=1), C(v), hessian=False)
        cases.add(f"np_min_3_way_equality_{v}", lambda x: np.min(np.array(
            [[x, x, x], [x, 0.5, 0.5], [0.5, 0.5, 0.5], [x, x, 0.5]]), axis=0), C(v), hessian=False)
    cases.add("np_maximum_equal_values", lambda x: np.maximum(x, x), C(1.0), hessian=False)
    for v in (1.0, -1.0, 2.0):
        cases.add(f"np_maximum_equal_values_2d_{v}", lambda x: np.maximum(
            np.array([x, x, 0.5]), np.array([[x, 0.5, x], [x, x, 0.5]])), C(v), hessian=False)
    cases.add("np_astype", lambda x: np.sum(np.sin(x.astype("float64"))), R(3, 2))
    for i, shape in enumerate([(10,), (10, 10), (6, 6, 6)]):
        cases.add(f"np_gradient_{i}", np.gradient, R(*shape))
    cases.add("np_spd_quadratic", lambda a, v: v @ a @ v, SPD(4), R(4), wrt=(0, 1))
