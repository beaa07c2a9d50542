"""pfor, vectorized_map and vmap bodies that index numpy arrays with the loop index
(`pforjac/index_conversion.py`), against the Python loop's results."""
import numpy as np
import pytest

import pforjac as pj

RNG = np.random.default_rng(5)
X = RNG.standard_normal((5, 6))
IDX = np.array([3, 1, 4, 0, 2])
LIST = [0.5, -1.0, 2.0, 3.5, 4.0]


def _loop(body, n):
    return np.stack([np.asarray(body(i)) for i in range(n)])


CASES = {
    "X[i]": lambda i: X[i] * 2.0,
    "X[i, j]": lambda i: X[i, 3],
    "X[:, i]": lambda i: X[:, i],
    "X[i, 1:]": lambda i: X[i, 1:],
    "X[idx[i]]": lambda i: X[IDX[i]],
    "X[i, idx[i]]": lambda i: X[i, IDX[i]],
    "X[..., i]": lambda i: X[..., i],
    "X[i, None]": lambda i: X[i, None],
    "X[-1 - i]": lambda i: X[-1 - i],
    "X[i, ::2]": lambda i: X[i, ::2],
    "X[[i, 0]]": lambda i: X[[i, 0]],
    "list[i]": lambda i: LIST[i] + X[i, 0],
}


@pytest.mark.parametrize("form", CASES)
def test_pfor_indexes_numpy_arrays_with_the_loop_index(form):
    got = pj.pfor(CASES[form], 5)
    np.testing.assert_array_equal(np.asarray(got), _loop(CASES[form], 5))


def test_a_def_body_with_closures_defaults_and_a_nested_function():
    scale = np.array([1.0, 2.0, 3.0, 4.0, 5.0])

    def body(i, offset=1.5):
        def row(k):
            return X[k, :3]
        return row(i) * scale[i] + offset + X[:, i].sum()
    got = pj.pfor(body, 5)
    np.testing.assert_allclose(np.asarray(got), _loop(body, 5), rtol=1e-14)


def test_two_lambdas_on_one_line_are_told_apart():
    f, g = (lambda i: X[i]), (lambda j: X[j] * 10.0)
    np.testing.assert_array_equal(np.asarray(pj.pfor(g, 5)), X * 10.0)
    np.testing.assert_array_equal(np.asarray(pj.pfor(f, 5)), X)


def test_assignments_into_subscripts_are_left_alone():
    def body(i):
        mask = np.zeros(6)
        mask[2:4] = 1.0
        return X[i] * mask
    np.testing.assert_array_equal(np.asarray(pj.pfor(body, 5)), _loop(body, 5))


def test_vmap_and_vectorized_map_over_indices():
    w = np.linspace(-1.0, 1.0, 6)
    got = pj.vmap(lambda i, v: X[i] @ v, in_axes=(0, None))(np.arange(5), w)
    np.testing.assert_allclose(got, X @ w, rtol=1e-14)
    cols = pj.vectorized_map(lambda j: X[:, j] * 2.0, np.arange(6))
    np.testing.assert_array_equal(np.asarray(cols), (X * 2.0).T)


def test_derivatives_through_numpy_rows():
    """d/dw sum_i tanh(X[i] . w): X^T (1 - tanh^2(X w)), against the closed form and
    float64 central differences."""
    def loss(w):
        return pj.pfor(lambda i: pj.tanh(X[i] @ w), 5).sum()
    w = np.linspace(-0.5, 0.5, 6)
    grad = pj.grad(loss)(w)
    np.testing.assert_allclose(grad, X.T @ (1 - np.tanh(X @ w) ** 2), rtol=1e-12)
    eps, e = 1e-6, np.eye(6)
    fd = [(loss(w + eps * e[k]) - loss(w - eps * e[k])) / (2 * eps) for k in range(6)]
    np.testing.assert_allclose(grad, np.asarray(fd, dtype=float), rtol=1e-7)


def test_a_compiled_function_of_such_a_pfor():
    f = pj.function(lambda w: pj.pfor(lambda i: X[IDX[i]] * w, 5))
    w = np.arange(6.0)
    np.testing.assert_array_equal(f(w), X[IDX] * w)


def test_a_body_without_source_keeps_the_error_and_says_why():
    body = eval("lambda i: X[i] * 2.0", {"X": X})
    with pytest.raises(TypeError, match=r"pj\.constant\(X\)\[i\]") as info:
        pj.pfor(body, 5)
    assert any("cannot read" in note for note in info.value.__notes__)


def test_other_failures_are_not_retried():
    calls = []

    def body(i):
        calls.append(i)
        return X[0] * float(i)
    with pytest.raises(TypeError, match="float"):
        pj.pfor(body, 5)
    assert len(calls) == 1


def test_a_converted_body_that_still_fails_says_it_was_converted():
    with pytest.raises(TypeError, match="slice bound") as info:
        pj.pfor(lambda i: X[i:i + 2], 3)
    assert any("converted" in note for note in info.value.__notes__)


class _Rows:
    def __init__(self, data):
        self.data = data

    def row(self, i, scale):
        return self.data[i] * scale


def test_bound_methods_and_partials_are_converted_as_their_function():
    import functools
    rows = _Rows(X)
    np.testing.assert_array_equal(np.asarray(pj.pfor(functools.partial(rows.row, scale=3.0), 5)),
                                  X * 3.0)
    np.testing.assert_array_equal(np.asarray(pj.vmap(rows.row, in_axes=(0, None))(np.arange(5), 2.0)),
                                  X * 2.0)


def test_a_body_whose_file_changed_since_it_was_loaded_is_not_converted(tmp_path, monkeypatch):
    import importlib
    import sys
    source = "import numpy as np\nX = np.arange(6.0).reshape(3, 2)\n\n\ndef body(i):\n{}\n"
    (tmp_path / "perex_body_module.py").write_text(source.format("    return X[i] * 2.0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("perex_body_module")
    try:
        (tmp_path / "perex_body_module.py").write_text(source.format("    y = X[i] * 3.0\n    return y"))
        with pytest.raises(TypeError, match=r"pj\.constant\(X\)\[i\]"):
            pj.pfor(module.body, 3)                  # the file no longer holds the code that runs
    finally:
        sys.modules.pop("perex_body_module", None)


def test_per_example_gradients_by_pfor_over_numpy_rows():
    """The idiom the error used to stop: pfor(lambda i: grad(loss)(params, X[i], Y[i]), n),
    a dict of parameters, against the Python loop of grad calls."""
    params = {"w": RNG.standard_normal((6, 2)), "b": RNG.standard_normal(2)}
    Y = RNG.standard_normal((5, 2))

    def loss(p, x, y):
        return pj.sum((pj.tanh(x @ p["w"] + p["b"]) - y) ** 2)
    got = pj.pfor(lambda i: pj.grad(loss)(params, X[i], Y[i]), 5)
    want = [pj.grad(loss)(params, X[i], Y[i]) for i in range(5)]
    for k in params:
        np.testing.assert_allclose(np.asarray(got[k]), np.stack([g[k] for g in want]), rtol=1e-13)
