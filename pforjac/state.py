"""The thread-local context every op is bound in: the active tapes and traces.

Kept apart from core.py so that tensor.py (which core imports) can read it too.
"""
from __future__ import annotations

import threading

__all__ = ["current_state", "trace_level"]


class _State(threading.local):
    def __init__(self):
        self.tapes: list = []    # active GradientTapes, innermost last
        self.traces: list = []   # active Traces, innermost last
        self.origin = None       # the forward op whose vjp rule is running (for diagnostics)
        self.lifting = None      # a pforjac.function trace: Variables are read inside it, at run time


_state = _State()


def current_state() -> _State:
    return _state


def trace_level() -> int:
    return len(_state.traces)
