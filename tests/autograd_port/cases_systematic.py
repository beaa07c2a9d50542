"""autograd's tests/test_systematic.py: statistics, unary and binary ufuncs, and the
array functions it checks by combination (real dtypes only; its complex inputs are left out)."""
from __future__ import annotations

import operator as op

from .spec import C, R, U, binary_inputs, unary_inputs

UNARY = [  # name, limits, whether a second-order check makes sense (no kink inside)
    ("sin", None), ("abs", (0.1, 4.0)), ("absolute", (0.1, 4.0)), ("arccosh", (1.1, 4.0)),
    ("arcsinh", (-0.9, 0.9)), ("arctanh", (-0.9, 0.9)), ("ceil", (-1.5, 1.5)), ("cos", None),
    ("cosh", None), ("deg2rad", None), ("degrees", None), ("exp", None), ("exp2", None),
    ("expm1", None), ("fabs", None), ("floor", (-1.5, 1.5)), ("log", (0.2, 2.0)),
    ("log10", (0.2, 2.0)), ("log1p", (0.2, 2.0)), ("log2", (0.2, 2.0)), ("rad2deg", None),
    ("radians", None), ("sign", None), ("sinh", None), ("sqrt", (1.0, 3.0)), ("square", None),
    ("tan", (-1.1, 1.1)), ("tanh", None), ("real", None), ("real_if_close", None),
    ("imag", None), ("conj", None), ("conjugate", None), ("arcsin", (-0.9, 0.9)),
    ("arccos", (-0.9, 0.9)), ("arctan", None), ("negative", None), ("reciprocal", (0.5, 2.0)),
    ("cbrt", (0.2, 2.0)), ("sinc", (0.1, 2.0)),
]

BINARY = [  # name, limits of A, limits of B, whether A and B may be the same values
    ("add", None, None, True), ("subtract", None, None, True), ("multiply", None, None, True),
    ("logaddexp", None, None, True), ("logaddexp2", None, None, True),
    ("remainder", (-0.9, 0.9), (0.7, 1.9), False), ("true_divide", None, (0.8, 1.2), True),
    ("mod", None, (0.8, 2.1), False), ("divide", None, (-2.0, -0.3), True),
    ("power", (0.5, 2.0), None, True), ("arctan2", None, (0.5, 2.0), True),
    ("hypot", None, None, True), ("fmod", (0.1, 1.9), (0.7, 1.9), False),
]


def build(np, sp, la, cases):
    _statistics(np, cases)
    for name, lims in UNARY:
        fn = getattr(np, name)
        scale = (lambda f: (lambda x: f(x) / 50.0)) if name in ("degrees", "rad2deg") else None
        cases.combo(f"sys_{name}", scale(fn) if scale else fn, (0,),
                    unary_inputs(*(lims or (-2.0, 2.0))))
    for name, la_, lb, same in BINARY:
        a, b = binary_inputs(*(la_ or (-2.0, 2.0))), binary_inputs(*(lb or (-2.0, 2.0)))
        if not same:                            # distinct draws: no point where A == B
            b = [x + 0.05 for x in b]
        cases.combo(f"sys_{name}", getattr(np, name), (0, 1), a, b)
    for name, f in (("op_mul", op.mul), ("op_add", op.add), ("op_sub", op.sub)):
        cases.combo(f"sys_{name}", f, (0, 1), binary_inputs(), binary_inputs())
    cases.combo("sys_op_mod", op.mod, (0, 1), binary_inputs(), binary_inputs(0.3, 2.0))
    _shapes(np, cases)
    _products(np, cases)
    _einsums(np, cases)
    _structure(np, cases)
    _splits_and_stacks(np, cases)


def _statistics(np, cases):
    for name in ("max", "mean", "min", "sum", "prod", "var", "std"):
        fn = getattr(np, name)
        cases.combo(f"stat_{name}_a", fn, (0,), [C(3.5), R()])
        cases.combo(f"stat_{name}_b", fn, (0,), [R(3), R(2, 3), R(1, 3)], axis=[None, 0],
                    keepdims=[True, False])
        cases.combo(f"stat_{name}_c", fn, (0,), [R(2, 3), R(1, 3)], axis=[None, 0, 1],
                    keepdims=[True, False])


