"""Shared test settings: hypothesis profiles (`--hypothesis-profile=ci|long|dev`)."""
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_configure(config):
    """Every jacobian, batch_jacobian and pfor call of the suite that compiled code can run
    (no tape or trace recording it, one chunk) is run both ways and must agree bit for bit:
    the uncached result, which the test then checks, and the compiled code's."""
    from pforjac.compiled import loopcache
    config._pforjac_verifying = loopcache.verifying()
    config._pforjac_verifying.__enter__()


@pytest.fixture(autouse=True)
def _unverified(request):
    """`@pytest.mark.unverified` tests count converter calls or compiles, which the check
    doubles: they run without it."""
    if request.node.get_closest_marker("unverified") is None:
        yield
        return
    from pforjac.compiled import loopcache
    with loopcache.verifying(False):
        yield


def _report() -> dict:
    """This process's counts: results compared both ways, calls left uncached (by reason) and
    the examples each hypothesis property ran (modules export HYPOTHESIS_EXAMPLES)."""
    import sys
    from pforjac.compiled import loopcache
    info = loopcache.verify_info()
    examples = {name: count for module in list(sys.modules.values())
                for name, count in getattr(module, "HYPOTHESIS_EXAMPLES", {}).items()}
    return {"compared": info["compared"], "not_compiled": info["not_compiled"], "examples": examples}


def pytest_sessionfinish(session):
    """Under pytest-xdist (`-n 2`) each worker hands its counts to the controlling process."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["pforjac_report"] = _report()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    reports = node.config.__dict__.setdefault("_pforjac_worker_reports", [])
    reports.append(getattr(node, "workeroutput", {}).get("pforjac_report"))


def _merged_report(config) -> dict:
    workers = [r for r in getattr(config, "_pforjac_worker_reports", []) if r]
    merged = _report()
    for report in workers:
        merged["compared"] += report["compared"]
        for reason, count in report["not_compiled"].items():
            merged["not_compiled"][reason] = merged["not_compiled"].get(reason, 0) + count
        for name, count in report["examples"].items():
            merged["examples"][name] = merged["examples"].get(name, 0) + count
    return merged


def pytest_terminal_summary(terminalreporter):
    """Shows how many results were compared both ways and how many examples each property ran."""
    report = _merged_report(terminalreporter.config)
    terminalreporter.section("compiled vs uncached")
    terminalreporter.write_line(f"{report['compared']:7d}  jacobian/pfor results computed both ways, "
                                f"identical bit for bit")
    alone = report["not_compiled"]
    if alone:
        terminalreporter.write_line(f"{sum(alone.values()):7d}  computed uncached only, by design:")
    for reason, count in sorted(alone.items()):
        terminalreporter.write_line(f"{count:9d}  {_uncached_because(reason)}")
    if report["examples"]:
        terminalreporter.section(f"hypothesis examples (profile {settings.get_current_profile_name()})")
        for name, count in report["examples"].items():
            terminalreporter.write_line(f"{count:7d}  {name}")


def _uncached_because(reason: str) -> str:
    """loopcache's reason for running a call uncached, said as what it is: bodies that fall
    back are never compiled (many tests make converters raise on purpose), and a call that
    raises (the error a test expects) has no result to compare."""
    kind, _, detail = reason.partition(": ")
    detail = detail.replace("per-iteration", "an op without converter ran per iteration")
    return {
        "a converter failed": f"the converter of '{detail}' declined, so the body ran as a while-loop",
        "fell back": f"pfor fell back ({detail})",
        "needs values": f"{detail} reads index values, so it is checked on every call"
        if detail.startswith("the row check") else f"{detail} runs eagerly, in chunks",
        "untraceable": f"the traced call raised {detail} (the uncached call ran alone)",
    }.get(kind, reason)

# scripts that compute fixtures with JAX or autograd (not dependencies of pforjac): not
# imported by pytest's --doctest-modules
collect_ignore_glob = ["data/make_*.py"]
