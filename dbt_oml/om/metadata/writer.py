"""dbt's metadata on the tables dbt-oml owns in OpenMetadata: descriptions, tags, owners, the
dbt tab (data model), and the dbt tests (om.metadata.quality).

I/O adapter. For each output carrying dbt-oml's `dbt_oml_node` facet whose table is dbt-oml's own
(om.bootstrap: a foreign table is never touched), what OM's own dbt ingestion would write
(ref §9), and only what differs from what OM holds, so a re-run with nothing new writes nothing:

- the data model: `PUT /tables/{id}/dataModel` (`modelType DBT`, raw and compiled SQL, path,
  upstream tables, columns); its tags and owners are how labels and owners reach the table (OM
  adds the tags, and sets the owners of a table that has none);
- descriptions: a JSON Patch of `/description` and `/columns/<i>/description` where OM has none,
  or everywhere dbt's differs with `update_descriptions` (a bot's PUT never replaces one);
- with the data model switched off, tags and owners are patched instead.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from dbt_oml.om.bootstrap import Bootstrap, BootstrapReport
from dbt_oml.om.client import OpenMetadataClient
from dbt_oml.om.metadata.columns import kept_columns
from dbt_oml.om.metadata.docs import NodeDoc, dbt_tests, node_docs
from dbt_oml.om.metadata.labels import Label, Labels
from dbt_oml.om.metadata.quality import DataQuality
from dbt_oml.om.metadata.session import PartDeniedError, Session
from dbt_oml.om.names import fqn, sample
from dbt_oml.om.types import om_column

logger = logging.getLogger(__name__)

#: How many JSON-patch paths the line naming a PATCH lists before `, ...`.
_PATCH_PATHS_SHOWN: Final = 4

#: What a table listing must hold to compare against (ref §3.3 field names).
TABLE_FIELDS = "columns,tags,owners,dataModel"


@dataclass(slots=True)
class _Table:
    """One owned table being brought in line with its dbt node."""

    node: NodeDoc
    fqn: str
    entity: dict[str, Any]
    upstream: list[str]
    labels: list[Label] = field(default_factory=list)
    column_labels: dict[str, list[Label]] = field(default_factory=dict)
    owners: list[dict[str, Any]] = field(default_factory=list)


class DbtMetadata:
    """One per transport; `apply` once per batch, after bootstrap."""

    def __init__(
        self,
        client: OpenMetadataClient,
        *,
        call: Any,
        parts: Mapping[str, bool],
        update_descriptions: bool = False,
        classification: str = "dbtTags",
    ) -> None:
        self.session = Session(client, call=call, parts=parts)
        self.labels = Labels(self.session, classification=classification)
        self.quality = DataQuality(self.session)
        self.update_descriptions = update_descriptions
        self.skipped: set[str] = set()

    @property
    def counts_line(self) -> str | None:
        """The run summary's line, once dbt metadata was seen."""
        if not self.session.seen:
            return None
        return "dbt metadata in OpenMetadata: " + self.session.counts.line(self.session.enabled)

    def apply(
        self,
        node_events: Sequence[Mapping[str, Any]],
        events: Sequence[Mapping[str, Any]],
        *,
        report: BootstrapReport,
        bootstrap: Bootstrap,
    ) -> None:
        """Write what `node_events` (the ones OM processes) and `events` (any) carry."""
        nodes, tests = node_docs(node_events), dbt_tests(events)
        if not nodes and not tests:
            return
        self.session.seen = True
        for node in nodes:
            with contextlib.suppress(PartDeniedError):
                self._table(node, report, bootstrap)
        if tests and self.session.on("tests"):
            with contextlib.suppress(PartDeniedError):
                self.quality.apply(tests, bootstrap, skipped=self.skipped)

    def advise(self) -> None:
        """At the end of a run: the datasets left alone, in one INFO line."""
        if self.skipped:
            shown = sample(sorted(self.skipped))
            logger.info(
                "dbt metadata left out for %d dataset(s) that are not dbt-oml's own tables in "
                "OpenMetadata (foreign, or not there): %s",
                len(self.skipped),
                shown,
            )

    # -- one table ---------------------------------------------------------------------------

    def _table(self, node: NodeDoc, report: BootstrapReport, bootstrap: Bootstrap) -> None:
        found = self.session.call(
            "data_model", lambda: bootstrap.owned_table(node.namespace, node.name)
        )
        if found is None:
            self.skipped.add(f"{node.namespace}/{node.name}")
            return
        table_fqn, entity = found
        if table_fqn in report.created or table_fqn in report.updated:
            held = entity
            entity = self.session.call(
                "data_model", lambda: bootstrap.reload_table(table_fqn, held)
            )
        if table_fqn in report.created:
            self.session.counts.descriptions += _described(entity)
        table = _Table(node, table_fqn, entity, upstream=_upstream(node, report))
        with contextlib.suppress(PartDeniedError):
            if self.session.on("tags"):
                table.labels, table.column_labels = self._labels(node)
        with contextlib.suppress(PartDeniedError):
            if self.session.on("owners"):
                table.owners = self._owners(node)
        for part, step in (
            ("data_model", self._model),
            ("tags", self._patch_tags),
            ("owners", self._patch_owners),
            ("descriptions", self._descriptions),
        ):
            # labels and owners travel in the data model; patched only without it
            by_patch = part in ("tags", "owners") and self.session.on("data_model")
            if self.session.on(part) and not by_patch:
                with contextlib.suppress(PartDeniedError):
                    step(table)

    def _labels(self, node: NodeDoc) -> tuple[list[Label], dict[str, list[Label]]]:
        om_tags = [*node.om_tags, *([node.tier] if node.tier else [])]
        table = self.labels.labels(node.tags, om_tags, node.glossary)
        columns = {
            c.name: found
            for c in node.columns
            if (found := self.labels.labels(c.tags, c.om_tags, c.glossary))
        }
        return table, columns

    def _owners(self, node: NodeDoc) -> list[dict[str, Any]]:
        found = [self.labels.owner(who) for who in node.owners]
        unique = {(o["type"], o["id"]): o for o in found if o is not None}
        return list(unique.values())

    # -- the dbt tab -------------------------------------------------------------------------

    def _model(self, t: _Table) -> None:
        node, table_fqn, entity = t.node, t.fqn, t.entity
        table_labels, column_labels, owners = t.labels, t.column_labels, t.owners
        model = data_model(
            node,
            upstream=t.upstream,
            labels=table_labels,
            column_labels=column_labels,
            owners=owners,
        )
        if not node.complete:  # a partial schema never shrinks the dbt tab OM holds
            held = (entity.get("dataModel") or {}).get("columns")
            model["columns"] = kept_columns(held, model.get("columns") or [])
        missing_tags = _missing_labels(entity, table_labels, column_labels)
        adds_owners = bool(owners) and not entity.get("owners")
        if covers(entity.get("dataModel"), model) and not missing_tags and not adds_owners:
            return
        path = f"tables/{entity.get('id', '{id}')}/dataModel"
        reply = self.session.write("data_model", "PUT", path, model, table_fqn)
        if reply is not None and not reply.ok:
            return
        counts = self.session.counts
        counts.data_models += 1
        counts.tags += missing_tags
        counts.owners += adds_owners
        _store_model(entity, model, table_labels, column_labels, owners)

    # -- patches -----------------------------------------------------------------------------

    def _patch(
        self, part: str, table_fqn: str, entity: dict[str, Any], ops: list[dict[str, Any]]
    ) -> bool:
        if not ops:
            return False
        paths = sample((o["path"] for o in ops), limit=_PATCH_PATHS_SHOWN)
        what = f"{table_fqn} ({paths})"
        reply = self.session.write(part, "PATCH", f"tables/{entity.get('id', '{id}')}", ops, what)
        if reply is not None and not reply.ok:
            return False
        for op in ops:  # the cache follows what OM now holds
            *parents, last = op["path"].strip("/").split("/")
            target: Any = entity
            for key in parents:
                target = target[int(key)] if isinstance(target, list) else target[key]
            target[last] = op["value"]
        return True

    def _descriptions(self, t: _Table) -> None:
        node, table_fqn, entity = t.node, t.fqn, t.entity
        ops = []
        if _replace(entity.get("description"), node.description, self.update_descriptions):
            ops.append({"op": "add", "path": "/description", "value": node.description})
        ours = _by_name(node.columns)
        for i, column in enumerate(entity.get("columns") or []):
            doc = ours.get(str(column.get("name")).lower())
            text = doc.description if doc is not None else None
            if _replace(column.get("description"), text, self.update_descriptions):
                ops.append({"op": "add", "path": f"/columns/{i}/description", "value": text})
        if self._patch("descriptions", table_fqn, entity, ops):
            self.session.counts.descriptions += len(ops)

    def _patch_tags(self, t: _Table) -> None:
        table_fqn, entity, table_labels, column_labels = t.fqn, t.entity, t.labels, t.column_labels
        ops = []
        new = _new_labels(entity.get("tags"), table_labels)
        if new:
            ops.append({"op": "add", "path": "/tags", "value": [*(entity.get("tags") or []), *new]})
        for i, column in enumerate(entity.get("columns") or []):
            new = _new_labels(column.get("tags"), column_labels.get(str(column.get("name")), []))
            if new:
                value = [*(column.get("tags") or []), *new]
                ops.append({"op": "add", "path": f"/columns/{i}/tags", "value": value})
        added = _missing_labels(entity, table_labels, column_labels)
        if self._patch("tags", table_fqn, entity, ops):
            self.session.counts.tags += added

    def _patch_owners(self, t: _Table) -> None:
        table_fqn, entity, owners = t.fqn, t.entity, t.owners
        if owners and not entity.get("owners"):
            op = {"op": "add", "path": "/owners", "value": owners}
            if self._patch("owners", table_fqn, entity, [op]):
                self.session.counts.owners += 1


