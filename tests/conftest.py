"""Shared test settings: hypothesis profiles (`--hypothesis-profile=ci|long|dev`)."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=20000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_terminal_summary(terminalreporter):
    """Shows how many examples each property ran (modules export HYPOTHESIS_EXAMPLES)."""
    import sys
    counts = [(name, count) for module in list(sys.modules.values())
              for name, count in getattr(module, "HYPOTHESIS_EXAMPLES", {}).items()]
    if counts:
        terminalreporter.section(f"hypothesis examples (profile {settings.get_current_profile_name()})")
        for name, count in counts:
            terminalreporter.write_line(f"{count:7d}  {name}")