def _shapes(np, cases):
    cases.combo("sys_transpose", np.transpose, (0,), [R(2, 3, 4)],
                axes=[None, [0, 1, 2], [0, 2, 1], [2, 0, 1], [2, 1, 0], [1, 0, 2], [1, 2, 0]])
    cases.combo("sys_moveaxis", np.moveaxis, (0,), [R(2, 3, 4)], source=[0, 1, 2],
                destination=[0, 1, 2])
    cases.combo("sys_repeat", np.repeat, (0,), [R(2, 3, 4), R(3, 1)], repeats=[0, 1, 2],
                axis=[None, 0, 1])
    cases.combo("sys_diff_a", np.diff, (0,), [R(5, 5), R(5, 5, 5)], n=[1, 2], axis=[0, 1])
    cases.combo("sys_diff_b", np.diff, (0,), [R(1), R(1, 1)], axis=[0])
    cases.combo("sys_diff_c", np.diff, (0,), [R(1, 1), R(3, 1)], axis=[1])
    cases.combo("sys_gradient_a", np.gradient, (0,), [R(5, 5), R(5, 5, 5)], axis=[None, 0, 1, -1])
    cases.combo("sys_gradient_b", np.gradient, (0,), [R(5, 5, 5)], axis=[(0, 1), (0, -1)])
    cases.combo("sys_tile_a", np.tile, (0,), [R(2, 1, 3, 1)], reps=[(1, 4, 1, 2)])
    cases.combo("sys_tile_b", np.tile, (0,), [R(1, 2)], reps=[(1, 2), (2, 3), (3, 2, 1)])
    cases.combo("sys_tile_c", np.tile, (0,), [R(1)], reps=[(2,), 2])
    cases.combo("sys_swapaxes", np.swapaxes, (0,), [R(3, 4, 5)], axis1=[0, 1, 2], axis2=[0, 1, 2])
    cases.combo("sys_rollaxis", np.rollaxis, (0,), [R(2, 3, 4)], axis=[0, 1, 2], start=[0, 1, 2])
    cases.combo("sys_sort", np.sort, (0,), [R(1), R(7)])
    cases.combo("sys_partition", np.partition, (0,), [R(7), R(14)], kth=[0, 3, 6])
    shapes = [C(1.2), R(1), R(7), R(1, 4), R(2, 4), R(2, 4, 5)]
    cases.combo("sys_atleast_1d", np.atleast_1d, (0,), shapes)
    cases.combo("sys_atleast_2d", np.atleast_2d, (0,), shapes)
    cases.combo("sys_atleast_3d", np.atleast_3d, (0,), shapes + [R(2, 4, 3, 5)])
    cases.combo("sys_pad", np.pad, (0,), [R(2, 2)],
                [0, 3, (3,), (3, 2), ((3, 2),), ((1, 2), (3, 4)), ((0, 0), (0, 0))], ["constant"])


