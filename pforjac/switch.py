"""A thread-local on/off switch, used as `with switch.setting(False): ...`."""
from __future__ import annotations

import contextlib
import threading

__all__ = ["Switch"]


class Switch(threading.local):
    """Each thread starts with `default`; `setting(v)` changes it for a block."""

    def __init__(self, default: bool = True):
        self.enabled = default

    @contextlib.contextmanager
    def setting(self, enabled: bool):
        saved, self.enabled = self.enabled, bool(enabled)
        try:
            yield
        finally:
            self.enabled = saved