# -- pure helpers ------------------------------------------------------------------------------


def data_model(
    node: NodeDoc,
    *,
    upstream: list[str],
    labels: list[Label],
    column_labels: Mapping[str, list[Label]],
    owners: list[dict[str, Any]],
) -> dict[str, Any]:
    """The `DataModel` body OM's dbt ingestion sends (ref §9.3), without empty fields."""
    columns = []
    for position, column in enumerate(node.columns, start=1):
        body = {
            **om_column(column.name, column.type, column.description),
            "ordinalPosition": position,
        }
        if column_labels.get(column.name):
            body["tags"] = column_labels[column.name]
        columns.append(body)
    model: dict[str, Any] = {
        "modelType": "DBT",
        "resourceType": node.resource_type,
        "description": node.description,
        "path": node.path,
        "rawSql": node.raw_sql,
        "sql": node.sql,
        "upstream": upstream,
        "owners": [{"id": o["id"], "type": o["type"]} for o in owners],
        "tags": labels,
        "columns": columns,
        "dbtSourceProject": node.project,
    }
    return {k: v for k, v in model.items() if v not in (None, [], "")}


def covers(held: Any, wanted: Any) -> bool:
    """Whether OM's stored value holds everything `wanted` says (OM may add fields).

    >>> covers({"a": 1, "b": [{"x": 1, "y": 2}]}, {"b": [{"x": 1}]}), covers([1], [1, 2])
    (True, False)
    """
    if isinstance(wanted, Mapping):
        return isinstance(held, Mapping) and all(covers(held.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(held, list)
            and len(held) == len(wanted)
            and all(covers(h, w) for h, w in zip(held, wanted, strict=True))
        )
    return bool(held == wanted)


def _upstream(node: NodeDoc, report: BootstrapReport) -> list[str]:
    """FQNs of the node's input tables that OM has (bootstrap ensured them in this batch)."""
    out = []
    for namespace, name, ref in node.inputs:
        service = report.services.get(namespace)
        if ref is not None and service is not None and (namespace, name) in report.ensured:
            out.append(fqn(service, ref.database, ref.schema, ref.table))
    return list(dict.fromkeys(out))


def _by_name(columns: Sequence[Any]) -> dict[str, Any]:
    return {str(c.name).lower(): c for c in columns}


def _replace(held: Any, ours: str | None, update: bool) -> bool:
    return bool(ours) and (not held or (update and held != ours))


def _new_labels(held: Any, wanted: list[Label]) -> list[Label]:
    have = {label.get("tagFQN") for label in held or [] if isinstance(label, Mapping)}
    return [label for label in wanted if label["tagFQN"] not in have]


def _missing_labels(
    entity: Mapping[str, Any], table: list[Label], columns: Mapping[str, list[Label]]
) -> int:
    """How many of these labels the table and its columns (by exact name) lack."""
    missing = len(_new_labels(entity.get("tags"), table))
    for column in entity.get("columns") or []:
        missing += len(
            _new_labels(column.get("tags"), list(columns.get(str(column.get("name")), [])))
        )
    return missing


def _store_model(
    entity: dict[str, Any],
    model: dict[str, Any],
    table_labels: list[Label],
    column_labels: Mapping[str, list[Label]],
    owners: list[dict[str, Any]],
) -> None:
    """What OM does with a data model (ref §9.3), in the cache: tags added, owners if none."""
    entity["dataModel"] = model
    entity["tags"] = [*(entity.get("tags") or []), *_new_labels(entity.get("tags"), table_labels)]
    for column in entity.get("columns") or []:
        wanted = list(column_labels.get(str(column.get("name")), []))
        column["tags"] = [*(column.get("tags") or []), *_new_labels(column.get("tags"), wanted)]
    if owners and not entity.get("owners"):
        entity["owners"] = owners


def _described(entity: Mapping[str, Any]) -> int:
    """Descriptions a table bootstrap just created carries (they are dbt's)."""
    columns = entity.get("columns") or []
    return bool(entity.get("description")) + sum(bool(c.get("description")) for c in columns)
