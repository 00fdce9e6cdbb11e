"""OpenMetadata entity names and fully qualified names (FQNs).

Pure. OM joins names with `.` and wraps a name that contains `.` in double quotes; a name with
`"` inside, one containing `::`, an empty one or one over 256 characters is rejected with 400.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dbt_oml.errors import ConfigError

MAX_NAME: Final = 256
#: The parts of a table's name in a dataset (database.schema.table).
TABLE_NAME_PARTS: Final = 3
#: How many names a log line lists before `, ...`.
SAMPLE_SIZE: Final = 3


def check_name(name: str, *, kind: str) -> str:
    """The name, or ConfigError saying why OpenMetadata would reject it.

    >>> check_name("RevenueByCountry", kind="table")
    'RevenueByCountry'
    """
    reason = None
    if not name:
        reason = "is empty"
    elif len(name) > MAX_NAME:
        reason = f"is {len(name)} characters long; OpenMetadata allows {MAX_NAME}"
    elif "::" in name:
        reason = "contains '::', which OpenMetadata rejects"
    elif '"' in name:
        reason = "contains '\"', which OpenMetadata rejects"
    if reason is not None:
        raise ConfigError(
            key=f"{kind} name",
            source=name[:80],
            reason=reason,
            hint="rename it, or map it with an alias in dbt",
        )
    return name


def quote(name: str) -> str:
    """One FQN part: wrapped in double quotes when it contains a dot.

    >>> quote("orders"), quote("my.table")
    ('orders', '"my.table"')
    """
    return f'"{name}"' if "." in name else name


def fqn(*names: str) -> str:
    """A fully qualified name from its parts.

    >>> fqn("duckdb_pod", "warehouse", "core", "v1.orders")
    'duckdb_pod.warehouse.core."v1.orders"'
    """
    return ".".join(quote(n) for n in names)


def sample(names: Iterable[str], *, limit: int = SAMPLE_SIZE) -> str:
    """The first `limit` names, comma-joined, with `, ...` when there are more (for a log line).

    >>> sample(["a", "b", "c", "d"]), sample(["a"])
    ('a, b, c, ...', 'a')
    """
    listed = list(names)
    return ", ".join(listed[:limit]) + (", ..." if len(listed) > limit else "")
