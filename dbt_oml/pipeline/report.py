"""What a dbt-oml command did, for the summary and the exit code; and how long work reports
its progress."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dbt_oml.delivery.emitter import DeliveryReport

#: Called with (done, total) during long work; the CLI draws it on a terminal.
Progress = Callable[[int, int], None]


@dataclass(slots=True)
class Report:
    """What a dbt-oml command did, for the summary and the exit code."""

    dbt_return_code: int | None = None
    events_built: int = 0
    delivery: DeliveryReport = field(default_factory=DeliveryReport)
    destination: str = ""
    namespaces: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    dbt_error: str | None = None
    lineage_models: int = 0
    opaque: dict[str, str] = field(default_factory=dict)
    refused: str | None = None
    explorer: Path | None = None
    plan: list[str] | None = None
    """--dry-run with OpenMetadata: what bootstrap would create (None: no plan)."""
    plan_problem: str | None = None
    """--dry-run with OpenMetadata: why there is no plan (OM unreachable, a bad setting)."""
