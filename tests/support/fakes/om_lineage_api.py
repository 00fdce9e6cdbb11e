"""The stand-in's lineage endpoints: OpenLineage posts (11-21; ref §1, §2) and the lineage API
(PUT /lineage, GET /lineage/table/name/{fqn}, GET /lineage/getLineageEdge; ref §3.5, §3.6).

Functions of the FakeOpenMetadata they answer for (`fake`); om_lineage.py holds the resolver and
the mapper they use.
"""

from __future__ import annotations

import copy
import functools
import time
from typing import TYPE_CHECKING, Any

from tests.support.fakes.om_auth import OMError, Principal, authorize
from tests.support.fakes.om_entities import table_ref
from tests.support.fakes.om_http import Call
from tests.support.fakes.om_lineage import (
    Mapper,
    MapperError,
    batch_response,
    server_filter,
    single_response,
)
from tests.support.fakes.om_rules import check_openlineage

if TYPE_CHECKING:
    from tests.support.fakes.openmetadata import Answer, FakeOpenMetadata


def openlineage(fake: FakeOpenMetadata, call: Call, principal: Principal, *, batch: bool) -> Answer:
    body = call.json()  # (1) 401 came first; now the body: 400
    if fake.validate_schemas:
        events = check_openlineage(fake.schemas(), body, batch=batch)
    else:
        given = (body.get("events") if batch else [body]) if isinstance(body, dict) else None
        events = list(given or [])  # no checks at all (benchmarks)
        if not events:
            raise OMError(400, "[query param events must not be null]", rule="required")
    rejects = fake.event_rejects
    if rejects is not None and any(isinstance(e, dict) and rejects(e) for e in events):
        raise OMError(400, "Invalid request format", rule="format", detail="rejected event")
    authorize(principal, ["EditLineage"], "table")  # then the handler: 403
    if fake.settings.get("enabled", True) is not True:  # then the settings: 503
        raise OMError(
            503,
            "OpenLineage API is disabled",
            rule="disabled",
            body={
                "status": "failure",
                "message": "OpenLineage API is disabled",
                "lineageEdgesCreated": 0,
            },
        )
    mapper = Mapper(
        version=fake.version,
        settings=fake.settings,
        entities=fake.entities,
        principal=principal.name,
        write=functools.partial(write_edge, fake),
        fail=fake.event_failure,
    )
    if not batch:
        try:
            edges = mapper.apply(events[0])
        except MapperError as e:
            message = f"Error processing event: {e}"
            raise OMError(
                500,
                message,
                rule="mapper",
                body={"status": "failure", "message": message, "lineageEdgesCreated": 0},
            ) from e
        return 200, single_response(edges), []
    successful = skipped = created = 0
    failures = []
    for index, event in enumerate(events):
        try:
            written = mapper.apply(event)
        except MapperError as e:  # e.getMessage() may be null: Jackson then omits `reason`
            failure = {"index": index, "retriable": False}
            failures.append(failure | ({"reason": str(e)} if str(e) else {}))
            continue
        if written:
            successful, created = successful + 1, created + written
        else:
            skipped += 1
    return 200, batch_response(len(events), successful, skipped, created, failures), []


def write_edge(
    fake: FakeOpenMetadata, src: dict[str, Any], dst: dict[str, Any], details: dict[str, Any]
) -> None:
    if fake.edge_failure and fake.edge_failure(
        src["fullyQualifiedName"], dst["fullyQualifiedName"]
    ):
        raise RuntimeError("addLineage failed (scripted)")
    fake.edges[(src["id"], dst["id"])] = details  # (21) upsert: the whole details replaced


def add_lineage(fake: FakeOpenMetadata, call: Call, principal: Principal) -> Answer:
    """PUT /api/v1/lineage (ref §3.5): entity ids, EditLineage on both ends, 200 no body."""
    body = call.json()
    fake.check_body("api/lineage/addLineage.json", body)
    edge = _edge_of(body)
    ends = []
    for end in (edge["fromEntity"], edge["toEntity"]):
        kind, found = end["type"], fake.by_id(end["type"], end["id"])
        if found is None:
            raise OMError(404, f"{kind} instance for {end['id']} not found", rule="not-found")
        ends.append((kind, found))
    for kind, _ in ends:
        authorize(principal, ["EditLineage"], kind)
    details = copy.deepcopy(edge.get("lineageDetails") or {})
    pipeline = details.get("pipeline")
    if pipeline and fake.by_id(pipeline.get("type", "pipeline"), pipeline["id"]) is None:
        raise OMError(404, f"pipeline instance for {pipeline['id']} not found", rule="not-found")
    (src_kind, src), (dst_kind, dst) = ends
    if src_kind == dst_kind == "table" and details.get("columnsLineage"):
        details["columnsLineage"] = server_filter(details["columnsLineage"], src, dst) or None
    now = int(time.time() * 1000)
    details.setdefault("source", "Manual")
    details.update(createdAt=now, createdBy=principal.name, updatedAt=now, updatedBy=principal.name)
    details.setdefault("columnsLineage", None)
    details.setdefault("pipeline", None)
    write_edge(fake, src, dst, details)
    return 200, None, []


def _edge_of(body: Any) -> dict[str, Any]:
    """The edge of an AddLineage body; bean validation's 400 for what the handler needs, also
    when schemas are not checked (benchmarks)."""
    edge = body.get("edge") if isinstance(body, dict) else None
    if not isinstance(edge, dict):
        raise OMError(400, "[query param edge must not be null]", rule="required")
    for key in ("fromEntity", "toEntity"):
        end = edge.get(key)
        if not isinstance(end, dict) or not end.get("id") or not end.get("type"):
            raise OMError(400, f"[query param {key} must not be null]", rule="required")
    return edge


def lineage_edge(
    fake: FakeOpenMetadata, principal: Principal, from_id: str = "", to_id: str = ""
) -> dict[str, Any]:
    authorize(principal, ["ViewAll"], "table")
    details = fake.edges.get((from_id, to_id))
    if details is None:
        raise OMError(
            404, f"Lineage edge not found between {from_id} and {to_id}", rule="not-found"
        )
    return {"edge": details}


def read_lineage(
    fake: FakeOpenMetadata, principal: Principal, fqn: str, query: dict[str, str]
) -> dict[str, Any]:
    authorize(principal, ["ViewAll"], "table")
    table = fake.entities["table"].get(fqn)
    if table is None:
        raise OMError(404, f"table instance for {fqn} not found", rule="not-found")
    by_id = {t["id"]: t for t in fake.entities["table"].values()}
    nodes: dict[str, dict[str, Any]] = {}

    def walk(depth: int, upstream: bool) -> list[dict[str, Any]]:
        found, frontier, seen = [], {table["id"]}, set()
        for _ in range(depth):
            nxt = set()
            for (src, dst), details in fake.edges.items():
                near, far = (dst, src) if upstream else (src, dst)
                if near in frontier and (src, dst) not in seen and far in by_id:
                    seen.add((src, dst))
                    found.append({"fromEntity": src, "toEntity": dst, "lineageDetails": details})
                    nodes[far] = by_id[far]
                    nxt.add(far)
            frontier = nxt
        return found

    up = walk(int(query.get("upstreamDepth", 1)), upstream=True)
    down = walk(int(query.get("downstreamDepth", 1)), upstream=False)
    return {
        "entity": table_ref(table),
        "nodes": [table_ref(n) for n in nodes.values() if n["id"] != table["id"]],
        "upstreamEdges": up,
        "downstreamEdges": down,
    }
