"""The per-model column-lineage guard of the OpenMetadata transport.

OM replaces an edge's whole `lineageDetails` on every post. For an event whose output carries
no column lineage, the guard names the inputs whose edge into that output holds column lineage,
in OM or from an earlier event of the same batch, so that the OM copy of the event leaves them
out and the edge stays as it is.

What OM holds is read once per table per batch (`start` clears it): a later batch of the same
run, or of the relay's long-lived transport, sees what the earlier ones posted. A table's
service is the bootstrap report's (as OM spells it) or, when bootstrap did not run, the
mapping's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dbt_oml.om.names import fqn
from dbt_oml.om.prepare import has_column_lineage
from dbt_oml.om.services import ServiceMapping
from dbt_oml.om.tables import TableRef, dataset_refs, table_ref
from dbt_oml.transports.openmetadata.answers import outputs_of

#: table FQN -> {upstream table FQN -> whether that edge carries column lineage}
Upstream = Callable[[str], dict[str, bool]]


class LineageGuard:
    """Which inputs an event must leave out so that OM keeps the column lineage it holds."""

    def __init__(self, upstream: Upstream) -> None:
        self._read = upstream
        self._held: dict[str, dict[str, bool]] = {}
        #: output FQN -> upstream FQNs given column lineage by earlier events of this batch
        self._given: dict[str, set[str]] = {}
        self._services: Mapping[str, str] = {}
        self._mapping: ServiceMapping | None = None
        #: tables whose OM column lineage was kept this run (for the INFO line)
        self.guarded: set[str] = set()

    def start(self, services: Mapping[str, str], mapping: ServiceMapping | None) -> None:
        """A new batch: forget what OM held, with the services bootstrap found (may be none)."""
        self._held, self._given = {}, {}
        self._services, self._mapping = services, mapping

    def protected(self, event: Mapping[str, Any]) -> set[tuple[str, str]]:
        """(namespace, name) of the inputs whose edge holds column lineage this event lacks.

        Call for each event of a batch in order: an event with column lineage marks its edges
        as held for the later ones.
        """
        guarded: set[tuple[str, str]] = set()
        known = dataset_refs(event.get("inputs") or [])
        for output in outputs_of(event):
            table = self._fqn(table_ref(output))
            if table is None:
                continue
            if has_column_lineage(output):
                self._given.setdefault(table, set()).update(self._lineage_sources(output, known))
                continue
            for dataset in event.get("inputs") or []:
                source = table_ref(dataset)
                if source is not None and self._holds(table, source):
                    guarded.add((str(dataset["namespace"]), str(dataset["name"])))
                    self.guarded.add(table)
        return guarded

    def _service(self, namespace: str) -> str | None:
        found = self._services.get(namespace)
        if found is None and self._mapping is not None:
            found = self._mapping.service(namespace)[0]
        return found

    def _fqn(self, ref: TableRef | None) -> str | None:
        service = self._service(ref.namespace) if ref is not None else None
        if ref is None or service is None:
            return None
        return fqn(service, ref.database, ref.schema, ref.table)

    def _lineage_sources(
        self, output: Mapping[str, Any], known: Mapping[tuple[str, str], TableRef]
    ) -> set[str]:
        """FQNs (or `?.db.schema.table` when unmapped) of the inputs the column lineage names
        (an `inputFields` entry is the event's input of that namespace and name: `known`)."""
        out: set[str] = set()
        for container in ("facets", "outputFacets"):
            facet = (output.get(container) or {}).get("columnLineage") or {}
            for spec in (facet.get("fields") or {}).values():
                for field in (spec or {}).get("inputFields") or []:
                    ref = table_ref(field, known)
                    if ref is not None:
                        out.add(self._fqn(ref) or fqn("?", ref.database, ref.schema, ref.table))
        return out

    def _holds(self, table: str, source: TableRef) -> bool:
        """Whether the edge source -> table carries column lineage (exact FQN, else by suffix)."""
        if table not in self._held:
            self._held[table] = self._read(table)
        held = {**self._held[table], **dict.fromkeys(self._given.get(table, ()), True)}
        exact = self._fqn(source)
        if exact is not None:
            return held.get(exact, False)
        tail = "." + fqn(source.database, source.schema, source.table)
        return any(has and name.endswith(tail) for name, has in held.items())
