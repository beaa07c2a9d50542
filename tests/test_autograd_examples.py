"""autograd's own examples (tests/autograd_upstream: autograd's files with their imports
read as pforjac.autograd, training shortened) print what they print under HIPS autograd
(tests/data/autograd_upstream.json, recorded with autograd from the same files).

Also here: the pieces of autograd's API those examples need, each against an oracle
(central differences, or a value computed by hand)."""
from __future__ import annotations

import contextlib
import io
import json
import pathlib
import re
import runpy
import warnings

import numpy as np
import pytest

import pforjac.autograd.numpy as anp
from pforjac.autograd import grad, make_vjp
from pforjac.autograd.extend import (Box, VSpace, defvjp, defvjp_argnum, notrace_primitive,
                                     primitive)
from pforjac.autograd.scipy.integrate import odeint
from pforjac.autograd.tracer import Node, trace

HERE = pathlib.Path(__file__).parent
FOLDER = HERE / "autograd_upstream"
RECORDED = json.loads((HERE / "data" / "autograd_upstream.json").read_text())
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def run_example(name: str) -> str:
    np.random.seed(0)                     # (as the recording was made)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # (np.seterr-style overflow notes)
        runpy.run_path(str(FOLDER / f"{name}.py"), run_name="__main__")
    return out.getvalue()


def node_ids_renumbered(text: str) -> str:
    ids: dict = {}
    return re.sub(r"node_\d+", lambda m: ids.setdefault(m.group(0), f"node_{len(ids)}"), text)


def assert_prints_alike(ours: str, theirs: str, rtol=1e-7, atol=1e-9) -> None:
    ours, theirs = node_ids_renumbered(ours), node_ids_renumbered(theirs)
    assert NUMBER.sub("#", ours) == NUMBER.sub("#", theirs)
    mine = np.array([float(v) for v in NUMBER.findall(ours)])
    recorded = np.array([float(v) for v in NUMBER.findall(theirs)])
    np.testing.assert_allclose(mine, recorded, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(set(RECORDED) - {"print_trace"}))
def test_example_prints_autograds_values(name):
    assert_prints_alike(run_example(name), RECORDED[name])


def test_print_trace_example():
    """The forward trace is autograd's line for line; around grad, the trace also shows
    pforjac's own backward ops (one more node: grad's fresh view of its input), and
    ends on autograd's gradient."""
    ours, theirs = run_example("print_trace").split("\n\n"), RECORDED["print_trace"].split("\n\n")
    assert ours[0] == theirs[0].replace("divide(D,2)", "divide(D,2.0)")
    assert ours[1].splitlines()[0] == "A = 1.0"
    assert {"sin", "cos", "add", "divide"} <= set(re.findall(r"= (\w+)\(", ours[1]))
    assert float(ours[1].split()[-1]) == float(theirs[1].split()[-1])


