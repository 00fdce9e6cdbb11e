"""What an OM table should hold for a dataset: its body on create, and the rules of an update.

Pure. Only an authoritative schema (the `dbt_oml_schema` facet says `complete`: catalog.json or
the warehouse's own columns) may change a table's column list; a partial one (declared columns)
adds columns OM lacks and types OM does not know, never removes or blanks one. Descriptions OM
holds are never replaced by an empty one.
"""

from __future__ import annotations

from collections.abc import Mapping
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


def table_ref(dataset: Mapping[str, Any]) -> TableRef | None:
    namespace, name = str(dataset.get("namespace", "")), str(dataset.get("name", ""))
    if namespace.lower().startswith(STORAGE_PREFIXES) or namespace == "file":
        return None  # storage and local files are not tables
    parts = name.split(".")
    if len(parts) < TABLE_NAME_PARTS:
        return None
    return TableRef(namespace, parts[-3], parts[-2], parts[-1])


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
    own description is only filled when OM has none (om.dbt_metadata replaces them on request).
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
