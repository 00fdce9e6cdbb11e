"""sqlglot's own log lines kept out of dbt-oml's output while the engine works.

sqlglot logs a WARNING for what it cannot do ("Cannot traverse scope", "unsupported syntax");
the engine says what it cannot do itself, once per model, with the reason (LineageError).
Pure: a filter on the `sqlglot` logger for the length of a block, removed after it; no handler,
no level changed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class _Drop(logging.Filter):
    """Drops every record (one per block, so nested blocks each remove their own)."""

    def filter(self, record: logging.LogRecord) -> bool:  # noqa: ARG002 - the Filter protocol
        return False


@contextmanager
def sqlglot_quiet() -> Iterator[None]:
    """Drop every record the `sqlglot` logger gets inside the block (restored after it).

    >>> import logging, sqlglot
    >>> with sqlglot_quiet():
    ...     logging.getLogger("sqlglot").warning("never shown")
    >>> logging.getLogger("sqlglot").filters
    []
    """
    log = logging.getLogger("sqlglot")
    quiet = _Drop()
    log.addFilter(quiet)
    try:
        yield
    finally:
        log.removeFilter(quiet)