def _products(np, cases):
    cases.combo("sys_kron", np.kron, (0, 1), [R(5, 5), R(4, 4), R(5), R(5, 1), R(1, 5), R()],
                [R(3, 3), R(2, 2), R(3), R(1, 3), R(3, 1), R()])
    cases.combo("sys_inner", np.inner, (0, 1), [C(1.5), R(3), R(2, 3)], [C(0.3), R(3), R(4, 3)])
    cases.combo("sys_dot", np.dot, (0, 1), [C(1.5), R(3), R(2, 3), R(2, 2, 3)],
                [C(0.3), R(3), R(3, 4), R(2, 3, 4)])
    cases.combo("sys_outer", np.outer, (0, 1), [R(3)], [R(3)])
    cases.combo("sys_matmul", np.matmul, (0, 1), [R(3), R(2, 3), R(2, 2, 3)],
                [R(3), R(3, 4), R(2, 3, 4)])
    cases.combo("sys_matmul_broadcast", np.matmul, (0, 1), [R(1, 2, 2)], [R(3, 2, 1)])
    td = lambda n, *a, **k: cases.combo(f"sys_tensordot_{n}", np.tensordot, (0, 1), *a, **k)
    td(1, [R(1, 3), R(2, 3, 2)], [R(3), R(3, 1), R(3, 4, 2)], axes=[[(1,), (0,)]])
    td(2, [R(3), R(3, 1), R(3, 4, 2)], [R(1, 3), R(2, 3, 2)], axes=[[(0,), (1,)]])
    td(3, [R(2, 3), R(2, 3, 4)], [R(1, 2, 3), R(2, 2, 3, 4)],
       axes=[[(0, 1), (1, 2)], [(1, 0), (2, 1)]])
    td(4, [R(2, 2), R(4, 2, 2)], [R(2, 2), R(2, 2, 4)], axes=[1, 2])
    td(5, [R(4)], [R()], axes=[0])
    td(6, [R(2, 6)], [R(6, 3)], axes=[[[-1], [0]]])
    td(7, [R(2, 6)], [R(6, 3)], axes=[[-1, 0]])
    td(8, [R(2)], [R(2, 2)], axes=[[0, 1]])
    for name in ("maximum", "fmax", "minimum", "fmin"):
        cases.combo(f"sys_{name}", getattr(np, name), (0, 1), [R(1), R(1, 4), R(3, 4)],
                    [R(1), R(1, 4), R(3, 4)])
    cases.combo("sys_cross", np.cross, (0, 1), [R(3, 3)], [R(3, 3)], axisa=[-1, 0, 1],
                axisb=[-1, 0, 1], axisc=[-1, 0, 1], axis=[None, -1, 0, 1])


def _einsums(np, cases):
    e = lambda n, wrt, *a: cases.combo(f"sys_einsum_{n}", np.einsum, wrt, *a)
    e("transpose", (1,), ["ij->ji"], [R(1, 1), R(4, 4), R(3, 4)])
    e("matmult", (1, 2), ["ij,jk->ik"], [R(2, 3)], [R(3, 4)])
    e("matmult_broadcast", (1, 2), ["...ij,...jk->...ik"], [R(2, 3), R(2, 2, 3)],
      [R(3, 4), R(2, 3, 4)])
    e("covsum", (1, 2), ["ijk,lji->lki"], [R(3, 4, 4)], [R(4, 4, 3)])
    e("ellipses", (1, 2), ["...jk,...lj->...lk", "...,...->..."], [R(4, 4), R(3, 4, 4)],
      [R(4, 4), R(3, 4, 4)])
    e("ellipses_tail", (1, 2), ["jk...,lj...->lk..."], [R(3, 2), R(3, 2, 4)],
      [R(2, 3), R(2, 3, 4)])
    e("ellipses_center", (1, 2), ["j...k,lj...->lk..."], [R(2, 2), R(2, 2, 2)],
      [R(2, 2), R(2, 2, 2)])
    e("three_args", (1, 2), ["ijk,lji,lli->lki"], [R(3, 4, 4)], [R(4, 4, 3)], [R(4, 4, 3)])
    e("naked_sum", (1, 2), ["k,nk->"], [R(5)], [R(10, 5)])
    e("naked_sum2", (1,), ["abcd->bd"], [R(3, 2, 3, 2)])
    e("naked_sum_ellipsis", (1, 2), ["...k,...nk->..."], [R(3, 5)], [R(3, 10, 5)])
    e("no_output_indices", (1, 2), ["ij,k"], [R(3, 4)], [R(3)])
    e("2_transpose", (0,), [R(1, 1), R(4, 4), R(3, 4)], [(0, 1)], [(1, 0)])
    e("2_matmult", (0, 2), [R(2, 3)], [(0, 1)], [R(3, 4)], [(1, 2)], [(0, 2)])
    e("2_covsum", (0, 2), [R(3, 4, 4)], [(0, 1, 2)], [R(4, 4, 3)], [(3, 1, 0)], [(3, 2, 0)])


