"""What an OM table should hold for a dataset: its body on create, and the rules of an update.

Pure. Only an authoritative schema (the `dbt_oml_schema` facet says `complete`: catalog.json or
the warehouse's own columns) may change a table's column list; a partial one (declared columns)
adds columns OM lacks and types OM does not know, never removes or blanks one. Descriptions OM
holds are never replaced by an empty one.

A dataset's table is the last three parts of its dot-joined name, unless its OpenLineage
`hierarchy` facet names the DATABASE, SCHEMA and TABLE (a part that holds a dot itself);
column-lineage `inputFields` carry no facets, so they are looked up among the event's datasets.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dbt_oml.om.names import TABLE_NAME_PARTS, check_name
from dbt_oml.om.prepare import STORAGE_PREFIXES
from dbt_oml.om.types import TYPE_FIELDS, om_column

#: The dataset facet dbt-oml adds to say where a schema came from (see events).
SCHEMA_SOURCE_FACET = "dbt_oml_schema"


@dataclass(frozen=True, slots=True)
class TableRef:
    namespace: str
    database: str
    schema: str
    table: str

    @property
    def dotted(self) -> bool:
        """Whether a part holds a `.` (OM's OpenLineage resolver cannot find such a table)."""
        return any("." in part for part in (self.database, self.schema, self.table))


def table_ref(
    dataset: Mapping[str, Any], known: Mapping[tuple[str, str], TableRef] | None = None
) -> TableRef | None:
    """The table of a dataset: its `hierarchy` facet's levels, else `known` (the refs of the
    event's datasets, for an `inputFields` entry), else the last three parts of its name.

    >>> table_ref({"namespace": "duckdb://pod", "name": "warehouse.core.orders"}).table
    'orders'
    """
    namespace, name = str(dataset.get("namespace", "")), str(dataset.get("name", ""))
    if namespace.lower().startswith(STORAGE_PREFIXES) or namespace == "file":
        return None  # storage and local files are not tables
    levels = _hierarchy(dataset)
    if levels is not None:
        return TableRef(namespace, *levels)
    if known is not None and (namespace, name) in known:
        return known[(namespace, name)]
    parts = name.split(".")
    if len(parts) < TABLE_NAME_PARTS:
        return None
    return TableRef(namespace, parts[-3], parts[-2], parts[-1])


def _hierarchy(dataset: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(database, schema, table) from the `hierarchy` facet, when it names all three."""
    facet = (dataset.get("facets") or {}).get("hierarchy")
    levels = facet.get("hierarchy") if isinstance(facet, Mapping) else None
    if not isinstance(levels, list):
        return None
    by_type = {
        str(level.get("type", "")).upper(): level.get("name")
        for level in levels
        if isinstance(level, Mapping)
    }
    found = tuple(by_type.get(t) for t in ("DATABASE", "SCHEMA", "TABLE"))
    if not all(isinstance(part, str) and part for part in found):
        return None
    return found  # type: ignore[return-value]


def dataset_refs(datasets: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], TableRef]:
    """(namespace, name) -> table, for the datasets that are tables (to resolve inputFields)."""
    out = {}
    for dataset in datasets:
        ref = table_ref(dataset)
        if ref is not None:
            out[(ref.namespace, str(dataset.get("name", "")))] = ref
    return out


def candidates(namespace: str, name: str) -> Iterator[TableRef]:
    """The tables a bare dataset name may stand for: for `db.schema.table` that one; for a name
    of more parts, each way a part may hold a dot (the table first), then the last three parts.

    >>> [r.table for r in candidates("ns", "db.core.v1.orders")]
    ['v1.orders', 'orders', 'orders', 'orders']
    """
    parts = name.split(".")
    if len(parts) < TABLE_NAME_PARTS:
        return
    last = len(parts)
    for first_cut in range(1, last - 1):
        for second_cut in range(first_cut + 1, last):
            yield TableRef(
                namespace,
                ".".join(parts[:first_cut]),
                ".".join(parts[first_cut:second_cut]),
                ".".join(parts[second_cut:]),
            )
    if last > TABLE_NAME_PARTS:
        yield TableRef(namespace, parts[-3], parts[-2], parts[-1])


def _columns(dataset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    fields = ((dataset.get("facets") or {}).get("schema") or {}).get("fields")
    return [f for f in fields or [] if isinstance(f, Mapping) and f.get("name")]


def complete(dataset: Mapping[str, Any]) -> bool:
    """Whether the dataset's schema is authoritative (catalog.json or the warehouse itself)."""
    facet = (dataset.get("facets") or {}).get(SCHEMA_SOURCE_FACET) or {}
    return bool(facet.get("complete")) and bool(_columns(dataset))


def rank(dataset: Mapping[str, Any]) -> tuple[bool, int]:
    return complete(dataset), len(_columns(dataset))


def table_body(ref: TableRef, dataset: Mapping[str, Any], schema_fqn: str) -> dict[str, Any]:
    columns = [om_column(f["name"], f.get("type"), f.get("description")) for f in _columns(dataset)]
    body: dict[str, Any] = {
        "name": check_name(ref.table, kind="table"),
        "databaseSchema": schema_fqn,
        "tableType": "Regular",
        "columns": columns,
    }
    description = ((dataset.get("facets") or {}).get("documentation") or {}).get("description")
    if description:
        body["description"] = description
    return body


#: Column fields a PUT sends back (everything else OM computes itself).
_COLUMN_KEYS = (
    "name",
    *TYPE_FIELDS,
    "description",
    "constraint",
    "tags",
)


def _writable(column: Mapping[str, Any]) -> dict[str, Any]:
    return {k: column[k] for k in _COLUMN_KEYS if column.get(k) is not None}


def update(
    existing: Mapping[str, Any], body: Mapping[str, Any], *, authoritative: bool
) -> dict[str, Any] | None:
    """The PUT body for an owned table OM already has, or None when nothing would change.

    Authoritative columns replace OM's list (keeping the descriptions OM has: a bot's PUT never
    replaces them, so sending ours would only make a re-run write again); partial ones only add
    columns OM lacks and types OM does not know. Descriptions are never blanked, and the table's
    own description is only filled when OM has none (om.metadata.writer replaces them on request).
    """
    held = [_writable(c) for c in existing.get("columns") or []]
    by_name = {c["name"]: c for c in held}
    ours = list(body.get("columns") or [])
    if authoritative:
        columns = []
        for column in ours:
            before = by_name.get(column["name"], {})
            keep = {"description": before["description"]} if before.get("description") else {}
            columns.append({**column, **keep})
    else:
        columns = [dict(c) for c in held]
        for column in ours:
            held_column = by_name.get(column["name"])
            if held_column is None:
                columns.append(column)
            elif (
                held_column.get("dataType") in (None, "UNKNOWN") and column["dataType"] != "UNKNOWN"
            ):
                index = next(i for i, c in enumerate(columns) if c["name"] == column["name"])
                described = (
                    {"description": held_column["description"]}
                    if held_column.get("description")
                    else {}
                )
                columns[index] = {**column, **described}
    update: dict[str, Any] = {
        "name": body["name"],
        "databaseSchema": body["databaseSchema"],
        "tableType": existing.get("tableType") or body.get("tableType", "Regular"),
        "columns": columns,
    }
    description = existing.get("description") or body.get("description")
    if description:
        update["description"] = description
    if _shape(existing) == _shape(update):
        return None
    return update


def _shape(table: Mapping[str, Any]) -> tuple[Any, ...]:
    keys = ("name", "dataType", "dataLength", "precision", "scale", "arrayDataType", "description")
    columns = tuple(tuple(c.get(k) for k in keys) for c in table.get("columns") or [])
    return (columns, table.get("description") or None)
