"""dbt-oml's own dbt runs: the dbt plugin stays inert inside them (no events twice).

A counter, not a flag: the embedded runs of one process may nest or overlap (threads).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _OwnRuns:
    """How many of dbt-oml's own dbt runs are under way in this process, behind a lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0


_runs = _OwnRuns()


@contextmanager
def suppressed() -> Iterator[None]:
    """dbt runs inside this block (dbt-oml's own) leave the plugin inert: no events twice."""
    with _runs.lock:
        _runs.count += 1
    try:
        yield
    finally:
        with _runs.lock:
            _runs.count -= 1


def in_own_run() -> bool:
    """Whether a dbt run of dbt-oml's own is under way in this process."""
    return _runs.count > 0