def _structure(np, cases):
    cases.combo("sys_trace", np.trace, (0,), [R(5, 5), R(4, 5), R(5, 4), R(3, 4, 5)],
                offset=[-1, 0, 1])
    cases.combo("sys_diag", np.diag, (0,), [R(5, 5)], k=[-1, 0, 1])
    cases.combo("sys_diag_flat", np.diag, (0,), [R(5)], k=[-1, 0, 1])
    for name in ("tril", "triu"):
        cases.combo(f"sys_{name}", getattr(np, name), (0,), [R(5, 5)], k=[-1, 0, 1])
        cases.combo(f"sys_{name}_3d", getattr(np, name), (0,), [R(5, 5, 4)], k=[-1, 0, 1])
    masks = [R(3, 4, 5) > 0, R(3, 4, 5) > 0, R(3, 4, 5) > 0]
    cases.combo("sys_select", lambda c, v, default: np.select(c, v, default), (1,), [masks],
                [[R(3, 4, 5), R(3, 4, 5), R(3, 4, 5)]], default=[0.0, 1.1])


def _splits_and_stacks(np, cases):
    for name, arrays in (("vsplit", [(R(4, 8), [4, [1, 2]]), (R(4, 4, 4), [2, [1, 2]])]),
                         ("hsplit", [(R(4, 8), [4, [1, 2]]), (R(4, 4, 4), [2, [1, 2]])]),
                         ("dsplit", [(R(4, 4, 4), [2, [1, 2]])])):
        for i, (a, parts) in enumerate(arrays):
            cases.combo(f"sys_{name}_{i}", getattr(np, name), (0,), [a], parts)
    cases.combo("sys_split_1d", np.split, (0,), [R(1), R(7)], [1], axis=[0])
    cases.combo("sys_split_2d", np.split, (0,), [R(4, 8)], [4, [1, 2]], axis=[0, 1])
    cases.combo("sys_split_3d", np.split, (0,), [R(4, 4, 4)], [2, [1, 2]], axis=[0, 1, 2])
    cases.combo("sys_array_split_1d", np.array_split, (0,), [R(1), R(7)], [1, 3], axis=[0])
    cases.combo("sys_array_split_2d", np.array_split, (0,), [R(7, 7)], [4, [3, 5]], axis=[0, 1])
    cases.combo("sys_array_split_3d", np.array_split, (0,), [R(7, 7, 7)], [4, [3, 5]],
                axis=[0, 1, 2])
    cases.combo("sys_concatenate_list", np.concatenate, (0,), [[R(1), R(3)]], axis=[0])
    cases.combo("sys_concatenate_2d", np.concatenate, (0,), [[R(2, 2), R(2, 2)]], axis=[0, 1])
    cases.combo("sys_concatenate_3d", np.concatenate, (0,), [[R(2, 2, 2), R(2, 2, 2)]],
                axis=[0, 1, 2])
    for name, inputs in (("vstack", [R(2), [R(2), R(2)], R(2, 3), [R(2, 4), R(1, 4)],
                                     R(2, 3, 4), [R(2, 3, 4), R(5, 3, 4)]]),
                         ("hstack", [R(2), [R(2), R(2)], R(3, 2), [R(3, 4), R(3, 5)],
                                     R(2, 3, 4), [R(2, 1, 4), R(2, 5, 4)]]),
                         ("column_stack", [R(2), [R(2), R(2)], R(2, 2), [R(2, 2), R(2, 2)]])):
        fn = getattr(np, name)
        cases.combo(f"sys_{name}", lambda a, fn=fn: fn(a if isinstance(a, list) else [a]), (0,),
                    inputs)
    cases.combo("sys_stack_1d", np.stack, (0,), [[R(2)], [R(2), R(2)]], axis=[0, 1])
