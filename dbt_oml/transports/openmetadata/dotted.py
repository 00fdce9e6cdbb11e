"""Tables OM's OpenLineage endpoint cannot find: a database, schema or table name holding a dot.

OM's resolver splits a dataset's name on every `.` and looks its table up with unquoted LIKE
patterns (ref §2.2), so a table `v1.orders`, which OM stores as `svc.db.core."v1.orders"`
(ref §3.2), never resolves: its edges would be lost, and the event kept as if its namespace had
no service. So the OM copy of an event keeps only the datasets the endpoint can resolve (the
edges it must draw are then the ones it can), and each edge with a dotted end goes through
PUT /api/v1/lineage by entity id (ref §3.5): the ids of what bootstrap created or read (else read
by FQN), the `lineageDetails` OM's own mapper writes (source OpenLineage, its description, the
SQL, the pipeline: ref §2.1) and the column lineage as OM holds it (quoted column FQNs).

The per-model guard holds here as on the endpoint: an input whose edge OM's column lineage must
keep is already out of the prepared event, so no PUT replaces that edge. An event counts as
delivered only when OM took every one of its PUTs.

The same names make `columns_for` try each way a dotted name may split (see om.tables).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, TypeVar

from dbt_oml.errors import DbtOmlError, status_error
from dbt_oml.om.bootstrap import Bootstrap, BootstrapReport
from dbt_oml.om.client import OpenMetadataClient, Reply
from dbt_oml.om.names import fqn, quote
from dbt_oml.om.prepare import Prepared
from dbt_oml.om.services import pipeline_name
from dbt_oml.om.tables import TableRef, candidates, table_ref
from dbt_oml.redaction import mask
from dbt_oml.transports.base import Outcome

logger = logging.getLogger(__name__)
LINEAGE_PATH = "/api/v1/lineage"
T = TypeVar("T")
#: One request under the run's retry budget (RetryBudget.call).
Call = Callable[[Callable[[], T]], T]


@dataclass(frozen=True, slots=True)
class DottedEdge:
    """An edge of an event that OM's OpenLineage endpoint cannot draw (one end is dotted)."""

    source: Mapping[str, Any]
    target: Mapping[str, Any]
    source_ref: TableRef
    target_ref: TableRef


def split(prepared: Prepared) -> list[DottedEdge]:
    """Take the dotted datasets out of the OM copy of an event (in place): the edges they had.

    Every input-output pair with a dotted end is an edge to PUT; the pairs with none stay for
    the OpenLineage endpoint.
    """
    event = prepared.event
    inputs = [(d, table_ref(d)) for d in event.get("inputs") or []]
    outputs = [(d, table_ref(d)) for d in event.get("outputs") or []]
    if not any(ref is not None and ref.dotted for _, ref in [*inputs, *outputs]):
        return []
    edges = [
        DottedEdge(source, target, source_ref, target_ref)
        for target, target_ref in outputs
        for source, source_ref in inputs
        if source_ref is not None
        and target_ref is not None
        and (source_ref.dotted or target_ref.dotted)
    ]
    event["inputs"] = [d for d, ref in inputs if ref is None or not ref.dotted]
    event["outputs"] = [d for d, ref in outputs if ref is None or not ref.dotted]
    return edges


def columns_lineage(edge: DottedEdge, source_fqn: str, target_fqn: str) -> list[dict[str, Any]]:
    """The target's column lineage from this source, in OM's form (ref §3.5): as OM's mapper
    reads it (ref §2.5: an `inputFields` entry of this input's namespace and name), with OM's
    column FQNs (a column name holding a dot quoted, ref §3.2)."""
    target = edge.target
    facet = (target.get("facets") or {}).get("columnLineage") or (
        target.get("outputFacets") or {}
    ).get("columnLineage")
    key = (str(edge.source.get("namespace")), str(edge.source.get("name")))
    out = []
    for column, spec in ((facet or {}).get("fields") or {}).items():
        froms = [
            f"{source_fqn}.{quote(str(f.get('field')))}"
            for f in (spec or {}).get("inputFields") or []
            if (str(f.get("namespace")), str(f.get("name"))) == key and f.get("field")
        ]
        if froms:
            mapping: dict[str, Any] = {
                "fromColumns": list(dict.fromkeys(froms)),
                "toColumn": f"{target_fqn}.{quote(str(column))}",
            }
            if spec.get("transformationDescription"):
                mapping["function"] = spec["transformationDescription"]
            out.append(mapping)
    return out


