"""OpenMetadataTransport: bootstrap the entities OM needs, then post events to its batch endpoint.

An openlineage-python Transport (kind `openmetadata`). Events are buffered and sent in batches:
before each batch, the services, databases, schemas, tables and pipelines the events reference are
created (om.bootstrap); then the batch goes to POST /api/v1/openlineage/lineage/batch and its
summary is checked. Transient failures are retried with exponential backoff inside a total time
budget; whatever still cannot be delivered is appended to the outbox with the reason, for
`dbt-oml replay`. Nothing dbt-specific lives here: everything comes from the events.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import attr
import httpx2
from openlineage.client.serde import Serde
from openlineage.client.transport.transport import Config, Transport

from dbt_oml.errors import (
    ConfigError,
    DbtOmlError,
    DeliveryError,
    TerminalDeliveryError,
    TransientDeliveryError,
)
from dbt_oml.om.bootstrap import Bootstrap, ServiceMapping
from dbt_oml.om.client import (
    BasicLogin,
    OAuth2ClientCredentials,
    OpenMetadataClient,
    StaticToken,
    TokenFile,
    TokenProvider,
)
from dbt_oml.om.names import fqn
from dbt_oml.transports.options import coerce, known_values

logger = logging.getLogger(__name__)
T = TypeVar("T")


@attr.define
class OpenMetadataConfig(Config):
    """Settings of the OpenMetadata transport (`transport:` in openlineage.yml / dbt-oml.yml)."""

    url: str
    jwt_token: str | None = attr.field(default=None, repr=False)
    jwt_token_file: str | None = None
    user: str | None = None
    password: str | None = attr.field(default=None, repr=False)
    client_id: str | None = None
    client_secret: str | None = attr.field(default=None, repr=False)
    oauth_token_url: str | None = None
    verify: bool | str = True
    owned_namespaces: list[str] = attr.field(factory=lambda: ["duckdb://"])
    services: dict[str, str] = attr.field(factory=dict)
    batch_size: int = 100
    timeout: float = 10.0
    retry_budget: float = 30.0
    outbox_dir: str = "dbt-oml-outbox"
    bootstrap: bool = True
    column_lineage_in_output_facets: bool = True

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> OpenMetadataConfig:
        values = known_values(cls, params, source="openmetadata transport")
        if not values.get("url"):
            raise ConfigError(
                key="transport.url",
                source="openmetadata transport",
                reason="is missing",
                hint="the OpenMetadata server, e.g. https://om:8585",
            )
        coerce(
            values,
            ints=("batch_size",),
            floats=("timeout", "retry_budget"),
            bools=("bootstrap", "column_lineage_in_output_facets"),
        )
        if isinstance(values.get("verify"), str) and values["verify"].lower() in {"true", "false"}:
            values["verify"] = values["verify"].lower() == "true"
        config = cls(**values)
        if config.verify is False:
            logger.warning(
                "TLS verification to %s is OFF: anyone on the path can read the token", config.url
            )
        return config

    def auth(self) -> TokenProvider | None:
        if self.jwt_token_file:
            return TokenFile(Path(self.jwt_token_file).expanduser())
        if self.jwt_token:
            return StaticToken(self.jwt_token)
        if self.client_id and self.client_secret and self.oauth_token_url:
            return OAuth2ClientCredentials(self.oauth_token_url, self.client_id, self.client_secret)
        if self.user and self.password:
            return BasicLogin(self.user, self.password)
        return None


def om_event(event: Mapping[str, Any], *, copy_column_lineage: bool) -> dict[str, Any]:
    """An event as OpenMetadata reads it: `...Z` with milliseconds, columnLineage in outputFacets.

    >>> om_event({"eventTime": "2026-11-30T03:55:00.123456+00:00", "outputs": []},
    ...          copy_column_lineage=True)["eventTime"]
    '2026-11-30T03:55:00.123Z'
    """
    out: dict[str, Any] = json.loads(json.dumps(event))
    moment = datetime.fromisoformat(str(out["eventTime"]).replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    utc = moment.astimezone(timezone.utc)
    out["eventTime"] = utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    if copy_column_lineage:
        for dataset in out.get("outputs") or []:
            facet = (dataset.get("facets") or {}).get("columnLineage")
            if facet and "columnLineage" not in (dataset.get("outputFacets") or {}):
                dataset.setdefault("outputFacets", {})["columnLineage"] = facet
    return out


class OpenMetadataTransport(Transport):
    kind = "openmetadata"
    config_class = OpenMetadataConfig

    def __init__(
        self,
        config: OpenMetadataConfig,
        *,
        http: httpx2.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.http = http or httpx2.Client(timeout=config.timeout, verify=config.verify)
        self.client = OpenMetadataClient(config.url, http=self.http, auth=config.auth())
        self.sleep, self.clock = sleep, clock
        self._buffer: list[dict[str, Any]] = []
        self._settings: dict[str, Any] | None = None
        self._bootstrap: Bootstrap | None = None
        self.delivered = 0
        self.undelivered = 0
        self.problems: list[str] = []
        self.outbox: Path | None = None
        self._deadline: float | None = None

    def __repr__(self) -> str:
        return f"OpenMetadataTransport({self.config.url!r})"

    # -- Transport API ----------------------------------------------------------------------

    def emit(self, event: Any) -> None:
        self._buffer.append(Serde.to_dict(event) if not isinstance(event, dict) else dict(event))
        if len(self._buffer) >= self.config.batch_size:
            self.flush()

    def close(self, timeout: float = -1) -> bool:  # noqa: ARG002 - bounded by retry_budget
        self.flush()
        self.http.close()
        return self.undelivered == 0

    def flush(self) -> None:
        events, self._buffer = self._buffer, []
        if not events:
            return
        try:
            self.deliver(events)
        except DeliveryError as e:
            self._keep(events, str(e))

    # -- beyond delivery: the plan for --dry-run, columns for `*` expansion --------------------

    def plan(self, events: list[dict[str, Any]]) -> list[str]:
        """What bootstrap would create for these events, with which method (writes nothing)."""
        settings = self._om_settings()
        bootstrap = self._bootstrapper(settings)
        bootstrap.dry_run = True
        try:
            report = bootstrap.ensure(events)
        finally:
            bootstrap.dry_run = False
        return report.plan + [f"problem: {p}" for p in report.problems]

    def columns_for(self, namespace: str, name: str) -> tuple[tuple[str, str | None], ...] | None:
        """The columns OpenMetadata holds for a table dbt cannot introspect (None if unknown)."""
        parts = name.split(".")
        if len(parts) < 3:
            return None
        try:
            service, _ = self._bootstrapper(self._om_settings()).mapping.service(namespace)
            if service is None:
                return None
            table = self._retry(
                lambda: self.client.get_by_name(
                    "tables", fqn(service, *parts[-3:]), fields="columns"
                )
            )
        except DbtOmlError as e:  # unreachable, refused, a token file that is not there
            logger.debug("no OpenMetadata columns for %s/%s: %s", namespace, name, e)
            return None
        if table is None:
            return None
        return tuple(
            (str(c["name"]), c.get("dataTypeDisplay") or c.get("dataType"))
            for c in table.get("columns") or []
        )

    def _om_settings(self) -> dict[str, Any]:
        if self._settings is None:
            self._settings = self._retry(self.client.openlineage_settings)
        return self._settings

    # -- delivery ---------------------------------------------------------------------------

    def deliver(self, events: list[dict[str, Any]]) -> None:
        """Bootstrap and post one batch now; raises DeliveryError (nothing is kept here)."""
        settings = self._om_settings()
        if self.config.bootstrap:
            bootstrap = self._bootstrapper(settings)
            report = self._retry(lambda: bootstrap.ensure(events))
            self.problems += report.problems
        allowed = set(settings.get("eventTypeFilter") or ["COMPLETE"])
        batch = [  # OM draws edges only from kept event types with inputs and outputs
            om_event(e, copy_column_lineage=self.config.column_lineage_in_output_facets)
            for e in events
            if e.get("eventType", "COMPLETE") in allowed and e.get("inputs") and e.get("outputs")
        ]
        if not batch:
            self.delivered += len(events)
            return
        response = self._retry(lambda: self.client.post_batch(batch))
        summary = response.get("summary") or {}
        for failure in response.get("failedEvents") or []:
            self.problems.append(
                f"OpenMetadata failed event {failure.get('index')}: {failure.get('reason')}"
            )
        if summary.get("successful", 0) == 0 and summary.get("skipped", 0) > 0:
            raise TerminalDeliveryError(
                target=f"POST {self.config.url}/api/v1/openlineage/lineage/batch",
                reason=f"every event was skipped ({summary.get('skipped')} of "
                f"{summary.get('received')})",
                hint="usually a missing service, database or schema: "
                "check namespaceToServiceMapping",
            )
        self.delivered += len(events)

    def _bootstrapper(self, settings: Mapping[str, Any]) -> Bootstrap:
        if self._bootstrap is None:
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
        return self._bootstrap

    def _retry(self, action: Callable[[], T]) -> T:
        """Retry transient failures with exponential backoff inside one budget per transport."""
        if self._deadline is None:
            self._deadline = self.clock() + self.config.retry_budget
        delay = 0.5
        while True:
            try:
                return action()
            except TransientDeliveryError:
                if self.clock() + delay > self._deadline:
                    raise
                logger.debug("OpenMetadata unavailable; retrying in %.1fs", delay)
                self.sleep(delay)
                delay = min(delay * 2, 8.0)

    def _keep(self, events: list[dict[str, Any]], reason: str) -> None:
        folder = Path(self.config.outbox_dir)
        folder.mkdir(parents=True, exist_ok=True)
        self.outbox = folder / "openmetadata.jsonl"
        with self.outbox.open("a", encoding="utf-8") as out:
            for event in events:
                out.write(json.dumps(event, sort_keys=True) + "\n")
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with (folder / "openmetadata.reasons.log").open("a", encoding="utf-8") as log:
            log.write(f"{stamp} {len(events)} event(s): {reason}\n")
        self.undelivered += len(events)
        self.problems.append(f"{len(events)} event(s) kept in {self.outbox}: {reason}")
        logger.error(
            "OpenMetadata: %d event(s) not delivered (%s); kept in %s",
            len(events),
            reason,
            self.outbox,
        )
