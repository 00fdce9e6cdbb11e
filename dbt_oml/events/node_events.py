"""EventBuilder: the events of one dbt invocation's nodes (START, COMPLETE or FAIL, ABORT), with
their datasets (`datasets`) and runs (`runs`).

Pure: no I/O, no environment, no logging setup; clocks and ids are inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from openlineage.client.event_v2 import InputDataset, OutputDataset, RunEvent, RunState
from openlineage.client.facet_v2 import DatasetFacet, JobFacet, RunFacet

from dbt_oml.artifacts import Catalog, Column, Manifest, Node, NodeResult, RelationKey
from dbt_oml.events import facets, node_facets
from dbt_oml.events.datasets import DatasetsMixin
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.recent import Recent
from dbt_oml.events.runs import RunsMixin
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.namespaces import Namespaces

#: Node types that run as their own OpenLineage job, and their jobType.
JOB_TYPES: Mapping[str, str] = {"model": "MODEL", "seed": "SEED", "snapshot": "SNAPSHOT"}
#: Commands whose nodes get events; others get only the invocation's run.
BUILD_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "test", "retry"})
#: Nodes whose shared parts (facets, columns, files read) the builder remembers: at 2,000 models
#: 512 rebuild 62 of 2,198 nodes' facets once more, where all of them held 11 MiB to the end.
RECENT = 512
#: A node's terminal state by dbt status; skipped nodes get no run, any other status FAILs.
_TERMINAL: Mapping[str, RunState] = {"success": RunState.COMPLETE, "no-op": RunState.COMPLETE}
_FAILED = frozenset({"error", "fail", "runtime error", "partial success"})


class Lineages(Protocol):
    """Column lineage by model unique_id: a mapping, or lineage still arriving (a feed whose
    `get` waits for that model)."""

    def get(self, unique_id: str, /) -> ModelLineage | None: ...


@dataclass(slots=True)
class EventBuilder(DatasetsMixin, RunsMixin):
    """Builds the events of one invocation; holds the artifacts it enriches them from."""

    invocation: Invocation
    namespaces: Namespaces
    settings: EventSettings
    manifest: Manifest
    catalog: Catalog | None = None
    lineage: Lineages = field(default_factory=dict[str, ModelLineage])
    _columns: Recent[str, tuple[Column, ...]] = field(default_factory=lambda: Recent(RECENT))
    _relations: dict[RelationKey, Node] | None = None
    #: per recent node: its dataset facets (built once, shared by every event naming the dataset
    #: while it is remembered; a facet is never changed once built) and its column names by
    #: lower-case name
    _facets: Recent[str, dict[str, DatasetFacet]] = field(default_factory=lambda: Recent(RECENT))
    _names: Recent[str, dict[str, str]] = field(default_factory=lambda: Recent(RECENT))
    #: the facets of relations the SQL names that are no dbt node (few; kept for the run)
    _plain_facets: dict[tuple[str, str], dict[str, DatasetFacet]] = field(default_factory=dict)
    #: the file paths each recent SQL text reads (a node's START and COMPLETE ask for the same)
    _files: Recent[str, list[str]] = field(default_factory=lambda: Recent(RECENT))
    #: the run facets every run shares, and the parent facet of every node run (built once)
    _run_facets: dict[str, RunFacet] | None = None
    _parent_facet: dict[str, RunFacet] | None = None

    def _node_job_facets(self, node: Node, sql: str | None) -> dict[str, JobFacet]:
        producer = self.settings.producer
        out: dict[str, JobFacet] = {
            "jobType": facets.job_type(JOB_TYPES[node.resource_type], producer)
        }
        if sql:
            out["sql"] = facets.sql(sql, self.invocation.adapter_type, producer)
        if node.description:
            out["documentation"] = facets.job_documentation(node.description, producer)
        return out

    def emits_for(self, node: Node | None) -> bool:
        """Whether a node gets its own run: executed models (not ephemeral), seeds, snapshots."""
        return (
            node is not None
            and node.resource_type in JOB_TYPES
            and node.materialized != "ephemeral"
            and self.invocation.command in BUILD_COMMANDS
        )

    def node_start(self, unique_id: str, started_at: datetime) -> RunEvent | None:
        """START of one node, at its real start time (sent while dbt runs)."""
        node = self.manifest.get(unique_id)
        if node is None or not self.emits_for(node):
            return None
        return self.event(
            state=RunState.START,
            at=started_at,
            rid=self.node_run_id(unique_id, started_at),
            job=self.job_name(node),
            job_facets=self._node_job_facets(node, None),
            run_facets={
                **self.run_facets(),
                **self.parent_facet(),
                **facets.tags(node, self.settings.producer),
            },
            inputs=self.inputs(node, None),
            outputs=[self.output(node)],
        )

    def node_end(self, result: NodeResult, started_at: datetime) -> RunEvent | None:
        """COMPLETE or FAIL of one node at its real end time; skipped nodes get none."""
        node = self.manifest.get(result.unique_id)
        state = _TERMINAL.get(result.status, RunState.FAIL)
        if node is None or result.status == "skipped" or not self.emits_for(node):
            return None
        sql = result.compiled_code or node.compiled_code
        run_facets = {
            **self.run_facets(),
            **self.parent_facet(),
            **facets.tags(node, self.settings.producer),
        }
        if state is RunState.FAIL:
            message = _failure(result)
            run_facets["errorMessage"] = facets.error_message(
                self.settings.redact(message), self.settings.producer
            )
        inputs = self.inputs(node, sql)
        output = self.output(node, result.rows_affected)
        output.facets = {**(output.facets or {}), node_facets.NODE_FACET: self.node_facet(node)}
        lineage = self.lineage.get(node.unique_id) if state is RunState.COMPLETE else None
        if lineage is not None:
            self._add_column_lineage(lineage, inputs, output)
        return self.event(
            state=state,
            at=result.completed_at or started_at,
            rid=self.node_run_id(result.unique_id, started_at),
            job=self.job_name(node),
            job_facets=self._node_job_facets(node, sql),
            run_facets=run_facets,
            inputs=inputs,
            outputs=[output],
        )

    def _add_column_lineage(
        self, lineage: ModelLineage, inputs: list[InputDataset], output: OutputDataset
    ) -> None:
        """Attach the facet, and make every dataset it names one of the event's inputs."""
        facet = facets.column_lineage(lineage, self.resolve, self.settings.producer)
        known = {(d.namespace, d.name) for d in inputs}
        used = [f for fs in facet.fields.values() for f in fs.inputFields] + list(
            facet.dataset or []
        )
        for f in used:
            if (f.namespace, f.name) not in known:
                known.add((f.namespace, f.name))
                inputs.append(self._plain_input(f.namespace, f.name))
        output.facets = {**(output.facets or {}), "columnLineage": facet}

    def node_facet(self, node: Node) -> node_facets.DbtNodeDatasetFacet:
        """dbt-oml's `dbt_oml_node`: raw SQL, path, tags, owners as dbt defines the node."""
        return node_facets.node_facet(
            node,
            project=self.invocation.project_name or self.manifest.project_name,
            groups=self.manifest.groups,
            producer=self.settings.producer,
        )

    def node_abort(self, unique_id: str, started_at: datetime, at: datetime) -> RunEvent | None:
        """ABORT of a node whose START went out live but that dbt then skipped."""
        node = self.manifest.get(unique_id)
        if node is None or not self.emits_for(node):
            return None
        return self.event(
            state=RunState.ABORT,
            at=max(at, started_at),
            rid=self.node_run_id(unique_id, started_at),
            job=self.job_name(node),
            job_facets=self._node_job_facets(node, None),
            run_facets={**self.run_facets(), **self.parent_facet()},
            inputs=self.inputs(node, None),
            outputs=[self.output(node)],
        )


def _failure(result: NodeResult) -> str:
    """The error text of a failed node; a status dbt-oml does not know says so."""
    if result.status in _FAILED:
        return result.message or f"dbt reported status {result.status}"
    said = f": {result.message}" if result.message else ""
    return f"dbt reported status {result.status!r}, which dbt-oml does not know{said}"
