"""What a dbt-oml command did, for the summary and the exit code; and how long work reports
its progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from dbt_oml.delivery.emitter import DeliveryReport


class Progress(Protocol):
    """Where the work after dbt is: a phase starts (a line, or a live bar on a terminal); a
    counted phase advances. The console draws it (`dbt_oml.console.progress_for`)."""

    def phase(self, label: str) -> None: ...
    def advance(self, done: int, total: int) -> None: ...
    def end(self) -> None: ...


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


def phase(progress: Progress | None, label: str | None) -> None:
    """Start a phase of `progress`, when there is one (--quiet, the plugin: none) and the
    phase is worth a line (`label`)."""
    if progress is not None and label is not None:
        progress.phase(label)