def central_difference(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = h
        out[i] = (f(x + e) - f(x - e)) / (2 * h)
    return out


def test_odeint_gradients_match_central_differences():
    def rhs(y, t, A, b):
        return anp.dot(y ** 3, A) + b * anp.sin(t)
    t = np.linspace(0.1, 1.5, 5)
    args = [np.array([1.0, 0.5]), t, np.array([[-0.1, 2.0], [-2.0, -0.1]]), np.array([0.3, -0.2])]
    weights = np.cos(np.arange(10.0)).reshape(5, 2)

    def loss(y0, t, A, b):
        return anp.sum(odeint(rhs, y0, t, (A, b), rtol=1e-10, atol=1e-10) * weights)
    for k in range(4):
        def along(x, k=k):
            return loss(*(args[:k] + [x] + args[k + 1:]))
        np.testing.assert_allclose(grad(loss, k)(*args), central_difference(along, args[k]),
                                   rtol=1e-6, atol=1e-7)


def test_odeint_refuses_second_derivatives():
    def final(k):
        return odeint(lambda y, t, k: -k * y, np.array([1.0]), np.array([0.0, 1.0]), (k,))[-1, 0]
    assert abs(grad(final)(0.5) + np.exp(-0.5)) < 1e-6
    with pytest.raises(NotImplementedError, match="odeint: second derivatives"):
        grad(grad(final))(0.5)


def test_trace_nodes_name_ops_and_parents():
    class Chain(Node):
        def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
            self.value, self.name, self.parents = value, fun.__name__, parents
            self.argnums = parent_argnums

        def initialize_root(self, x):
            self.value, self.name, self.parents = x, "input", []
    root = Chain.new_root(0.5)
    value, node = trace(root, lambda x: anp.exp(anp.sin(x)) * 3.0, 0.5)
    assert value == np.exp(np.sin(0.5)) * 3.0 and node.value == value
    assert node.name == "multiply" and node.argnums == [0]
    assert node.parents[0].name == "exp" and node.parents[0].parents[0].name == "sin"
    assert node.parents[0].parents[0].parents == [root]
    with pytest.warns(UserWarning, match="independent of input"):
        assert trace(Chain.new_root(1.0), lambda x: 2.0, 1.0)[1] is None


class Poly:
    """A polynomial, as a vector of coefficients, in a vector space of its own."""

    def __init__(self, coefs):
        self.coefs = np.asarray(coefs, dtype=float)

    @primitive
    def __call__(self, x):
        return float(np.polyval(self.coefs, x))


class PolyVSpace(VSpace):
    def __init__(self, value):
        self.n = len(value.coefs)

    def zeros(self):
        return Poly(np.zeros(self.n))

    def _add(self, f, g):
        return Poly(f.coefs + g.coefs)

    def _scalar_mul(self, f, a):
        return Poly(f.coefs * a)


class PolyBox(Box, Poly):
    pass


PolyVSpace.register(Poly)
PolyBox.register(Poly)
defvjp(Poly.__call__, lambda ans, f, x: lambda g: Poly(
    g * x ** np.arange(len(f.coefs) - 1, -1, -1.0)))


def test_gradient_with_respect_to_a_custom_vector_space_value():
    """d/dc of sum_i (p_c(x_i) - y_i)^2 = sum_i 2 (p(x_i) - y_i) x_i^powers, by hand."""
    p, xs, ys = Poly([0.5, -1.0, 2.0]), [0.0, 1.0, 2.0], [1.0, 0.0, 3.0]

    def loss(f):
        return sum((f(x) - y) ** 2 for x, y in zip(xs, ys))
    g = grad(loss)(p)
    powers = np.arange(2, -1, -1.0)
    expected = sum(2 * (np.polyval(p.coefs, x) - y) * x ** powers for x, y in zip(xs, ys))
    assert isinstance(g, Poly)
    np.testing.assert_allclose(g.coefs, expected, rtol=1e-12)
    unused = grad(lambda f, x: x * 2.0, 0)(p, 1.0)      # no call on f: its zero
    np.testing.assert_array_equal(unused.coefs, np.zeros(3))


def test_defvjp_argnum_and_notrace_primitive():
    @primitive
    def scaled(x, y):
        return x * y
    defvjp_argnum(scaled, lambda k, ans, args, kwargs: lambda g: g * args[1 - k])
    assert grad(lambda x, y: scaled(x, y) * x, (0, 1))(3.0, 2.0) == (12.0, 9.0)

    @notrace_primitive
    def as_constant(x):
        return np.asarray(x) * 2
    assert grad(lambda x: as_constant(x) * x)(3.0) == 6.0


def test_make_vjp_of_a_tuple_argnum():
    vjp, ans = make_vjp(lambda a, b: a * b, argnum=(0, 1))(2.0, 3.0)
    assert ans == 6.0 and [float(v) for v in vjp(1.0)] == [3.0, 2.0]


def _tool(name: str):
    import importlib.util
    path = HERE.parent / "tools" / "autograd_examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"autograd_examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_comparison_tool_rewrites_imports_and_compares_numbers():
    run_all = _tool("run_all")
    source = "import autograd.numpy as np\nfrom autograd import grad\nimport autograder\n"
    assert run_all.ported(source) == ("import pforjac.autograd.numpy as np\n"
                                      "from pforjac.autograd import grad\nimport autograder\n")
    assert run_all.agree("loss 1.0000000001\nnode_12 -> node_7", "loss 1.0\nnode_3 -> node_9",
                         rtol=1e-6)[0]
    assert not run_all.agree("loss 1.001", "loss 1.0", rtol=1e-6)[0]
    assert not run_all.agree("loss 1.0", "cost 1.0", rtol=1e-6)[0]
    assert run_all.agree("(array(9e-13),)", "(array(-4e-12),)", rtol=1e-6)[0]   # both ~0


def _filtered(kind: int, image: np.ndarray, y: int) -> bytes:
    """Row y of a grey 8-bit image under PNG filter `kind` (what a PNG writer stores)."""
    row, prev = image[y].astype(int), (image[y - 1].astype(int) if y else np.zeros(image.shape[1], int))
    left = np.concatenate([[0], row[:-1]])
    upper_left = np.concatenate([[0], prev[:-1]])
    if kind == 4:
        p = left + prev - upper_left
        pa, pb, pc = abs(p - left), abs(p - prev), abs(p - upper_left)
        guess = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upper_left))
    else:
        guess = [0 * row, left, prev, (left + prev) // 2][kind]
    return bytes(((row - guess) % 256).astype(np.uint8))


def test_the_matplotlib_stand_in_reads_the_pngs_fluidsim_loads(tmp_path, monkeypatch):
    import importlib.util
    import struct
    import sys
    import zlib
    image = np.random.RandomState(0).randint(0, 4, (5, 64)).astype(np.uint8) * 61   # (ties)
    rows = b"".join(bytes([k]) + _filtered(k, image, k) for k in range(5))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", 64, 5, 8, 0, 0, 0, 0)
    (tmp_path / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    folder = HERE.parent / "tools" / "autograd_examples" / "stub" / "matplotlib"
    modules = {}
    for name, file in [("matplotlib", "__init__.py"), ("matplotlib.pyplot", "pyplot.py")]:
        spec = importlib.util.spec_from_file_location(name, folder / file)
        modules[name] = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, name, modules[name])     # (undone after the test)
        spec.loader.exec_module(modules[name])
    read = modules["matplotlib.pyplot"].imread(str(tmp_path / "x.png"))
    np.testing.assert_array_equal(read, image.astype(np.float32) / 255)
