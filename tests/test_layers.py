"""The package's layers: the eager core never imports the compiled layer, and no module
imports another in a cycle (imports inside functions count too)."""
import importlib.util
import pathlib

_TOOL = pathlib.Path(__file__).resolve().parent.parent / "tools" / "import_graph.py"
_spec = importlib.util.spec_from_file_location("import_graph", _TOOL)
import_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_graph)


def test_the_module_import_graph_has_no_cycle():
    assert import_graph.cycles(import_graph.graph()) == []


def test_the_core_imports_nothing_from_the_compiled_layer():
    assert import_graph.core_importing_compiled(import_graph.graph()) == {}


def test_the_graph_sees_imports_inside_functions():
    g = import_graph.graph()
    assert "pforjac.compiled.compiled_trace" in g["pforjac.compiled.loopcache"]   # a lazy one
    assert "pforjac.ops.broadcasting" in g["pforjac.ops.elementwise"]


def test_no_module_over_500_lines_and_no_function_over_40():
    spec = importlib.util.spec_from_file_location("sizes", _TOOL.parent / "sizes.py")
    sizes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sizes)
    package = _TOOL.parent.parent / "pforjac"
    found = [v for path in sorted(package.rglob("*.py")) for v in sizes.violations(path)]
    assert found == [], "\n".join(found)
