"""What every dbt-oml command shares: its report, its emitter, its files in dbt's target dir.

I/O adapter: creates the openlineage-python client and reads/writes dbt-oml's own state files.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbt_oml.artifacts import (
    parse_time,
)
from dbt_oml.config import Settings
from dbt_oml.dbt.runner import (
    DbtContext,
)
from dbt_oml.delivery.emitter import DeliveryReport, Emitter
from dbt_oml.errors import ConfigError, DbtOmlError
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.namespaces import CatalogSpec, Namespaces, resolve_namespaces
from dbt_oml.version import __version__

if TYPE_CHECKING:
    from dbt_oml.delivery.remote import RemoteOutbox

logger = logging.getLogger(__name__)

#: OpenLineage `producer` (and every facet's `_producer`): dbt-oml's PyPI release, by version.
PRODUCER = f"https://pypi.org/project/dbt-oml/{__version__}/"
#: dbt-oml's own files inside dbt's target directory.
STATE_DIR = "dbt_oml"
NODE_STARTS = "node_starts.json"
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


#: Allocations between the collector's young passes while dbt-oml reads artifacts and builds
#: events (Python's default: 700).
_GC_YOUNG = 50_000


@contextlib.contextmanager
def quiet_gc() -> Iterator[None]:
    """While artifacts are read, lineage looked up and events built: the objects alive before
    (dbt, its project) leave the collector's passes, and its passes come far less often.

    These steps allocate millions of objects that live for the whole step (the artifacts, the
    lineage), so each pass found nothing to free but walked them all again: at 2,000 models
    this halved the time of a warm lineage step and of building the events. Passes still run
    (SQL parse trees are cyclic garbage) and the defaults come back afterwards.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(_GC_YOUNG, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def make_emitter(settings: Settings, target_path: Path) -> tuple[Emitter | None, str]:
    """The openlineage-python client to send with, and a description of where events go.

    Without any OpenLineage configuration, events go to a JSON-lines file in the target
    directory (the embedded default: no servers needed).
    """
    if settings.dry_run:
        return None, "stdout (--dry-run)"
    from openlineage.client import OpenLineageClient

    config: dict[str, Any] | None
    if settings.transport is not None:
        config = {"transport": dict(settings.transport)}
        where = f"{settings.transport.get('type')} transport (dbt-oml config)"
    elif settings.openlineage_configured:
        config, where = None, "openlineage-python's configured transport"
    else:
        events_file = settings.events_file or target_path / "openlineage" / "events.jsonl"
        events_file.parent.mkdir(parents=True, exist_ok=True)
        config = {"transport": {"type": "file", "log_file_path": str(events_file), "append": True}}
        where = str(events_file)
    from dbt_oml.transports import build_transport_factory

    defaults = {"openmetadata": settings.om_transport} if settings.om_transport else None
    factory = build_transport_factory(defaults)
    try:
        client = (
            OpenLineageClient(config=config, factory=factory)
            if config
            else OpenLineageClient(factory=factory)
        )
    except ConfigError:
        raise
    except (ValueError, TypeError, KeyError, ImportError, AttributeError) as e:
        raise ConfigError(
            key="transport",
            source="openlineage config",
            reason=f"the transport cannot be created ({type(e).__name__}: {e})",
            hint="check openlineage.yml / OPENLINEAGE__TRANSPORT__* / the transport: setting",
        ) from e
    if settings.openlineage_configured and settings.transport is None:
        where = f"{client.transport.kind} transport (openlineage config)"
        if settings.om_transport and client.transport.kind not in ("openmetadata", "composite"):
            logger.warning(
                "OM_HOST is set, but openlineage-python's configuration (OPENLINEAGE_URL, "
                "openlineage.yml or OPENLINEAGE__TRANSPORT__*) chose the %s transport: "
                "OpenMetadata gets nothing. For OpenMetadata set OPENLINEAGE__TRANSPORT__TYPE="
                "openmetadata (OM_* fill it in), or unset OPENLINEAGE_URL",
                client.transport.kind,
            )
    transport_config = getattr(client.transport, "config", None)
    if getattr(transport_config, "outbox_dir", None) == "dbt-oml-outbox":
        # the OpenMetadata transport's default: keep its outbox with dbt-oml's other state
        transport_config.outbox_dir = str(target_path / STATE_DIR / "outbox")  # type: ignore[union-attr]
    if settings.allow_empty_column_lineage and hasattr(
        transport_config, "allow_empty_column_lineage"
    ):
        transport_config.allow_empty_column_lineage = True  # type: ignore[union-attr]
    return client, where


def check_transport(settings: Settings) -> None:
    """Create (and drop) the configured transport, so a configuration error shows before dbt runs.

    Raises ConfigError. The embedded default (a file in the target directory) needs no check.
    """
    if settings.dry_run or (settings.transport is None and not settings.openlineage_configured):
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dbt-oml-check-") as scratch:
        client, _ = make_emitter(settings, Path(scratch))
        transport = getattr(client, "transport", None)
        with contextlib.suppress(Exception):  # nothing was sent: closing only frees resources
            transport.close(0)  # type: ignore[union-attr]


def namespaces_for(
    settings: Settings, catalogs: Sequence[CatalogSpec], cwd: Path, report: Report
) -> Namespaces:
    resolution = resolve_namespaces(
        catalogs,
        overrides=settings.namespaces,
        duckdb_default=settings.duckdb_namespace,
        cwd=str(cwd),
    )
    for problem in resolution.problems:
        report.problems.append(str(problem))
    report.namespaces = dict(resolution.namespaces.by_catalog)
    return resolution.namespaces


#: Transports whose events never reach OpenMetadata as sent.
_NOT_OPENMETADATA = frozenset({"file", "console"})


def reaches_openmetadata(emitter: Emitter | None) -> bool:
    """Whether this emitter's events may reach OpenMetadata: yes, unless its transport only
    writes files or the console. Then events carry columnLineage in `outputFacets` too (OM 1.12
    reads it only there), and the run-level column-lineage guard applies (OM would replace the
    column lineage it holds with none); for a file or the console neither does."""
    kind = getattr(getattr(emitter, "transport", None), "kind", None)
    return kind not in _NOT_OPENMETADATA


def event_settings(
    settings: Settings, cwd: Path, project_root: Path, *, copy_column_lineage: bool = True
) -> EventSettings:
    return EventSettings(
        project_root=str(project_root),
        producer=PRODUCER,
        adapter_version=__version__,
        job_namespace=settings.job_namespace,
        parent_job_name=settings.parent_job_name,
        extended_job_name=settings.extended_job_name,
        job_naming=settings.job_naming,
        cwd=str(cwd),
        orchestrator=settings.orchestrator,
        column_lineage_in_output_facets=copy_column_lineage,
    )


def invocation_of(ctx: DbtContext) -> Invocation:
    return Invocation(
        invocation_id=ctx.invocation_id,
        started_at=ctx.started_at,
        command=ctx.command,
        project_name=ctx.project_name,
        project_version=ctx.project_version,
        profile_name=ctx.profile_name,
        dbt_version=ctx.dbt_version,
        adapter_type=ctx.adapter_type,
        selected=ctx.select,
        selector=ctx.selector,
    )


def outbox_folder(settings: Settings, target_path: Path) -> Path:
    """The local outbox: `outbox_dir`, or <target>/dbt_oml/outbox (also under a durable one)."""
    return settings.outbox_dir or target_path / STATE_DIR / "outbox"


def outbox_path(settings: Settings, target_path: Path, invocation_id: str) -> Path:
    """Where the undelivered events of one invocation are kept."""
    return outbox_folder(settings, target_path) / f"{invocation_id}.jsonl"


def remote_outbox(settings: Settings) -> RemoteOutbox | None:
    """The durable outbox `outbox_dir` names by URL; None for a local one, or a dry run (which
    writes nothing anywhere).

    Raises:
        ConfigError: the store's package cannot be imported.
    """
    if settings.outbox_url is None or settings.dry_run:
        return None
    from dbt_oml.delivery.remote import RemoteOutbox

    return RemoteOutbox.open(settings.outbox_url)


def keep_durably(settings: Settings, target_path: Path, report: Report) -> None:
    """After a run, with a durable outbox: the local outbox's files go up to it (a store that
    cannot be reached leaves them here, with one line in the report's problems)."""
    try:
        remote = remote_outbox(settings)
    except ConfigError as e:  # after the run: its events stay here, and the line says why
        report.problems.append(
            f"{e}; the kept events stay in {outbox_folder(settings, target_path)}"
        )
        return
    if remote is not None:
        synced = remote.push(outbox_folder(settings, target_path))
        report.delivery.notes += synced.notes
        report.problems += synced.problems


def write_node_starts(ctx: DbtContext, starts: Mapping[str, datetime]) -> None:
    folder = ctx.target_path / STATE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "invocation_id": ctx.invocation_id,
        "node_starts": {k: v.isoformat() for k, v in starts.items()},
    }
    (folder / NODE_STARTS).write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")


