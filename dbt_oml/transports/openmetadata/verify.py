"""Read-back: what a run's events should have made in OpenMetadata, checked against what it holds.

For every output table of the events OM processes: the table itself, and each input's edge into
it, with column lineage where the event carries some. Each is present, missing or different,
with the reason (an unmapped namespace, a table OM does not have, an edge that is not there,
an edge without the column lineage the event gave it). Reads only (GET), through the
transport's client and its retry budget; the services come from a dry bootstrap, as
`--dry-run`'s plan finds them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from dbt_oml.om.names import fqn
from dbt_oml.om.prepare import prepare
from dbt_oml.om.tables import table_ref

if TYPE_CHECKING:
    from collections.abc import Callable

    from dbt_oml.om.bootstrap import BootstrapReport
    from dbt_oml.om.client import OpenMetadataClient

    Call = Callable[[Callable[[], Any]], Any]
    """The run's retry budget around one request."""

PRESENT: Final = "present"
MISSING: Final = "missing"
DIFFERENT: Final = "different"


@dataclass(frozen=True, slots=True)
class Check:
    """One thing the events should have made in OM, and whether OM holds it."""

    kind: str
    """`table`, `edge` or `column lineage`."""
    name: str
    state: str
    reason: str = ""


def checks_of(
    processed: list[dict[str, Any]],
    report: BootstrapReport,
    *,
    client: OpenMetadataClient,
    call: Call,
) -> list[Check]:
    """Every table and edge these events (those OM processes) should have given OM, as OM
    holds it now; `report`: a dry bootstrap's (the services each namespace maps to)."""
    checks: dict[tuple[str, str], Check] = {}
    for event in processed:
        copy = prepare(event, services=report.services).event
        for output in copy.get("outputs") or []:
            for check in _output_checks(copy, output, report, client=client, call=call):
                checks.setdefault((check.kind, check.name), check)
    return list(checks.values())


def _output_checks(
    event: Mapping[str, Any],
    output: Mapping[str, Any],
    report: BootstrapReport,
    *,
    client: OpenMetadataClient,
    call: Call,
) -> list[Check]:
    target, why = _fqn(output, report)
    if target is None:
        return [Check("table", f"{output.get('namespace')}/{output.get('name')}", MISSING, why)]
    if call(lambda: client.get_by_name("tables", target)) is None:
        return [Check("table", target, MISSING, "OpenMetadata has no such table")]
    checks = [Check("table", target, PRESENT)]
    upstream = call(lambda: client.upstream_edges(target))
    lineage = ((output.get("facets") or {}).get("columnLineage") or {}).get("fields") or {}
    for source in event.get("inputs") or []:
        origin, why = _fqn(source, report)
        if origin is None:
            name = f"{source.get('namespace')}/{source.get('name')} -> {target}"
            checks.append(Check("edge", name, MISSING, why))
            continue
        name = f"{origin} -> {target}"
        if origin not in upstream:
            checks.append(Check("edge", name, MISSING, "OpenMetadata holds no such edge"))
        elif _read_columns(lineage, source) and not upstream[origin]:
            held = call(functools.partial(client.get_by_name, "tables", origin, fields="columns"))
            reason = "the edge holds no column lineage, the event gave it some" + _why_not(
                held, _read_columns(lineage, source)
            )
            checks.append(Check("column lineage", name, DIFFERENT, reason))
        else:
            checks.append(Check("edge", name, PRESENT))
    return checks


def _fqn(dataset: Mapping[str, Any], report: BootstrapReport) -> tuple[str | None, str]:
    namespace = str(dataset.get("namespace"))
    service = report.services.get(namespace)
    if service is None:
        return None, f"unmapped namespace {namespace}: no OpenMetadata service for it"
    ref = table_ref(dataset)
    if ref is None:
        return None, f"{dataset.get('name')} names no table"
    return fqn(service, ref.database, ref.schema, ref.table), ""


def _read_columns(fields: Mapping[str, Any], source: Mapping[str, Any]) -> set[str]:
    """The input's columns the output's column lineage reads."""
    key = (source.get("namespace"), source.get("name"))
    return {
        str(f.get("field"))
        for column in fields.values()
        if isinstance(column, Mapping)
        for f in column.get("inputFields") or []
        if isinstance(f, Mapping) and (f.get("namespace"), f.get("name")) == key
    }


def _why_not(table: Mapping[str, Any] | None, read: set[str]) -> str:
    """OM keeps an edge's column lineage only between columns the tables hold (ref §2.5)."""
    held = {str(c.get("name")).lower() for c in (table or {}).get("columns") or []}
    unknown = sorted(c for c in read if c.lower() not in held)
    if not unknown:
        return ""
    shown = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")  # noqa: PLR2004
    what = "none of the columns it reads" if len(unknown) == len(read) else "not the columns"
    return f" (OpenMetadata's table holds {what}: {shown})"
