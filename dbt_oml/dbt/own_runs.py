"""dbt-oml's own dbt runs: the dbt plugin stays inert inside them (no events twice).

A counter, not a flag: the embedded runs of one process may nest or overlap (threads).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_wrapper_runs = 0


@contextmanager
def suppressed() -> Iterator[None]:
    """dbt runs inside this block (dbt-oml's own) leave the plugin inert: no events twice."""
    global _wrapper_runs
    with _lock:
        _wrapper_runs += 1
    try:
        yield
    finally:
        with _lock:
            _wrapper_runs -= 1


def in_own_run() -> bool:
    """Whether a dbt run of dbt-oml's own is under way in this process."""
    return _wrapper_runs > 0
