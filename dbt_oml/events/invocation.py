"""What the event core is given besides the artifacts: invocation, settings, time format.

Pure data types, shared by the event builders (events, dq_events) and the code that fills them
from dbt and the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from dbt_oml.runs import JobNaming, Orchestrator


def format_time(moment: datetime) -> str:
    """UTC with a `Z` and exactly three fractional digits (what OpenMetadata 2.0 parses right).

    >>> from datetime import datetime, timezone, timedelta
    >>> format_time(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc))
    '2026-01-02T03:04:05.678Z'
    >>> format_time(datetime(2026, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2))))
    '2026-01-02T03:04:05.000Z'
    """
    utc = moment.astimezone(timezone.utc) if moment.tzinfo else moment
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


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
    column_lineage_in_output_facets: bool = True
    """Also put a model's columnLineage into its output's `outputFacets`, the only place
    OpenMetadata 1.12 reads it from. Off when the events go to a file or the console only."""
