"""The Settings dataclass: everything dbt-oml itself can be told, parsed and frozen."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from dbt_oml.config.openlineage import OpenLineageConfig
from dbt_oml.runs import JobNaming, Orchestrator

#: The config file looked for in the working directory when none is named.
DEFAULT_CONFIG_FILE: Final = "dbt-oml.yml"


@dataclass(frozen=True, slots=True, kw_only=True)
class DbtSection:
    """How dbt-oml runs dbt."""

    docs_generate: bool = True
    """Run `dbt docs generate` after building, for catalog.json (real columns and types)."""
    dbt_usage_stats: bool = False
    """Let dbt send its anonymous usage statistics (off: dbt-oml runs dbt as DO_NOT_TRACK)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NamespaceSection:
    """The dataset namespaces of the catalogs."""

    namespaces: Mapping[str, str] = field(default_factory=dict)
    """Namespace per catalog (dbt database / attach alias), overriding the derived one."""
    duckdb_namespace: str | None = None
    """Namespace for DuckDB files without an override; may use {alias} and {stem}."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LineageSection:
    """Column lineage, and what guards it."""

    column_lineage: bool = True
    """Derive column lineage from the compiled SQL (sqlglot)."""
    allow_empty_column_lineage: bool = False
    """Send even when no event carries column lineage (OpenMetadata would lose what it has)."""
    explorer: bool = False
    """After a build, write the column-lineage explorer page next to the events."""
    during_run: bool = False
    """`lineage_during_run`: a build's models analysed as dbt finishes them (pipeline.running)
    instead of after dbt; the workers start while dbt runs either way."""
    shared_cache: str | None = None
    """`lineage_cache`: a folder, an fsspec URL or nats://host:port/BUCKET that every pod shares
    (dbt_oml.stores); the cache in target/ stays the first place looked."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EmitSection:
    """The events as they are built, and what a failed delivery does to the exit code."""

    job_naming: JobNaming = JobNaming.DBT_OL
    """Node job names: dbt-ol's (histories continue) or unique_id (stable)."""
    job_namespace: str = "dbt"
    """Namespace of the jobs (OPENLINEAGE_NAMESPACE, as for dbt-ol)."""
    parent_job_name: str | None = None
    """Name of the invocation's job; default dbt-run-<project> (as for dbt-ol)."""
    extended_job_name: bool = False
    """dbt-ol's OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME: dbt-run-<project>-<profile>-<selection>."""
    orchestrator: Orchestrator | None = None
    """The orchestrator run that started dbt (OPENLINEAGE_CONTEXT, _PARENT_ID, _ROOT_PARENT_ID)."""
    dry_run: bool = False
    """Print the events as one JSON document on stdout and send nothing."""
    fail_on_emit_error: bool = False
    """Exit 4 when dbt succeeded but events could not be delivered."""
    verify: bool = False
    """After a delivery to OpenMetadata, read back what the events should have made there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TransportSection:
    """Where events go, and where what could not be delivered is kept."""

    config: Mapping[str, Any] | None = field(default=None, repr=False)
    """An openlineage-python transport config (`transport:`); None = the client's own."""
    om: Mapping[str, Any] | None = field(default=None, repr=False)
    """The openmetadata transport the OM_* variables describe, if any."""
    openlineage: OpenLineageConfig = field(default_factory=OpenLineageConfig, repr=False)
    """openlineage-python's own configuration (file and variables), read once at load."""
    events_file: Path | None = None
    """File for the embedded default transport; default <target>/openlineage/events.jsonl."""
    outbox_dir: Path | None = None
    """Where undelivered events are kept for `dbt-oml replay`; default <target>/dbt_oml/outbox."""
    outbox_url: str | None = None
    """`outbox_dir` given as a durable store's URL (s3://bucket/prefix, gs://...): events are
    kept in the local outbox first, then uploaded there whole; `dbt-oml flush` sends them from
    any machine."""

    @property
    def openlineage_configured(self) -> bool:
        """Whether openlineage-python has a configuration of its own (file or environment)."""
        return self.openlineage.configured


#: Each flat setting key (flag --key, DBT_OML_KEY, `key:` in dbt-oml.yml) -> (section, field).
SECTION_OF: Final[Mapping[str, tuple[str, str]]] = {
    "docs_generate": ("dbt", "docs_generate"),
    "dbt_usage_stats": ("dbt", "dbt_usage_stats"),
    "namespaces": ("namespace", "namespaces"),
    "duckdb_namespace": ("namespace", "duckdb_namespace"),
    "column_lineage": ("lineage", "column_lineage"),
    "allow_empty_column_lineage": ("lineage", "allow_empty_column_lineage"),
    "explorer": ("lineage", "explorer"),
    "lineage_cache": ("lineage", "shared_cache"),
    "lineage_during_run": ("lineage", "during_run"),
    "job_naming": ("emit", "job_naming"),
    "job_namespace": ("emit", "job_namespace"),
    "parent_job_name": ("emit", "parent_job_name"),
    "extended_job_name": ("emit", "extended_job_name"),
    "dry_run": ("emit", "dry_run"),
    "fail_on_emit_error": ("emit", "fail_on_emit_error"),
    "verify": ("emit", "verify"),
    "transport": ("transport", "config"),
    "events_file": ("transport", "events_file"),
    "outbox_dir": ("transport", "outbox_dir"),
    "outbox_url": ("transport", "outbox_url"),
}
_SECTIONS: Final = {
    "dbt": DbtSection,
    "namespace": NamespaceSection,
    "lineage": LineageSection,
    "emit": EmitSection,
    "transport": TransportSection,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything dbt-oml itself can be told, in sections. See docs/configuration.md."""

    dbt: DbtSection = field(default_factory=DbtSection)
    namespace: NamespaceSection = field(default_factory=NamespaceSection)
    lineage: LineageSection = field(default_factory=LineageSection)
    emit: EmitSection = field(default_factory=EmitSection)
    transport: TransportSection = field(default_factory=TransportSection)
    relay: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """`dbt-oml relay`: jetstream, openmetadata, durable, batch, dead_letter_subject, ack_wait,
    fetch_timeout; every value checked when read."""
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


def sectioned(values: Mapping[str, Any], **sections: Mapping[str, Any]) -> dict[str, Any]:
    """Settings' keyword arguments from flat setting values (SECTION_OF) and extra section
    fields (`emit={"orchestrator": ...}`); keys of no section pass through.

    >>> sectioned({"dry_run": True, "quiet": True})["emit"].dry_run
    True
    """
    grouped: dict[str, dict[str, Any]] = {
        name: dict(sections.get(name) or {}) for name in _SECTIONS
    }
    rest: dict[str, Any] = {}
    for key, value in values.items():
        if key in SECTION_OF:
            section, name = SECTION_OF[key]
            grouped[section][name] = value
        else:
            rest[key] = value
    return {**rest, **{name: _SECTIONS[name](**grouped[name]) for name in _SECTIONS}}


def changed(settings: Settings, **values: Any) -> Settings:
    """`settings` with flat setting keys (`dry_run=True`, `transport={...}`) set in their
    sections, and top-level fields (`quiet=True`) as they are."""
    grouped: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, value in values.items():
        if key in SECTION_OF:
            section, name = SECTION_OF[key]
            grouped.setdefault(section, {})[name] = value
        else:
            top[key] = value
    sections = {s: replace(getattr(settings, s), **v) for s, v in grouped.items()}
    return replace(settings, **sections, **top)
