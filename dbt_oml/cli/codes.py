"""dbt-oml's exit codes (README.md, docs/failures.md and every command's --help list them)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """dbt-oml's exit codes. When dbt ran, its own code (0, 1, 2) passes through."""

    SUCCESS = 0
    DBT_FAILURE = 1
    DBT_ERROR = 2
    USAGE = 3
    DELIVERY_FAILED = 4
    BUG = 5
