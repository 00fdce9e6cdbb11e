"""OpenMetadataTransport: bootstrap the entities OM needs, then post events to its batch endpoint.

An openlineage-python Transport (kind `openmetadata`). Events are buffered and sent in batches.
For each batch: events that are not RunEvents are refused one by one; the services, databases,
schemas, tables and pipelines the events OM will process reference are created (om.bootstrap);
each event is made OM-proof (om.prepare); an event without column lineage never replaces the
column lineage OM holds on an edge (the per-model guard); then the batch goes to
POST /api/v1/openlineage/lineage/batch and OM's answer is checked event by event: `failedEvents`
are rejected with OM's reason, and when OM drew fewer edges than the events carry, the events are
posted one by one to find which ones OM could not resolve. An edge with a table whose name
holds a dot, which OM's endpoint cannot resolve, goes through PUT /api/v1/lineage instead
(dotted.py). When events carry dbt-oml's own dbt facets, the tables dbt-oml owns also
get what OM's dbt ingestion shows (descriptions, tags, owners, the dbt tab, tests with a result
per run: om.metadata.writer), each part switchable.

Every request of a run shares one retry budget (om.retry); once it is spent, the rest goes to the
outbox at once through `delivery.outbox.Keeper` (stem `openmetadata`): `openmetadata.jsonl`
(retrying may help: `dbt-oml flush`) or `openmetadata.rejected.jsonl` (OM refused them for good:
fix, then `dbt-oml replay FILE`), with a line per cause in `openmetadata.reasons.log`. Causes are
recorded once in `problems`, never logged here. Nothing is dbt-specific: everything comes from
the events, so any producer can use it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httpx2
from openlineage.client.transport.transport import Transport

from dbt_oml.delivery.outbox import Keeper
from dbt_oml.errors import DbtOmlError, status_error
from dbt_oml.events import serialize
from dbt_oml.om.bootstrap import Bootstrap, BootstrapReport, ServiceMapping
from dbt_oml.om.client import OpenMetadataClient
from dbt_oml.om.event_check import event_problem
from dbt_oml.om.metadata.writer import TABLE_FIELDS, DbtMetadata
from dbt_oml.om.prepare import Prepared, prepare
from dbt_oml.om.retry import RetryBudget
from dbt_oml.redaction import Redactor, mask
from dbt_oml.transports.base import Columns, Keeping, Outcome
from dbt_oml.transports.openmetadata.answers import (
    BATCH_PATH,
    EVENT_PATH,
    TOO_LARGE,
    log_advisories,
    processed_by_om,
    refusal,
    refused_by_om,
    unresolved,
)
from dbt_oml.transports.openmetadata.config import OpenMetadataConfig
from dbt_oml.transports.openmetadata.dotted import DottedLineage
from dbt_oml.transports.openmetadata.guard import LineageGuard
from dbt_oml.transports.openmetadata.verify import Check, checks_of

logger = logging.getLogger(__name__)
#: OM's defaults when its settings cannot be read (ref §2.9): COMPLETE only, pipeline service.
DEFAULT_SETTINGS: Mapping[str, Any] = {"defaultPipelineService": "openlineage"}


def om_event(event: Mapping[str, Any], *, copy_column_lineage: bool) -> dict[str, Any]:
    """An event as OpenMetadata reads it (see om.prepare), without service hints.

    >>> om_event({"eventTime": "2026-11-30T03:55:00.123456+00:00", "outputs": []},
    ...          copy_column_lineage=True)["eventTime"]
    '2026-11-30T03:55:00.123Z'
    """
    return prepare(event, services={}, copy_column_lineage=copy_column_lineage).event


class OpenMetadataTransport(Keeping, Transport):
    kind = "openmetadata"
    config_class = OpenMetadataConfig

    def __init__(
        self,
        config: OpenMetadataConfig,
        *,
        redactor: Redactor | None = None,
        http: httpx2.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
    ) -> None:
        self.config = config
        self.redactor = redactor or Redactor()
        """The run's (or, made elsewhere, this transport's own): masks what it keeps."""
        self.redactor.add(*config.secrets())
        for insecurity in config.insecurities():  # a run makes one: once per run
            logger.warning("%s", insecurity)
        timeout = httpx2.Timeout(config.timeout, connect=min(config.timeout, 5.0))
        self.http = http or httpx2.Client(timeout=timeout, verify=config.verify)
        self.budget = RetryBudget(config.retry_budget, clock=clock, sleep=sleep)
        self.client = OpenMetadataClient(config.url, http=self.http, auth=config.auth(), now=now)
        self.client.time_left = self.budget.time_left  # a retry waits at most what is left
        self._buffer: list[dict[str, Any]] = []
        self._settings: Mapping[str, Any] | None = None
        self._bootstrap: Bootstrap | None = None
        self.guard = LineageGuard(
            lambda table: self.budget.call(lambda: self.client.upstream_edges(table))
        )
        self.dotted = DottedLineage(
            self.client, call=self.budget.call, bootstrap=self._bootstrapper
        )
        self._dbt: DbtMetadata | None = None
        self.delivered = 0
        self.kept = Keeper(Path(config.outbox_dir), "openmetadata", self.redactor)
        self.dropped_inputs: set[str] = set()

    def __repr__(self) -> str:
        return f"OpenMetadataTransport({mask(self.config.url)!r})"

    @property
    def notes(self) -> list[str]:
        """Lines for the run summary (what dbt metadata the run wrote)."""
        line = self._dbt.counts_line if self._dbt is not None else None
        return [line] if line else []

    @property
    def problems(self) -> list[str]:
        """Each cause of an undelivered event, once, with its count."""
        return [
            f"{n} event(s) not delivered to OpenMetadata: {reason} (kept in {path})"
            for (reason, path), n in self.kept.reasons.items()
        ]

    # -- Transport API ----------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        # serialize: Serde.to_dict's dict in one pass (3x faster on large runs)
        self._buffer.append(
            serialize.to_dict(event) if not isinstance(event, dict) else dict(event)
        )
        if len(self._buffer) >= self.config.batch_size:
            self.flush()

    def close(self, timeout: float = -1) -> bool:  # noqa: ARG002 - bounded by retry_budget
        self.flush()
        self.http.close()
        self._log_advisories()
        return self.undelivered == 0

    def flush(self) -> None:
        events, self._buffer = self._buffer, []
        if not events:
            return
        try:
            outcome = self.deliver(events)
        except DbtOmlError as e:  # OM failing, a secret that does not work, a bad name: keep all
            self.kept.keep(events, str(e))
        except Exception as e:
            logger.debug("delivery failed unexpectedly", exc_info=True)
            self.kept.keep(events, f"delivery failed unexpectedly ({type(e).__name__}: {e})")
        else:
            self.delivered += len(outcome.delivered)
            for index, reason in outcome.kept:
                self.kept.keep([events[index]], reason)
            for index, reason in outcome.rejected:
                self.kept.keep([events[index]], reason, rejected=True)
        self.kept.log_reasons()

    @property
    def guarded(self) -> set[str]:
        """Tables whose OM column lineage the per-model guard kept this run."""
        return self.guard.guarded

    def reset_budget(self) -> None:
        """A fresh retry budget (a long-running relay starts one per batch)."""
        self.budget.reset()

    # -- beyond delivery: the plan for --dry-run, columns for `*` expansion --------------------

    def plan(self, events: list[dict[str, Any]]) -> list[str]:
        """What bootstrap would create for these events, with which method (writes nothing)."""
        bootstrap = self._bootstrapper()
        dbt = self._dbt_metadata()
        bootstrap.dry_run = dbt.session.dry_run = True
        try:
            processed = self._processed(events)
            report = bootstrap.ensure(processed)
            if any(self.config.dbt_metadata.values()):
                dbt.apply(processed, events, report=report, bootstrap=bootstrap)
        finally:
            bootstrap.dry_run = dbt.session.dry_run = False
        return report.plan + dbt.session.plan + [f"problem: {p}" for p in report.problems]

    def verify(self, events: list[dict[str, Any]]) -> list[Check]:
        """What these events should have made in OpenMetadata, as OM holds it (reads only)."""
        bootstrap = self._bootstrapper()
        bootstrap.dry_run = True
        try:
            processed = self._processed(events)
            report = bootstrap.ensure(processed)
        finally:
            bootstrap.dry_run = False
        return checks_of(processed, report, client=self.client, call=self.budget.call)

    def columns_for(self, namespace: str, name: str) -> Columns | None:
        """The columns OpenMetadata holds for a table dbt cannot introspect (None if unknown)."""
        return self.dotted.columns(namespace, name)  # a dotted name: each way it may split

    # -- delivery ---------------------------------------------------------------------------

    def deliver(self, events: list[dict[str, Any]]) -> Outcome:
        """Bootstrap and post one batch now; what OM took, what to keep, what it refused.

        Raises TransientDeliveryError when OM cannot be reached within the budget and
        TerminalDeliveryError for what affects every event (401, 403, a bad configuration).
        """
        outcome = Outcome()
        valid: list[int] = []
        for index, event in enumerate(events):
            problem = event_problem(event)
            if problem is None:
                valid.append(index)
            else:
                outcome.rejected.append((index, f"not an OpenLineage RunEvent: {problem}"))
        allowed = self._allowed_types()
        processed = [i for i in valid if processed_by_om(events[i], allowed)]
        outcome.delivered += [i for i in valid if i not in set(processed)]
        report = BootstrapReport()
        if processed and self.config.bootstrap:
            bootstrap = self._bootstrapper()
            report = self.budget.call(lambda: bootstrap.ensure([events[i] for i in processed]))
            refused = {i: why for i in processed if (why := refused_by_om(events[i], report))}
            outcome.rejected += refused.items()  # OM will not hold a table they name: no retry
            processed = [i for i in processed if i not in refused]
        if any(self.config.dbt_metadata.values()):
            self._dbt_metadata().apply(
                [events[i] for i in processed],
                [events[i] for i in valid],
                report=report,
                bootstrap=self._bootstrapper(),
            )
        if not processed:
            return outcome
        self.guard.start(report.services, self._bootstrapper().mapping)
        plans = {i: self._prepare(events[i], report) for i in processed}
        ready = self.dotted.deliver(plans, report, outcome)  # a dotted table's edges: PUT
        to_post = [i for i in ready if plans[i].postable]
        outcome.delivered += [i for i in ready if not plans[i].postable]
        if to_post:
            self._post(to_post, plans, report, outcome)
        return outcome

    def _prepare(self, event: Mapping[str, Any], report: BootstrapReport) -> Prepared:
        protected = set() if self.config.allow_empty_column_lineage else self.guard.protected(event)
        prepared = prepare(
            event,
            services=report.services,
            protected=protected,
            copy_column_lineage=self.config.column_lineage_in_output_facets,
        )
        self.dropped_inputs.update(prepared.dropped)
        return prepared

    def _post(
        self,
        indexes: list[int],
        plans: Mapping[int, Prepared],
        report: BootstrapReport,
        outcome: Outcome,
    ) -> None:
        """Post the batch; find the events OM refused or could not fully resolve."""
        reply = self.budget.call(lambda: self.client.post_batch([plans[i].event for i in indexes]))
        if reply.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:  # a proxy's body limit: halve
            if len(indexes) == 1:
                outcome.rejected.append((indexes[0], TOO_LARGE))
                return
            half = len(indexes) // 2
            self._post(indexes[:half], plans, report, outcome)
            self._post(indexes[half:], plans, report, outcome)
            return
        if reply.status == HTTPStatus.BAD_REQUEST or not isinstance(reply.body, dict):
            self._one_by_one(indexes, plans, report, outcome)
            return
        if not reply.ok:
            raise status_error(
                reply.status,
                target=f"POST {mask(self.config.url)}{BATCH_PATH}",
                reason=f"{reply.status} {reply.message}",
            )
        failed = {}
        for failure in reply.body.get("failedEvents") or []:
            position = failure.get("index") if isinstance(failure, dict) else None
            if isinstance(position, int) and 0 <= position < len(indexes):
                failed[indexes[position]] = (
                    str(failure.get("reason") or "no reason given (a failedEvents entry)"),
                    bool(failure.get("retriable")),
                )
        for index, (reason, retriable) in failed.items():
            target = outcome.kept if retriable else outcome.rejected
            target.append((index, f"OpenMetadata failed it: {reason}"))
        rest = [i for i in indexes if i not in failed]
        expected = sum(plans[i].edges for i in rest)
        if int(reply.body.get("lineageEdgesCreated") or 0) >= expected:
            outcome.delivered += rest
        else:
            self._one_by_one(rest, plans, report, outcome)

    def _one_by_one(
        self,
        indexes: list[int],
        plans: Mapping[int, Prepared],
        report: BootstrapReport,
        outcome: Outcome,
    ) -> None:
        for index in indexes:
            plan = plans[index]
            reply = self.budget.call(lambda plan=plan: self.client.post_event(plan.event))  # type: ignore[misc]
            refused = refusal(reply, f"POST {mask(self.config.url)}{EVENT_PATH}")
            if refused is not None:
                outcome.rejected.append((index, refused))
                continue
            created = int(reply.body.get("lineageEdgesCreated") or 0)
            if created >= plan.edges:
                outcome.delivered.append(index)
            else:
                why = unresolved(plan.event, report)
                outcome.kept.append(
                    (index, f"OpenMetadata drew {created} of {plan.edges} lineage edge(s): {why}")
                )

    # -- settings, bootstrap ---------------------------------------------------------

    def _om_settings(self) -> Mapping[str, Any]:
        if self._settings is None:
            found = self.budget.call(self.client.openlineage_settings)
            if found is None:
                logger.info(
                    "OpenMetadata's OpenLineage settings are admin-only, so this bot cannot read "
                    "them: using OM's defaults (COMPLETE events only, pipeline service "
                    "'openlineage'); namespaces map to services through the transport's "
                    "`services` key"
                )
            self._settings = found if found is not None else DEFAULT_SETTINGS
        return self._settings

    def _allowed_types(self) -> set[str]:
        return set(self._om_settings().get("eventTypeFilter") or ["COMPLETE"])

    def _processed(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        allowed = self._allowed_types()
        return [e for e in events if event_problem(e) is None and processed_by_om(e, allowed)]

    def _bootstrapper(self) -> Bootstrap:
        if self._bootstrap is None:
            settings = self._om_settings()
            mapping = ServiceMapping(
                om_mapping=dict(settings.get("namespaceToServiceMapping") or {}),
                own_mapping=dict(self.config.services),
                owned_prefixes=list(self.config.owned_namespaces),
            )
            self._bootstrap = Bootstrap(
                self.client,
                mapping=mapping,
                pipeline_service=str(settings.get("defaultPipelineService") or "openlineage"),
            )
            if any(self.config.dbt_metadata.values()):  # what dbt metadata compares against
                self._bootstrap.table_fields = TABLE_FIELDS
        return self._bootstrap

    def _dbt_metadata(self) -> DbtMetadata:
        if self._dbt is None:
            self._dbt = DbtMetadata(
                self.client,
                call=self.budget.call,
                parts=self.config.dbt_metadata,
                update_descriptions=self.config.update_descriptions,
                classification=self.config.tags_classification,
            )
        return self._dbt

    def _log_advisories(self) -> None:
        if self._dbt is not None:
            self._dbt.advise()
        log_advisories(self.dropped_inputs, self.guard.guarded)


__all__ = ["OpenMetadataTransport", "om_event"]
