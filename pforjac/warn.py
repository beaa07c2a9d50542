"""Warnings pforjac gives: once per cause, at the user's line, or collected for replay.

`warn_once` is for slow paths (a fallback: once per cause), `warn_wrong_result` for a
result that is not what the user asked for (every call; Python's filters decide how
often it shows), and `deferred_warnings` collects the latter while compiled code is
built, so that the code replays them on every call that runs it.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings

__all__ = ["warn_once", "warn_wrong_result", "warn_at_user_line", "deferred_warnings"]

_warned: set = set()
_warn_lock = threading.Lock()


def warn_once(key, message: str) -> None:
    """A RuntimeWarning per `key` (a slow path: once per cause), shown at the user's line. If
    the warning raises (warnings turned into errors), the cause is not marked as warned: the
    next call raises again instead of passing silently. Not while the loop cache builds
    code (`deferred_warnings`): a fallback makes that code unusable, and the uncached path
    that then runs warns itself."""
    if getattr(_deferred, "messages", None) is not None and _deferred.quiet:
        return
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    try:
        warn_at_user_line(message)
    except BaseException:
        with _warn_lock:
            _warned.discard(key)
        raise


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


_deferred = threading.local()


@contextlib.contextmanager
def deferred_warnings(quiet_fallbacks: bool = True):
    """Collects (instead of showing) this thread's `warn_wrong_result` messages: compiled
    code (the loop cache's, `pforjac.function`'s) is built once and replays them on every
    call that runs it. With `quiet_fallbacks`, fallback warnings (`warn_once`) are not shown
    at all meanwhile (the loop cache's: its code is then unusable, and the uncached path
    that runs instead warns itself)."""
    saved = getattr(_deferred, "messages", None), getattr(_deferred, "quiet", True)
    messages: list[str] = []
    _deferred.messages, _deferred.quiet = messages, quiet_fallbacks
    try:
        yield messages
    finally:
        _deferred.messages, _deferred.quiet = saved


def warn_wrong_result(message: str) -> None:
    """A warning that a result is not what the user asked for (on every call: Python's
    filters decide how often it shows, by default once per line and message)."""
    pending = getattr(_deferred, "messages", None)
    if pending is None:
        warn_at_user_line(message)
    elif message not in pending:
        pending.append(message)


def warn_at_user_line(message: str) -> None:
    """warnings.warn(RuntimeWarning) at the first frame outside pforjac."""
    frame, level = sys._getframe(1), 2          # the caller's frame is stacklevel 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, RuntimeWarning, stacklevel=level)