class DottedLineage:
    """PUTs the edges of dotted tables; looks dotted names up for `columns_for`."""

    def __init__(
        self,
        client: OpenMetadataClient,
        *,
        call: Call[Any],
        bootstrap: Callable[[], Bootstrap],
    ) -> None:
        self._client = client
        self._call = call
        self._bootstrap = bootstrap
        #: (collection, FQN) -> id of the tables and pipelines read by name
        self._ids: dict[tuple[str, str], str] = {}

    # -- columns_for ---------------------------------------------------------------------

    def columns(self, namespace: str, name: str) -> tuple[tuple[str, str | None], ...] | None:
        """The columns OM holds for a table dbt cannot introspect (None if unknown): a name of
        more than three parts is tried each way a part may hold a dot."""
        try:
            service = self._bootstrap().mapping.service(namespace)[0]
            if service is None:
                return None
            for ref in candidates(namespace, name):
                table_fqn = fqn(service, ref.database, ref.schema, ref.table)
                read = functools.partial(
                    self._client.get_by_name, "tables", table_fqn, fields="columns"
                )
                table = self._call(read)
                if table is not None:
                    return tuple(
                        (str(c["name"]), c.get("dataTypeDisplay") or c.get("dataType"))
                        for c in table.get("columns") or []
                    )
        except DbtOmlError as e:  # unreachable, refused, a token file that is not there
            logger.debug("no OpenMetadata columns for %s/%s: %s", namespace, name, mask(str(e)))
        return None

    # -- delivery ------------------------------------------------------------------------

    def deliver(
        self, plans: Mapping[int, Prepared], report: BootstrapReport, outcome: Outcome
    ) -> list[int]:
        """Split each plan (in place) and PUT its dotted edges, in event order: the indexes of
        the plans all of whose edges OM took (the others are in `outcome`, with the reason)."""
        ready = []
        for index, plan in plans.items():
            problem = self._put_all(plan, split(plan), report)
            if problem is None:
                ready.append(index)
            else:
                reason, rejected = problem
                (outcome.rejected if rejected else outcome.kept).append((index, reason))
        return ready

    def _put_all(
        self, plan: Prepared, edges: list[DottedEdge], report: BootstrapReport
    ) -> tuple[str, bool] | None:
        """PUT each edge; (why not, refused for good?) at the first OM did not take."""
        pipeline = self._pipeline(plan.event) if edges else None
        for edge in edges:
            source = self._table(edge.source_ref, report)
            if isinstance(source, str):
                return f"{edge.source.get('namespace')}/{edge.source.get('name')}: {source}", False
            target = self._table(edge.target_ref, report)
            if isinstance(target, str):
                return f"{edge.target.get('namespace')}/{edge.target.get('name')}: {target}", False
            body = self._body(plan.event, edge, source, target, pipeline)
            put = functools.partial(self._client.request, "PUT", LINEAGE_PATH, json=body)
            problem = self._refused(self._call(put), source, target)
            if problem is not None:
                return problem
        return None

    def _refused(
        self, reply: Reply, source: tuple[str, str], target: tuple[str, str]
    ) -> tuple[str, bool] | None:
        if reply.ok:
            return None
        what = f"the lineage edge {source[0]} -> {target[0]}"
        if reply.status == HTTPStatus.NOT_FOUND:  # deleted since it was read: read them again
            self._ids.clear()
            return f"OpenMetadata has no entity for {what}: {reply.message}", False
        if reply.status == HTTPStatus.BAD_REQUEST:
            return f"OpenMetadata refused {what}: {reply.message}", True
        raise status_error(
            reply.status,
            target=f"PUT {mask(self._client.base_url)}{LINEAGE_PATH}",
            reason=f"{reply.status} {reply.message}",
        )

    def _body(
        self,
        event: Mapping[str, Any],
        edge: DottedEdge,
        source: tuple[str, str],
        target: tuple[str, str],
        pipeline: str | None,
    ) -> dict[str, Any]:
        """OM's AddLineage, with the lineageDetails its OpenLineage mapper would write."""
        job, run = event.get("job") or {}, event.get("run") or {}
        details: dict[str, Any] = {
            "source": "OpenLineage",
            "description": "Lineage from OpenLineage event for job: "
            f"{job.get('namespace')}/{job.get('name')} (run: {run.get('runId')})",
        }
        query = ((job.get("facets") or {}).get("sql") or {}).get("query")
        if query:
            details["sqlQuery"] = query
        columns = columns_lineage(edge, source[0], target[0])
        if columns:
            details["columnsLineage"] = columns
        if pipeline is not None:
            details["pipeline"] = {"id": pipeline, "type": "pipeline"}
        return {
            "edge": {
                "fromEntity": {"id": source[1], "type": "table"},
                "toEntity": {"id": target[1], "type": "table"},
                "lineageDetails": details,
            }
        }

    def _table(self, ref: TableRef, report: BootstrapReport) -> tuple[str, str] | str:
        """(FQN, id) of a dataset's table, or why there is none."""
        bootstrap = self._bootstrap()
        service = report.services.get(ref.namespace) or bootstrap.mapping.service(ref.namespace)[0]
        if service is None:
            return "no OpenMetadata service for it (map its namespace in `services`)"
        table_fqn = fqn(service, ref.database, ref.schema, ref.table)
        schema_fqn = fqn(service, ref.database, ref.schema)
        listed = bootstrap.listed("tables", schema_fqn).get(ref.table) or {}
        if listed.get("id"):  # what bootstrap created or listed
            return table_fqn, str(listed["id"])
        found = self._id("tables", table_fqn)
        return (table_fqn, found) if found else f"OpenMetadata has no table {table_fqn}"

    def _pipeline(self, event: Mapping[str, Any]) -> str | None:
        """The id of the event's pipeline (as OM's mapper picks it: ref §2.6), if OM has it."""
        bootstrap = self._bootstrap()
        name = pipeline_name(event)
        listed = bootstrap.listed("pipelines", bootstrap.pipeline_service).get(name) or {}
        if listed.get("id"):
            return str(listed["id"])
        return self._id("pipelines", fqn(bootstrap.pipeline_service, name))

    def _id(self, collection: str, entity_fqn: str) -> str | None:
        """The id of an entity bootstrap did not list, read by FQN (once while it exists)."""
        key = (collection, entity_fqn)
        if key not in self._ids:
            found = self._call(lambda: self._client.get_by_name(collection, entity_fqn))
            if found is None or not found.get("id"):
                return None
            self._ids[key] = str(found["id"])
        return self._ids[key]
