"""The plugin's one way to speak: a line on stderr, redacted; it never raises into dbt."""

from __future__ import annotations

import sys
from collections.abc import Callable


def warn(message: str, redact: Callable[[str], str] | None = None) -> None:
    """One line on stderr: the plugin never raises into dbt. `redact`: the session's redactor
    once there is one (before, the shapes of secrets are masked)."""
    from dbt_oml.redaction import mask

    sys.stderr.write((redact or mask)(f"dbt-oml plugin: {message}") + "\n")
