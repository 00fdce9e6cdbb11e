"""What the event core is given besides the artifacts: invocation, settings, time format.

Pure data types, shared by the event builders (node_events, quality) and the code that fills them
from dbt and the configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from dbt_oml.redaction import mask
from dbt_oml.runs import JobNaming, Orchestrator


@dataclass(frozen=True, slots=True, kw_only=True)
class Invocation:
    """One dbt invocation, as dbt reported it."""

    invocation_id: str
    started_at: datetime
    command: str
    project_name: str
    profile_name: str | None = None
    dbt_version: str = "unknown"
    adapter_type: str = "duckdb"
    project_version: str | None = None
    selected: tuple[str, ...] = ()
    """The run's -s/--select (-m/--models) values, and its --selector."""
    selector: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EventSettings:
    """What shapes the events but does not come from dbt."""

    producer: str
    adapter_version: str
    job_namespace: str = "dbt"
    parent_job_name: str | None = None
    extended_job_name: bool = False
    job_naming: JobNaming = JobNaming.DBT_OL
    cwd: str = "/"
    """The directory relative file paths in SQL are resolved against (dbt's working directory)."""
    project_root: str | None = None
    """The dbt project's directory (where seed files live)."""
    orchestrator: Orchestrator | None = None
    """The orchestrator run that started dbt: the invocation's parent, every run's root."""
    redact: Callable[[str], str] = field(default=mask, compare=False, repr=False)
    """Masks the error messages events carry: the run's Redactor (its known secrets too)."""
