"""The copy of an event that OpenMetadata gets: what OM can read, nothing it would choke on.

Pure. The event itself is never changed (the outbox and other transports keep the original);
the copy differs in what OM's 1.12/2.0 endpoints need (docs/reference/openmetadata-api.md §1.4,
§2.2, §2.5):

- `eventTime` in UTC with a literal `Z` and milliseconds;
- every schema field has a `type` (OM refuses the whole batch otherwise: 400
  `[query param type must not be null]`); an unknown one is `UNKNOWN`;
- inputs OM can never resolve (local files: namespace `file`) are left out, with a note;
- each dataset whose OM service is known carries OM's own `datasource` facet naming it, so OM's
  resolver finds the exact table without `namespaceToServiceMapping` (which a bot cannot read);
- `columnLineage` is also in `outputFacets` (OM 1.12 reads it only there).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dbt_oml.times import format_time

#: Namespaces OM resolves to neither a table nor a container.
UNRESOLVABLE_NAMESPACES = frozenset({"file"})
#: Object-storage namespaces (OM's normaliser, ref §2.3): containers, not tables.
STORAGE_PREFIXES = ("gs://", "s3://", "s3a://", "abfss://", "abfs://", "wasbs://", "adl://")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://\S+$")


def om_time(value: str) -> str:
    """An ISO-8601 time as OM 2.0 parses it correctly: UTC, `Z`, three fractional digits.

    >>> om_time("2026-11-30T03:55:00.123456+00:00"), om_time("2026-11-30T04:55:00+01:00")
    ('2026-11-30T03:55:00.123Z', '2026-11-30T03:55:00.000Z')
    """
    return format_time(datetime.fromisoformat(value.replace("Z", "+00:00")))


@dataclass(slots=True)
class Prepared:
    """An event as OM will get it, and what was left out of it."""

    event: dict[str, Any]
    dropped: list[str] = field(default_factory=list)

    @property
    def postable(self) -> bool:
        """Whether OM could draw anything from it (it needs inputs and outputs)."""
        return bool(self.event.get("inputs")) and bool(self.event.get("outputs"))

    @property
    def edges(self) -> int:
        """The table edges OM must draw from it: every table input to every output.

        Inputs in object storage are sent (OM 2.0 may resolve containers) but not counted:
        whether OM 1.12/2.0 draws them is unverified (ref §2.3).
        """
        tables = [
            d
            for d in self.event.get("inputs") or []
            if not str(d.get("namespace", "")).lower().startswith(STORAGE_PREFIXES)
        ]
        return len(tables) * len(self.event.get("outputs") or [])


def _typed(fields: list[Any]) -> list[Any]:
    out = []
    for item in fields:
        if not isinstance(item, dict):
            out.append(item)
            continue
        typed = {**item, "type": item.get("type") or "UNKNOWN"}
        if isinstance(typed.get("fields"), list):
            typed["fields"] = _typed(typed["fields"])
        out.append(typed)
    return out


def _dataset(dataset: dict[str, Any], services: Mapping[str, str]) -> None:
    facets = dataset.get("facets")
    if not isinstance(facets, dict):
        return
    schema = facets.get("schema")
    if isinstance(schema, dict) and isinstance(schema.get("fields"), list):
        schema["fields"] = _typed(schema["fields"])
    service = services.get(str(dataset.get("namespace")))
    if service:
        source: dict[str, Any] = {"name": service}
        if _URI.match(str(dataset.get("namespace"))):
            source["uri"] = dataset["namespace"]
        facets["datasource"] = source


def prepare(
    event: Mapping[str, Any],
    *,
    services: Mapping[str, str],
    protected: Collection[tuple[str, str]] = (),
    copy_column_lineage: bool = True,
) -> Prepared:
    """The OM copy of one event.

    Args:
        services: namespace -> OM database service (for OM's `datasource` facet).
        protected: (namespace, name) of inputs to leave out because OM holds column lineage on
            their edge that this event would replace with none (the per-model guard).
        copy_column_lineage: also put `columnLineage` into `outputFacets`.
    """
    out: dict[str, Any] = copy.deepcopy(dict(event))
    prepared = Prepared(out)
    out["eventTime"] = om_time(str(out["eventTime"]))
    inputs = []
    for dataset in out.get("inputs") or []:
        key = (str(dataset.get("namespace")), str(dataset.get("name")))
        if key[0] in UNRESOLVABLE_NAMESPACES:
            prepared.dropped.append(f"{key[0]}:{key[1]}")
        elif key not in protected:
            inputs.append(dataset)
    out["inputs"] = inputs
    for dataset in [*inputs, *(out.get("outputs") or [])]:
        _dataset(dataset, services)
    if copy_column_lineage:
        for dataset in out.get("outputs") or []:
            facet = (dataset.get("facets") or {}).get("columnLineage")
            if facet and "columnLineage" not in (dataset.get("outputFacets") or {}):
                dataset.setdefault("outputFacets", {})["columnLineage"] = facet
    return prepared


def column_lineage_where_om_reads_it(event: Any) -> Any:
    """An OpenLineage RunEvent (the client's object) with each output's `columnLineage` also in
    its `outputFacets`, the only place OM 1.12 reads it: for events that reach OM through a
    transport that is not ours (`http` to OM's endpoint). In place; the same facet object, so
    nothing is built twice."""
    for output in getattr(event, "outputs", None) or ():
        facet = (output.facets or {}).get("columnLineage")
        if facet is not None and "columnLineage" not in (output.outputFacets or {}):
            output.outputFacets = {**(output.outputFacets or {}), "columnLineage": facet}
    return event


def has_column_lineage(dataset: Mapping[str, Any]) -> bool:
    """Whether an output dataset carries column lineage (in `facets` or `outputFacets`)."""
    for container in ("facets", "outputFacets"):
        facet = (dataset.get(container) or {}).get("columnLineage")
        if isinstance(facet, Mapping) and facet.get("fields"):
            return True
    return False