def read_node_starts(target: Path, invocation_id: str | None) -> dict[str, datetime]:
    """Node start times recorded live by `dbt-oml build`, if they belong to this invocation."""
    try:
        doc = json.loads((target / STATE_DIR / NODE_STARTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("invocation_id") != invocation_id:
        return {}
    starts = {k: parse_time(v) for k, v in (doc.get("node_starts") or {}).items()}
    return {k: v for k, v in starts.items() if v is not None}


def bootstrap_plan(settings: Settings, events: list[dict[str, Any]]) -> list[str] | None:
    """For --dry-run with the OpenMetadata transport: what bootstrap would create (reads OM)."""
    transport = settings.transport
    if not transport or transport.get("type") not in {"openmetadata", _OM_PATH}:
        return None
    from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport

    om = OpenMetadataTransport(OpenMetadataConfig.from_dict(dict(transport)))
    try:
        return om.plan(events)
    finally:
        om.http.close()


def add_bootstrap_plan(settings: Settings, report: Report) -> None:
    """--dry-run: the bootstrap plan for the collected events on the report (the console prints
    it); when OpenMetadata cannot be asked, why not."""
    try:
        report.plan = bootstrap_plan(settings, report.delivery.collected)
    except DbtOmlError as e:
        report.plan_problem = str(e)


_OM_PATH = "dbt_oml.transports.openmetadata.OpenMetadataTransport"
