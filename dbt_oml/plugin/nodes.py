"""Plugin mode: each model's, seed's and snapshot's COMPLETE/FAIL as soon as dbt finishes it.

At dbt's `NodeFinished` (in the dbt thread that ran the node) the node's columns and those of
the relations it reads are read through the adapter, its column lineage is derived from its
compiled SQL with the upstream columns known so far (dbt runs parents first), through the
project's lineage cache (a model unchanged since the last run is not analysed again), and the
event is built exactly as the end of the run would build it. The event is then queued behind the
node's START for the listener thread, which delivers; a full queue sends it to the outbox
instead. A node that cannot be done here (no compiled SQL file, a failed query) is left to the
end of the run.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final

from dbt_oml.artifacts import (
    Catalog,
    Manifest,
    Node,
    NodeResult,
    RunArtifacts,
    RunResults,
    Timing,
    read_manifest,
)
from dbt_oml.dbt.relation_columns import dbt_adapter
from dbt_oml.dbt.runner import compiled_file
from dbt_oml.events.node_events import EventBuilder
from dbt_oml.lineage.batch import ANALYSED_TYPES, analyse_models
from dbt_oml.pipeline.lineage import NodeLineage, RelationsRead, seed_headers

if TYPE_CHECKING:
    from dbt_common.events.base_types import EventMsg
    from openlineage.client.event_v2 import RunEvent

    from dbt_oml.dbt.runner import DbtContext
    from dbt_oml.pipeline.live import LiveEmitter

logger = logging.getLogger(__name__)

#: Node events waiting for the listener thread; beyond this they go to the outbox (a slow
#: backend never holds dbt's threads or a run's worth of events in memory).
MAX_QUEUED: Final = 1000

#: Resource types whose terminal event goes out as the node finishes (tests stay at the end).
PER_NODE_TYPES: Final = frozenset({"model", "seed", "snapshot"})


class NodeEnds:
    """The per-node terminal events of one plugin-mode command."""

    def __init__(
        self,
        live: LiveEmitter,
        *,
        enqueue: Callable[[Callable[[], None]], None],
        queued: Callable[[], int],
        node_starts: dict[str, datetime],
    ) -> None:
        self.live = live
        self.enqueue = enqueue
        self.queued = queued
        self.node_starts = node_starts
        self.sent: set[str] = set()
        """Run ids whose terminal event went out per node (the end of the run skips them)."""
        self._lock = threading.Lock()
        self._builder: EventBuilder | None = None
        self._manifest: Manifest | None = None
        self._loaded = False
        self._relations = RelationsRead()
        self.lineage = NodeLineage()
        """Models analysed here, with the disk cache they used (the end of the run prunes it)."""
        self._seeds: dict[str, tuple[str, ...]] = {}

    def on_node_finished(self, event: EventMsg, context: DbtContext | None) -> None:
        """In dbt's thread; raises nothing dbt-related is left to handle (the caller catches)."""
        result = _result_of(event)
        if context is None or result is None or result.status == "skipped":
            return
        with self._lock:
            built = self._build(result, context)
        if built is None:
            return
        self.sent.add(built.run.runId)
        live = self.live

        def deliver() -> None:
            _, _, delivery = live.wired()
            live.report.events_built += 1
            delivery.send(built)

        if self.queued() >= MAX_QUEUED and live.delivery is not None:
            live.report.events_built += 1
            live.delivery.keep(built)
        else:
            self.enqueue(deliver)

    def _build(self, result: NodeResult, context: DbtContext) -> RunEvent | None:
        builder = self._builder_for(context)
        if builder is None:
            return None
        node = builder.manifest.get(result.unique_id)
        started = self.node_starts.get(result.unique_id)
        if node is None or started is None or node.resource_type not in PER_NODE_TYPES:
            return None
        if not builder.emits_for(node):
            return None
        sql = None
        if node.resource_type != "seed":
            sql = compiled_file(context.target_path, node)
            if sql is None:
                return None  # the end of the run has run_results.json's compiled code
        result = replace(result, compiled_code=sql)
        adapter = dbt_adapter()
        if adapter is None:
            return None
        wanted = [node, *builder.manifest.relations_read(node)]
        self._relations.read_now(adapter, builder.manifest, wanted)
        if result.status == "success" and node.resource_type in ANALYSED_TYPES and sql:
            self._analyse(builder, node, result, context)
        return builder.node_end(result, started)

    def _builder_for(self, context: DbtContext) -> EventBuilder | None:
        if self._loaded:
            return self._builder
        live = self.live.builder
        if live is None:
            return None  # the listener has not set up the run yet: this node waits for the end
        self._loaded = True
        manifest = read_manifest(context.target_path / "manifest.json")
        if manifest.invocation_id != context.invocation_id:
            return None
        self._manifest = manifest
        self._seeds = seed_headers(manifest, context.project_root)
        self._builder = EventBuilder(
            invocation=live.invocation,
            namespaces=live.namespaces,
            settings=live.settings,
            manifest=manifest,
            catalog=Catalog(path="adapter", generated_at=None, columns=self._relations.columns),
            lineage=self.lineage,
        )
        return self._builder

    def _analyse(
        self, builder: EventBuilder, node: Node, result: NodeResult, context: DbtContext
    ) -> None:
        if not self.live.settings.lineage.column_lineage:
            return
        manifest = builder.manifest
        nodes = dict(manifest.nodes)
        nodes[node.unique_id] = replace(node, compiled_code=result.compiled_code)
        # the schema holds the node and what it reads (a schema of every relation known so far
        # would grow with the run); the engine spells a name as the first relation of the
        # manifest naming it does (as with catalog.json), which `spelling` keeps across the run
        around = {node.unique_id, *(n.unique_id for n in manifest.relations_read(node))}
        columns = self._relations.columns
        catalog = {uid: columns[uid] for uid in manifest.nodes if uid in around and uid in columns}
        artifacts = RunArtifacts(
            manifest=replace(manifest, nodes=nodes),
            run_results=RunResults(
                path="",
                dbt_version=context.dbt_version,
                invocation_id=context.invocation_id,
                invocation_started_at=None,
                generated_at=None,
                command=context.command,
                results=(result,),
            ),
            catalog=Catalog(path="adapter", generated_at=None, columns=catalog),
        )
        found = analyse_models(
            artifacts,
            wanted={node.unique_id},
            dialect=context.adapter_type,
            default_catalog=context.catalogs[0].alias if context.catalogs else None,
            seed_headers=self._seeds,
            spelling=self._relations.spelling(manifest.nodes[uid] for uid in catalog),
            cache=self.lineage.cache_for(
                context.target_path, self.live.settings, project=context.project_name
            ),
        )
        lineage = found.models.get(node.unique_id)
        if lineage is not None:
            self.lineage[node.unique_id] = lineage
        elif node.unique_id in found.opaque:
            self.live.report.opaque[node.unique_id] = found.opaque[node.unique_id]


def _result_of(event: EventMsg) -> NodeResult | None:
    """A NodeFinished event's result, as run_results.json records it."""
    data: Any = event.data
    info, result = data.node_info, data.run_result
    if not info.unique_id or str(info.resource_type) not in PER_NODE_TYPES:
        return None
    rows = _rows_affected(result.adapter_response)
    return NodeResult(
        unique_id=str(info.unique_id),
        status=str(result.status or "unknown").lower(),
        message=str(result.message) or None,
        timing=tuple(
            Timing(
                name=str(t.name), started_at=_time(t.started_at), completed_at=_time(t.completed_at)
            )
            for t in result.timing_info
        ),
        rows_affected=rows,
        failures=None,  # a test's count; tests are sent at the end of the run
    )


def _rows_affected(response: Any) -> int | None:
    try:
        value = response["rows_affected"]
    except (KeyError, TypeError, ValueError):
        return None
    if isinstance(value, (int, float)) and value >= 0 and float(value).is_integer():
        return int(value)
    return None


def _time(stamp: Any) -> datetime | None:
    if stamp is None or (not stamp.seconds and not stamp.nanos):
        return None
    value: datetime = stamp.ToDatetime(tzinfo=timezone.utc)
    return value
