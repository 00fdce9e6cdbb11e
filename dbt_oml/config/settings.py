"""The Settings dataclass: everything dbt-oml itself can be told, parsed and frozen."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from dbt_oml.config.openlineage import OpenLineageConfig
from dbt_oml.runs import JobNaming, Orchestrator

#: The config file looked for in the working directory when none is named.
DEFAULT_CONFIG_FILE: Final = "dbt-oml.yml"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything dbt-oml itself can be told. See the README's configuration reference."""

    namespaces: Mapping[str, str] = field(default_factory=dict)
    """Namespace per catalog (dbt database / attach alias), overriding the derived one."""
    duckdb_namespace: str | None = None
    """Namespace for DuckDB files without an override; may use {alias} and {stem}."""
    docs_generate: bool = True
    """Run `dbt docs generate` after building, for catalog.json (real columns and types)."""
    fail_on_emit_error: bool = False
    """Exit 4 when dbt succeeded but events could not be delivered."""
    job_naming: JobNaming = JobNaming.DBT_OL
    """Node job names: dbt-ol's (histories continue) or unique_id (stable)."""
    job_namespace: str = "dbt"
    """Namespace of the jobs (OPENLINEAGE_NAMESPACE, as for dbt-ol)."""
    parent_job_name: str | None = None
    extended_job_name: bool = False
    """dbt-ol's OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME: dbt-run-<project>-<profile>-<selection>."""
    """Name of the invocation's job; default dbt-run-<project> (as for dbt-ol)."""
    dry_run: bool = False
    """Print the events as one JSON document on stdout and send nothing."""
    column_lineage: bool = True
    """Derive column lineage from the compiled SQL (sqlglot)."""
    allow_empty_column_lineage: bool = False
    """Send even when no event carries column lineage (OpenMetadata would lose what it has)."""
    explorer: bool = False
    """After a build, write the column-lineage explorer page next to the events."""
    outbox_dir: Path | None = None
    """Where undelivered events are kept for `dbt-oml replay`; default <target>/dbt_oml/outbox."""
    outbox_url: str | None = None
    """`outbox_dir` given as a durable store's URL (s3://bucket/prefix, gs://...): events are
    kept in the local outbox first, then uploaded there whole; `dbt-oml flush` sends them from
    any machine."""
    events_file: Path | None = None
    """File for the embedded default transport; default <target>/openlineage/events.jsonl."""
    dbt_usage_stats: bool = False
    """Let dbt send its anonymous usage statistics (off: dbt-oml runs dbt as DO_NOT_TRACK)."""
    transport: Mapping[str, Any] | None = field(default=None, repr=False)
    """An openlineage-python transport config; None = the client's own configuration."""
    relay: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """`dbt-oml relay`: jetstream, openmetadata, durable, batch, dead_letter_subject, ack_wait,
    fetch_timeout; every value checked when read."""
    orchestrator: Orchestrator | None = None
    """The orchestrator run that started dbt (OPENLINEAGE_CONTEXT, _PARENT_ID, _ROOT_PARENT_ID)."""
    om_transport: Mapping[str, Any] | None = field(default=None, repr=False)
    """The openmetadata transport the seed script's OM_* variables describe, if any."""
    openlineage: OpenLineageConfig = field(default_factory=OpenLineageConfig, repr=False)
    """openlineage-python's own configuration (file and variables), read once at load."""
    oml_log_level: str = "INFO"
    """Level of dbt-oml's own log lines on stderr."""
    quiet: bool = False
    """No progress after dbt's `Done.` and no INFO lines: warnings, errors and the summary."""
    config_file: Path | None = None
    """The config file that was read, if any."""
    sources: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Where each setting that is not a default was read: the config file, the variable or the
    flag (`transport` from OM_HOST: "OM_HOST"), for messages that name the place to fix."""
    secrets: tuple[str, ...] = field(default=(), repr=False)
    """Secret values seen while reading (passwords, tokens), for the redactor to mask."""

    @property
    def openlineage_configured(self) -> bool:
        """Whether openlineage-python has a configuration of its own (file or environment)."""
        return self.openlineage.configured
