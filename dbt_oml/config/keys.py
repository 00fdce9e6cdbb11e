"""The one table of dbt-oml's settings: each key's parser, its help, and how it is given.

A key `k` is `k:` in dbt-oml.yml, DBT_OML_K in the environment and --k on the command line
(the loader reads all three, the CLI builds its options from this table). A key with a
`metavar` takes a value; one without is a flag (`negatable`: --k/--no-k).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from dbt_oml.config.outbox_url import parse_cache_url, parse_outbox
from dbt_oml.config.relay_section import parse_relay
from dbt_oml.config.values import (
    Parser,
    parse_bool,
    parse_duckdb_namespace,
    parse_level,
    parse_mapping,
    parse_naming,
    parse_path,
    parse_str,
    parse_transport,
)


@dataclass(frozen=True, slots=True)
class Key:
    """One setting: how it parses, what its --help says, and its command-line form."""

    name: str
    parse: Parser
    help: str
    metavar: str | None = None
    """What the value looks like (None: a flag)."""
    negatable: bool = False
    """A flag with a --no- form (its default is on, or dbt-ol has one)."""
    aliases: tuple[str, ...] = ()
    """More flags for it (dbt-ol's spelling)."""
    repeatable: bool = False
    file_only: bool = False
    """Structured: only `key:` in dbt-oml.yml (no variable, no flag)."""


TABLE: Final[tuple[Key, ...]] = (
    Key("dry_run", parse_bool, "Print the events as one JSON document on stdout; send nothing."),
    Key(
        "column_lineage",
        parse_bool,
        "Derive column lineage from the compiled SQL (default: on).",
        negatable=True,
    ),
    Key(
        "allow_empty_column_lineage",
        parse_bool,
        "Send even when no event carries column lineage (else exit 4).",
    ),
    Key(
        "lineage_cache",
        parse_cache_url,
        "A lineage cache every pod shares, so a new pod is warm: a folder, an object store "
        "(s3://bucket/prefix) or a JetStream key-value bucket (nats://host:4222/BUCKET).",
        metavar="DIR|URL",
    ),
    Key("explorer", parse_bool, "After a build, write the column-lineage explorer page."),
    Key(
        "lineage_during_run",
        parse_bool,
        "Analyse each model as dbt finishes it, while dbt runs the rest (a build on DuckDB; "
        "default: after dbt, which is faster where dbt keeps the cores busy).",
    ),
    Key(
        "docs_generate",
        parse_bool,
        "Write catalog.json after the build, as `dbt docs generate` does (default: on).",
        negatable=True,
    ),
    Key(
        "fail_on_emit_error",
        parse_bool,
        "Exit 4 when dbt succeeded but events were not delivered.",
    ),
    Key(
        "verify",
        parse_bool,
        "After delivering to OpenMetadata, read back what the events should have made there "
        "(the summary says what is missing).",
    ),
    Key(
        "namespaces",
        parse_mapping,
        "Namespace of a catalog, repeatable (alias --namespace).",
        metavar="CATALOG=NS",
        aliases=("--namespace",),
        repeatable=True,
    ),
    Key(
        "duckdb_namespace",
        parse_duckdb_namespace,
        "Namespace of DuckDB files without an override ({alias}, {stem}).",
        metavar="NS",
    ),
    Key(
        "job_naming",
        parse_naming,
        "Node job names: dbt-ol's (default) or stable unique_ids.",
        metavar="dbt-ol|unique_id",
    ),
    Key(
        "job_namespace",
        parse_str,
        'Job namespace (default: OPENLINEAGE_NAMESPACE or "dbt").',
        metavar="NS",
    ),
    Key(
        "parent_job_name",
        parse_str,
        "The invocation's job name (default dbt-run-<project>; dbt-ol's flag works).",
        metavar="NAME",
        aliases=("--openlineage-dbt-job-name",),
    ),
    Key(
        "extended_job_name",
        parse_bool,
        "The invocation's job as dbt-run-<project>-<profile>-<selection> (dbt-ol's "
        "OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME).",
        negatable=True,
    ),
    Key(
        "outbox_dir",
        parse_outbox,
        "Where undelivered events are kept (default <target>/dbt_oml/outbox); a URL "
        "(s3://bucket/prefix, gs://...) keeps them there, beyond this machine's disk.",
        metavar="DIR|URL",
    ),
    Key(
        "events_file",
        parse_path,
        "File of the default transport (default <target>/openlineage/events.jsonl).",
        metavar="FILE",
    ),
    Key(
        "dbt_usage_stats",
        parse_bool,
        "Let dbt send its anonymous usage statistics (default: off).",
        negatable=True,
    ),
    Key(
        "oml_log_level",
        parse_level,
        "dbt-oml's log level: DEBUG, INFO (default), WARNING or ERROR.",
        metavar="LEVEL",
    ),
    Key(
        "quiet",
        parse_bool,
        "No progress after dbt's Done. and no INFO lines (warnings, errors, the summary).",
        aliases=("-q",),
    ),
    Key("transport", parse_transport, "An openlineage-python transport.", file_only=True),
    Key("relay", parse_relay, "`dbt-oml relay`'s settings.", file_only=True),
)
#: key -> parser, for the loader
KEYS: Final = {k.name: k.parse for k in TABLE}
#: Settings that cannot come from one environment variable (structured values); relay's scalar
#: keys have DBT_OML_RELAY_<KEY> variables of their own.
FILE_ONLY: Final = frozenset(k.name for k in TABLE if k.file_only)
