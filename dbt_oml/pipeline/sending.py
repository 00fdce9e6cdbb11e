"""Where a run's events go: the openlineage-python client with dbt-oml's transports, the
delivery that keeps what it could not send, and the --dry-run bootstrap plan.

I/O adapter: creates the client; reads the transports' contract through `transports.base`.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbt_oml.config import Settings
from dbt_oml.delivery.emitter import Delivery, Emitter
from dbt_oml.errors import ConfigError, DbtOmlError
from dbt_oml.pipeline.outbox import outbox_folder
from dbt_oml.pipeline.report import Report
from dbt_oml.redaction import Redactor

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient

    from dbt_oml.transports.openmetadata import OpenMetadataTransport

logger = logging.getLogger(__name__)


@functools.cache
def client_class() -> type[OpenLineageClient]:
    """openlineage-python's client, minus a scan of the whole environment for every event.

    The client's `emit` gathers the environment variables its config names into a facet by
    going over every variable of `os.environ`, event after event, even when it names none. A
    Kubernetes pod holds one variable per port of every service in its namespace (hundreds):
    4,000 events over 435 variables took 0.7 s. When the config names none, there is nothing to
    gather; otherwise the client's own method runs, unchanged.
    """
    from openlineage.client import OpenLineageClient

    class Client(OpenLineageClient):
        def _collect_environment_variables(self) -> dict[str, str]:
            if not self.config.facets.environment_variables:
                return {}
            return super()._collect_environment_variables()

    return Client


def make_emitter(
    settings: Settings, target_path: Path, redactor: Redactor
) -> tuple[Emitter | None, str]:
    """The openlineage-python client to send with, and a description of where events go.

    Without any OpenLineage configuration, events go to a JSON-lines file in the target
    directory (the embedded default: no servers needed).
    """
    if settings.emit.dry_run:
        return None, "stdout (--dry-run)"
    OpenLineageClient = client_class()  # noqa: N806 - a class

    config: dict[str, Any] | None
    if settings.transport.config is not None:
        config = {"transport": dict(settings.transport.config)}
        where = f"{settings.transport.config.get('type')} transport (dbt-oml config)"
    elif settings.transport.openlineage_configured:
        config, where = None, "openlineage-python's configured transport"
    else:
        events_file = settings.transport.events_file or target_path / "openlineage" / "events.jsonl"
        events_file.parent.mkdir(parents=True, exist_ok=True)
        config = {"transport": {"type": "file", "log_file_path": str(events_file), "append": True}}
        where = str(events_file)
    from dbt_oml.transports import build_transport_factory

    factory = build_transport_factory(*transport_defaults(settings, target_path), redactor)
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
    if settings.transport.openlineage_configured and settings.transport.config is None:
        where = f"{client.transport.kind} transport (openlineage config)"
        if settings.transport.om and client.transport.kind not in ("openmetadata", "composite"):
            logger.warning(
                "OM_HOST is set, but openlineage-python's configuration (OPENLINEAGE_URL, "
                "openlineage.yml or OPENLINEAGE__TRANSPORT__*) chose the %s transport: "
                "OpenMetadata gets nothing. For OpenMetadata set OPENLINEAGE__TRANSPORT__TYPE="
                "openmetadata (OM_* fill it in), or unset OPENLINEAGE_URL",
                client.transport.kind,
            )
    return client, where


def transport_defaults(
    settings: Settings, target_path: Path
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """What our transports get before they are made: defaults for the keys their configuration
    leaves empty (OM_*; the outbox beside dbt-oml's other state), and what dbt-oml's own
    settings force (--allow-empty-column-lineage)."""
    outbox = {"outbox_dir": str(outbox_folder(settings, target_path))}
    defaults = {"openmetadata": {**outbox, **(settings.transport.om or {})}, "jetstream": outbox}
    forced = {"openmetadata": {"allow_empty_column_lineage": True}}
    return defaults, forced if settings.lineage.allow_empty_column_lineage else {}


def delivery_for(
    emitter: Emitter | None, *, outbox: Path, target: str, redactor: Redactor
) -> Delivery:
    """A Delivery through `emitter` that also counts what its transport kept itself, and gives
    OpenMetadata's copy of column lineage to a transport of someone else's that may reach OM."""
    from dbt_oml.om.prepare import column_lineage_where_om_reads_it
    from dbt_oml.transports.base import summary

    transport = getattr(emitter, "transport", None)
    return Delivery(
        emitter,
        outbox=outbox,
        target=target,
        redactor=redactor,
        summarise=lambda: summary(transport),
        adapt=column_lineage_where_om_reads_it if foreign_may_reach_om(emitter) else None,
    )


#: Transports that make OpenMetadata's copy themselves (openmetadata; jetstream: the relay),
#: or whose events never reach OpenMetadata as sent (file, console).
_NO_COPY = frozenset({"openmetadata", "jetstream", "file", "console"})


def foreign_may_reach_om(emitter: Emitter | None) -> bool:
    """Whether a member of the emitter's transport is not ours and may reach OpenMetadata
    (`http` to OM's endpoint, kafka, ...): its events need OM 1.12's copy of column lineage."""
    from dbt_oml.transports.base import kinds_in

    transport = getattr(emitter, "transport", None)
    return transport is not None and bool(kinds_in(transport) - _NO_COPY)


def check_transport(settings: Settings) -> None:
    """Create (and drop) the configured transport, so a configuration error shows before dbt runs.

    Raises ConfigError. The embedded default (a file in the target directory) needs no check.
    """
    if settings.emit.dry_run or (
        settings.transport.config is None and not settings.transport.openlineage_configured
    ):
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dbt-oml-check-") as scratch:
        client, _ = make_emitter(settings, Path(scratch), Redactor())  # sends nothing
        transport = getattr(client, "transport", None)
        with contextlib.suppress(Exception):  # nothing was sent: closing only frees resources
            transport.close(0)  # type: ignore[union-attr]


#: Transports whose events never reach OpenMetadata as sent.
_NOT_OPENMETADATA = frozenset({"file", "console"})


def reaches_openmetadata(emitter: Emitter | None) -> bool:
    """Whether this emitter's events may reach OpenMetadata: yes, unless its transport only
    writes files or the console. Then the run-level column-lineage guard applies (OM would
    replace the column lineage it holds with none); for a file or the console it does not."""
    from dbt_oml.transports.base import kinds_in

    kinds = kinds_in(getattr(emitter, "transport", None))
    return not kinds or not kinds <= _NOT_OPENMETADATA


def bootstrap_plan(settings: Settings, events: list[dict[str, Any]]) -> list[str] | None:
    """For --dry-run with the OpenMetadata transport: what bootstrap would create (reads OM)."""
    from dbt_oml.transports import kind_named

    transport = settings.transport.config
    if not transport or kind_named(transport.get("type")) != "openmetadata":
        return None
    with _openmetadata(dict(transport), Redactor()) as om:  # the console redacts the plan
        return om.plan(events)


@contextlib.contextmanager
def _openmetadata(config: dict[str, Any], redactor: Redactor) -> Iterator[OpenMetadataTransport]:
    """An OpenMetadata transport for one read (a plan, a read-back), closed after it."""
    from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport

    om = OpenMetadataTransport(OpenMetadataConfig.from_dict(config), redactor=redactor)
    try:
        yield om
    finally:
        om.http.close()


def add_bootstrap_plan(settings: Settings, report: Report) -> None:
    """--dry-run: the bootstrap plan for the collected events on the report (the console prints
    it); when OpenMetadata cannot be asked, why not."""
    try:
        report.plan = bootstrap_plan(settings, report.delivery.collected)
    except DbtOmlError as e:
        report.plan_problem = str(e)


def openmetadata_config(settings: Settings) -> dict[str, Any]:
    """The openmetadata transport the run's events go to, however it is configured.

    Raises:
        ConfigError: no OpenMetadata transport is configured.
    """
    from dbt_oml.config import plan_settings
    from dbt_oml.transports import kind_named

    transport = plan_settings(settings).transport.config
    if not transport or kind_named(transport.get("type")) != "openmetadata":
        raise ConfigError(
            key="transport",
            source="the configuration",
            reason="verify reads OpenMetadata, and no openmetadata transport is configured",
            hint="configure it as for a build (dbt-oml.yml, OPENLINEAGE__TRANSPORT__*, OM_HOST)",
        )
    return dict(transport)


def read_back(
    config: dict[str, Any], events: list[dict[str, Any]], redactor: Redactor
) -> list[Any]:
    """`dbt-oml verify`: each table and edge `events` should have made in OpenMetadata, as OM
    holds it (transports.openmetadata.verify), through the transport `config` describes."""
    with _openmetadata(config, redactor) as om:
        return om.verify(events)


def verify_delivered(
    settings: Settings, sent: list[dict[str, Any]] | None, report: Report, redactor: Redactor
) -> None:
    """`verify: true`: after a delivery, what the sent events should have made in OpenMetadata,
    read back; one summary line, and a problem line for each of the first few missing."""
    if not settings.emit.verify or settings.emit.dry_run or not sent:
        return
    try:
        checks = read_back(openmetadata_config(settings), sent, redactor)
    except DbtOmlError as e:
        report.problems.append(f"verify: OpenMetadata was not read back ({e})")
        return
    bad = [c for c in checks if c.state != "present"]
    report.delivery.notes.append(
        f"verify: {len(checks) - len(bad)} present, {len(bad)} missing or different in "
        "OpenMetadata" + ("; `dbt-oml verify` lists them" if bad else "")
    )
    for check in bad[:5]:
        report.problems.append(f"verify: {check.state} {check.kind} {check.name}: {check.reason}")
