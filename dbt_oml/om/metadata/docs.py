"""What OpenLineage events say about dbt nodes and tests, read for OpenMetadata (pure).

The OpenMetadata transport acts on dbt metadata only when events carry dbt-oml's own facets
(`dbt_oml_node` on a model's output, `dbt_oml_tests` on a test's run and on the invocation's end;
see dbt_oml.events.node_facets), so events of any other producer pass through unchanged. The
standard facets of the same dataset give the rest: `documentation`, `schema` (columns,
descriptions) and the job's `sql` facet (compiled SQL).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from dbt_oml.om.tables import TableRef, complete, table_ref

NODE_FACET = "dbt_oml_node"
TESTS_FACET = "dbt_oml_tests"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True)
class ColumnDoc:
    name: str
    type: str | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()
    om_tags: tuple[str, ...] = ()
    glossary: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeDoc:
    """A model, seed or snapshot as its event describes it (one output dataset)."""

    namespace: str
    name: str
    unique_id: str
    resource_type: str
    description: str | None = None
    columns: tuple[ColumnDoc, ...] = ()
    raw_sql: str | None = None
    sql: str | None = None
    path: str | None = None
    project: str | None = None
    tags: tuple[str, ...] = ()
    om_tags: tuple[str, ...] = ()
    glossary: tuple[str, ...] = ()
    tier: str | None = None
    owners: tuple[str, ...] = ()
    inputs: tuple[tuple[str, str, TableRef | None], ...] = ()
    """(namespace, name, table) of each input: its hierarchy facet keeps a dotted name whole."""
    complete: bool = False
    """The columns are authoritative (catalog.json or the warehouse), not the YAML's alone."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DbtTestDoc:
    """One dbt test result of a run."""

    unique_id: str
    name: str
    type: str
    generic: bool
    status: str
    timestamp: int
    """When it ended, in milliseconds since the epoch (what OM keys results by)."""
    namespace: str
    dataset: str
    column: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    message: str | None = None
    failures: int | None = None
    description: str | None = None


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str) and v) if isinstance(value, list) else ()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _columns(dataset: Mapping[str, Any], hints: Mapping[str, Any]) -> tuple[ColumnDoc, ...]:
    fields = ((dataset.get("facets") or {}).get("schema") or {}).get("fields") or []
    extra = {
        str(c.get("name")).lower(): c for c in hints.get("columns") or [] if isinstance(c, dict)
    }
    out = []
    for column in fields:
        if not isinstance(column, Mapping) or not column.get("name"):
            continue
        more = extra.pop(str(column["name"]).lower(), {})
        out.append(
            ColumnDoc(
                name=str(column["name"]),
                type=_text(column.get("type")),
                description=_text(column.get("description")),
                tags=_strings(more.get("tags")),
                om_tags=_strings(more.get("omTags")),
                glossary=_strings(more.get("glossaryTerms")),
            )
        )
    return tuple(out)


def node_docs(events: Iterable[Mapping[str, Any]]) -> list[NodeDoc]:
    """The dbt nodes of these events: each output that carries `dbt_oml_node` (the last wins)."""
    found: dict[tuple[str, str], NodeDoc] = {}
    for event in events:
        sql = ((event.get("job") or {}).get("facets") or {}).get("sql") or {}
        inputs = tuple(
            (str(d.get("namespace")), str(d.get("name")), table_ref(d))
            for d in event.get("inputs") or []
            if isinstance(d, Mapping)
        )
        for dataset in event.get("outputs") or []:
            facets = dataset.get("facets") or {} if isinstance(dataset, Mapping) else {}
            hints = facets.get(NODE_FACET)
            if not isinstance(hints, Mapping) or not hints.get("uniqueId"):
                continue
            key = (str(dataset.get("namespace")), str(dataset.get("name")))
            found[key] = NodeDoc(
                namespace=key[0],
                name=key[1],
                unique_id=str(hints["uniqueId"]),
                resource_type=str(hints.get("resourceType") or "model"),
                description=_text((facets.get("documentation") or {}).get("description")),
                columns=_columns(dataset, hints),
                complete=complete(dataset),
                raw_sql=_text(hints.get("rawSql")),
                sql=_text(sql.get("query")),
                path=_text(hints.get("path")),
                project=_text(hints.get("project")),
                tags=_strings(hints.get("tags")),
                om_tags=_strings(hints.get("omTags")),
                glossary=_strings(hints.get("glossaryTerms")),
                tier=_text(hints.get("tier")),
                owners=_strings(hints.get("owners")),
                inputs=inputs,
            )
    return list(found.values())


def millis(text: str) -> int | None:
    """Epoch milliseconds of an ISO time with a zone (`Z` or an offset); None otherwise.

    >>> millis("2026-12-01T05:23:57.820Z"), millis("2026-12-01T05:23:57")
    (1796102637820, None)
    """
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def dbt_tests(events: Sequence[Mapping[str, Any]]) -> list[DbtTestDoc]:
    """The dbt test results these events carry, once each (a test and its end time)."""
    found: dict[tuple[str, int], DbtTestDoc] = {}
    for event in events:
        facet = ((event.get("run") or {}).get("facets") or {}).get(TESTS_FACET) or {}
        for test in facet.get("tests") or [] if isinstance(facet, Mapping) else []:
            doc = _test_doc(test)
            if doc is not None:
                found[(doc.unique_id, doc.timestamp)] = doc
    return list(found.values())


def _test_doc(test: object) -> DbtTestDoc | None:
    if not isinstance(test, Mapping):
        return None
    tested = test.get("tested") or {}
    stamp = millis(str(test.get("completedAt") or ""))
    if not test.get("uniqueId") or not test.get("name") or stamp is None or not tested:
        return None
    params = test.get("params") or {}
    failures = test.get("failures")
    return DbtTestDoc(
        unique_id=str(test["uniqueId"]),
        name=str(test["name"]),
        type=str(test.get("type") or test["name"]),
        generic=bool(test.get("generic", True)),
        status=str(test.get("status") or "").lower(),
        timestamp=stamp,
        namespace=str(tested.get("namespace")),
        dataset=str(tested.get("name")),
        column=_text(test.get("column")),
        params={str(k): str(v) for k, v in params.items()} if isinstance(params, Mapping) else {},
        message=_text(test.get("message")),
        failures=failures if isinstance(failures, int) and not isinstance(failures, bool) else None,
        description=_text(test.get("description")),
    )
