"""The plugin's one way to speak: a line on stderr, redacted; it never raises into dbt."""

from __future__ import annotations

import sys


def warn(message: str) -> None:
    """One line on stderr: the plugin never raises into dbt."""
    from dbt_oml.redaction import redact

    sys.stderr.write(redact(f"dbt-oml plugin: {message}") + "\n")
