"""Build OpenLineage RunEvents for one dbt invocation from its artifacts.

Pure: no I/O, no environment, no logging setup; clocks and ids are inputs. Event shape follows
dbt-ol (a parent run for the invocation, a run per executed node with the invocation as parent,
aggregated test assertions per tested dataset), with per-dataset namespaces, datasets resolved
through ephemeral models, and `Z` timestamps with millisecond precision.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from operator import itemgetter

from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.facet_v2 import DatasetFacet, JobFacet, RunFacet, parent_run

from dbt_oml.artifacts import Catalog, Column, Manifest, Node, NodeResult, RunArtifacts
from dbt_oml.events import facets, node_facets
from dbt_oml.events.ids import run_id
from dbt_oml.events.invocation import EventSettings, Invocation, format_time
from dbt_oml.events.quality import per_test_events, skipped_tests, test_events
from dbt_oml.lineage.filerefs import file_dataset, file_paths
from dbt_oml.lineage.model import ModelLineage, SourceColumn
from dbt_oml.namespaces import Namespaces
from dbt_oml.redaction import redact
from dbt_oml.runs import JobNaming, RunRef

#: Node types that run as their own OpenLineage job, and their jobType.
JOB_TYPES: Mapping[str, str] = {"model": "MODEL", "seed": "SEED", "snapshot": "SNAPSHOT"}
#: Commands whose nodes get events; others get only the invocation's run.
BUILD_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "test", "retry"})
#: A node's terminal state by dbt status; skipped nodes get no run, any other status FAILs.
_TERMINAL: Mapping[str, RunState] = {"success": RunState.COMPLETE, "no-op": RunState.COMPLETE}
_FAILED = frozenset({"error", "fail", "runtime error", "partial success"})


@dataclass(frozen=True, slots=True)
class DatasetRef:
    namespace: str
    name: str


@dataclass(slots=True)
class EventBuilder:
    """Builds the events of one invocation; holds the artifacts it enriches them from."""

    invocation: Invocation
    namespaces: Namespaces
    settings: EventSettings
    manifest: Manifest
    catalog: Catalog | None = None
    lineage: Mapping[str, ModelLineage] = field(default_factory=dict)
    _columns: dict[str, tuple[Column, ...]] = field(default_factory=dict)
    _relations: dict[tuple[str, str, str], Node] | None = None
    #: per node: its dataset facets (built once, shared by every event naming the dataset; a
    #: facet is never changed once built) and its column names by lower-case name
    _facets: dict[str, dict[str, DatasetFacet]] = field(default_factory=dict)
    _names: dict[str, dict[str, str]] = field(default_factory=dict)
    #: the run facets every run shares, and the parent facet of every node run (built once)
    _run_facets: dict[str, RunFacet] | None = None
    _parent_facet: dict[str, RunFacet] | None = None

    # -- identities -------------------------------------------------------------------------

    @property
    def parent_job(self) -> str:
        return self.settings.parent_job_name or f"dbt-run-{self.invocation.project_name}"

    def parent_run_id(self) -> str:
        return run_id(self.invocation.invocation_id, "", self.invocation.started_at)

    def node_run_id(self, key: str, started_at: datetime) -> str:
        return run_id(self.invocation.invocation_id, key, started_at)

    def job_name(self, node: Node, kind: str | None = None) -> str:
        """The job name of a node (or of the tests of a node, with kind="test")."""
        if self.settings.job_naming is JobNaming.UNIQUE_ID:
            return node.unique_id if kind is None else f"{node.unique_id}.{kind}"
        uid = node.unique_id
        for prefix in ("model.", "seed.", "snapshot."):
            uid = uid.removeprefix(prefix)
        base = ".".join(p for p in (node.database, node.schema, uid) if p)
        command = self.invocation.command
        step = kind or {"model": "run"}.get(node.resource_type, node.resource_type)
        if command == "build":
            return f"{base}.build.{step}"
        return base if step == "run" and command == "run" else f"{base}.{step}"

    def dataset(self, node: Node) -> DatasetRef:
        name = ".".join(p for p in (node.database, node.schema, node.identifier) if p)
        return DatasetRef(self.namespaces.for_database(node.database), name)

    # -- datasets ---------------------------------------------------------------------------

    def relation(self, catalog: str, schema: str, table: str) -> Node | None:
        """The dbt node behind a relation the SQL names (case-insensitive, as DuckDB matches)."""
        if self._relations is None:
            self._relations = {
                (
                    (n.database or "").lower(),
                    (n.schema or "").lower(),
                    (n.identifier or "").lower(),
                ): n
                for n in self.manifest.nodes.values()
                if n.is_relation
            }
        return self._relations.get((catalog.lower(), schema.lower(), table.lower()))

    def resolve(self, source: SourceColumn) -> tuple[str, str, str]:
        """(namespace, dataset name, field) of a source column, named as the event's inputs are."""
        if source.catalog == "file":
            ref = file_dataset(source.table, cwd=self.settings.cwd)
            return ref.namespace, ref.name, source.column
        node = self.relation(source.catalog, source.schema, source.table)
        if node is not None:
            ds = self.dataset(node)
            names = self._names.get(node.unique_id)
            if names is None:
                names = {}
                for c in self.columns(node):
                    names.setdefault(c.name.lower(), c.name)
                self._names[node.unique_id] = names
            return ds.namespace, ds.name, names.get(source.column.lower(), source.column)
        name = ".".join(p for p in (source.catalog, source.schema, source.table) if p)
        return self.namespaces.for_database(source.catalog), name, source.column

    def columns(self, node: Node) -> tuple[Column, ...]:
        cached = self._columns.get(node.unique_id)
        if cached is None:
            from_catalog = self.catalog.columns.get(node.unique_id) if self.catalog else None
            cached = facets.merged_columns(node, from_catalog)
            self._columns[node.unique_id] = cached
        return cached

    def upstream(self, node: Node) -> list[Node]:
        """The relations a node reads, looking through ephemeral models to what they read."""
        return self.manifest.relations_read(node)

    def dataset_facets(self, node: Node) -> dict[str, DatasetFacet]:
        """schema (and where it came from), dataSource, documentation and ownership."""
        cached = self._facets.get(node.unique_id)
        if cached is None:
            cached = self._facets[node.unique_id] = self._dataset_facets(node)
        return dict(cached)

    def _dataset_facets(self, node: Node) -> dict[str, DatasetFacet]:
        ref = self.dataset(node)
        columns = self.columns(node)
        out = facets.dataset_facets(
            node=node,
            namespace=ref.namespace,
            name=ref.name,
            columns=columns,
            producer=self.settings.producer,
        )
        if columns:
            from_catalog = bool(self.catalog and self.catalog.columns.get(node.unique_id))
            out["dbt_oml_schema"] = facets.schema_source(
                from_catalog=from_catalog, producer=self.settings.producer
            )
        return out

    def input_dataset(self, node: Node) -> InputDataset:
        ref = self.dataset(node)
        return InputDataset(
            namespace=ref.namespace,
            name=ref.name,
            facets=self.dataset_facets(node),
        )

    def inputs(self, node: Node, sql: str | None) -> list[InputDataset]:
        out = [self.input_dataset(parent) for parent in self.upstream(node)]
        paths = self._file_paths(sql) if sql else []
        cwd = self.settings.cwd
        if node.resource_type == "seed" and node.original_file_path:
            paths, cwd = [node.original_file_path], self.settings.project_root or cwd
        for path in paths:
            ref = file_dataset(path, cwd=cwd)
            out.append(self._plain_input(ref.namespace, ref.name))
        return out

    def _file_paths(self, sql: str) -> list[str]:
        try:
            return file_paths(sql, dialect=self.invocation.adapter_type)
        except RecursionError:
            return []  # SQL nested deeper than sqlglot can parse: the model keeps its other inputs

    def _plain_input(self, namespace: str, name: str) -> InputDataset:
        """An input that is not a dbt node (a file, a table the SQL names directly)."""
        return InputDataset(
            namespace=namespace,
            name=name,
            facets=facets.dataset_facets(
                node=None,
                namespace=namespace,
                name=name,
                columns=(),
                producer=self.settings.producer,
            ),
        )

    def output(self, node: Node, rows: int | None = None) -> OutputDataset:
        ref = self.dataset(node)
        return OutputDataset(
            namespace=ref.namespace,
            name=ref.name,
            facets=self.dataset_facets(node),
            outputFacets=facets.output_statistics(rows, self.settings.producer),
        )

    # -- runs -------------------------------------------------------------------------------

    def run_facets(self) -> dict[str, RunFacet]:
        if self._run_facets is None:
            self._run_facets = self._new_run_facets()
        return dict(self._run_facets)

    def _new_run_facets(self) -> dict[str, RunFacet]:
        inv = self.invocation
        return facets.run_facets(
            dbt_version=inv.dbt_version,
            adapter_version=self.settings.adapter_version,
            invocation_id=inv.invocation_id,
            project_name=inv.project_name,
            profile_name=inv.profile_name,
            command=inv.command,
            producer=self.settings.producer,
            project_version=inv.project_version,
        )

    def parent_facet(self) -> dict[str, RunFacet]:
        """Node runs: the invocation is the parent; the orchestrator's root (if any) the root."""
        if self._parent_facet is None:
            self._parent_facet = self._new_parent_facet()
        return dict(self._parent_facet)

    def _new_parent_facet(self) -> dict[str, RunFacet]:
        me = RunRef(
            namespace=self.settings.job_namespace, name=self.parent_job, run_id=self.parent_run_id()
        )
        root = self.settings.orchestrator.root if self.settings.orchestrator else me
        return {"parent": self._parent(me, root)}

    def _parent(self, parent: RunRef, root: RunRef) -> parent_run.ParentRunFacet:
        return parent_run.ParentRunFacet(
            run=parent_run.Run(runId=parent.run_id),
            job=parent_run.Job(namespace=parent.namespace, name=parent.name),
            root=parent_run.Root(
                run=parent_run.RootRun(runId=root.run_id),
                job=parent_run.RootJob(namespace=root.namespace, name=root.name),
            ),
            producer=self.settings.producer,
        )

    def _invocation_facets(self) -> dict[str, RunFacet]:
        """The invocation's own run facets: the orchestrator as its parent, when there is one."""
        out = self.run_facets()
        if self.settings.orchestrator is not None:
            out["parent"] = self._parent(
                self.settings.orchestrator.parent, self.settings.orchestrator.root
            )
        return out

    def event(
        self,
        *,
        state: RunState,
        at: datetime,
        rid: str,
        job: str,
        job_facets: dict[str, JobFacet],
        run_facets: dict[str, RunFacet],
        inputs: list[InputDataset] | None = None,
        outputs: list[OutputDataset] | None = None,
    ) -> RunEvent:
        return RunEvent(
            eventType=state,
            eventTime=format_time(at),
            run=Run(runId=rid, facets=run_facets),
            job=Job(namespace=self.settings.job_namespace, name=job, facets=job_facets),
            inputs=inputs or [],
            outputs=outputs or [],
            producer=self.settings.producer,
        )

    def parent_start(self) -> RunEvent:
        """START of the invocation's own run."""
        return self.event(
            state=RunState.START,
            at=self.invocation.started_at,
            rid=self.parent_run_id(),
            job=self.parent_job,
            job_facets={"jobType": facets.job_type("JOB", self.settings.producer)},
            run_facets=self._invocation_facets(),
        )

    def parent_end(self, *, at: datetime, error: str | None) -> RunEvent:
        """COMPLETE (no error) or FAIL (with the error text) of the invocation's run."""
        run_facets = self._invocation_facets()
        if error is not None:
            run_facets["errorMessage"] = facets.error_message(redact(error), self.settings.producer)
        return self.event(
            state=RunState.FAIL if error is not None else RunState.COMPLETE,
            at=at,
            rid=self.parent_run_id(),
            job=self.parent_job,
            job_facets={"jobType": facets.job_type("JOB", self.settings.producer)},
            run_facets=run_facets,
        )

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
                redact(message), self.settings.producer
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
        assert output.facets is not None
        output.facets["columnLineage"] = facet
        if self.settings.column_lineage_in_output_facets:
            # OpenMetadata 1.12 reads column lineage only from outputFacets
            output.outputFacets = {**(output.outputFacets or {}), "columnLineage": facet}  # type: ignore[dict-item]

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


def build_events(
    artifacts: RunArtifacts,
    *,
    invocation: Invocation,
    namespaces: Namespaces,
    settings: EventSettings,
    node_starts: Mapping[str, datetime] | None = None,
    ended_at: datetime | None = None,
    error: str | None = None,
    lineage: Mapping[str, ModelLineage] | None = None,
) -> list[RunEvent]:
    """Every event of an invocation, in time order: the parent START first, its end last.

    Args:
        artifacts: the invocation's manifest, run results and (optional) catalog.
        invocation: the dbt invocation the events describe.
        namespaces: the namespace of every catalog.
        settings: job namespace, naming, producer.
        node_starts: the real start time of each node, when it was observed live; otherwise
            each node's first timing entry in run_results.json is used.
        ended_at: when the invocation ended (default: the last node end, or its start).
        error: the invocation's error, if it failed.
        lineage: column lineage per model unique_id (models without an entry get none).
    """
    return list(
        iter_events(
            artifacts,
            invocation=invocation,
            namespaces=namespaces,
            settings=settings,
            node_starts=node_starts,
            ended_at=ended_at,
            error=error,
            lineage=lineage,
        )
    )


def iter_events(
    artifacts: RunArtifacts,
    *,
    invocation: Invocation,
    namespaces: Namespaces,
    settings: EventSettings,
    node_starts: Mapping[str, datetime] | None = None,
    ended_at: datetime | None = None,
    error: str | None = None,
    lineage: Mapping[str, ModelLineage] | None = None,
) -> Iterator[RunEvent]:
    """`build_events`, one event at a time: each node event is built only when it is next, so a
    caller that sends as it goes holds one event, not a run's worth (arguments as there)."""
    builder = EventBuilder(
        invocation=invocation,
        namespaces=namespaces,
        settings=settings,
        manifest=artifacts.manifest,
        catalog=artifacts.catalog,
        lineage=lineage or {},
    )
    body: list[tuple[str, Callable[[], RunEvent | None]]] = []
    results = artifacts.run_results.results if artifacts.run_results else ()
    for result in results:
        # a node that failed before dbt timed it (or whose timing does not read) still ran: it
        # starts with the invocation
        started = (node_starts or {}).get(result.unique_id) or result.started_at
        started = started or (invocation.started_at if result.status != "skipped" else None)
        node = builder.manifest.get(result.unique_id)
        if started is None or result.status == "skipped" or not builder.emits_for(node):
            continue  # no run of its own (node_start/node_end give none)
        body.append((format_time(started), partial(builder.node_start, result.unique_id, started)))
        ended = format_time(result.completed_at or started)
        body.append((ended, partial(builder.node_end, result, started)))
    if invocation.command in BUILD_COMMANDS:
        tests = test_events(builder, results) + per_test_events(builder, results)
        body += [(e.eventTime, partial(_same, e)) for e in tests]
    body.sort(key=itemgetter(0))  # stable: a node's START before its end at the same instant
    last = body[-1][0] if body else None
    ends = [r.completed_at for r in results if r.completed_at]
    end_at = ended_at or max(ends, default=invocation.started_at)
    if last is not None and format_time(end_at) < last:
        end_at = max(ends, default=end_at)
    yield builder.parent_start()
    for _, make in body:
        event = make()
        if event is not None:
            yield event
    end = builder.parent_end(at=end_at, error=error)
    if invocation.command in BUILD_COMMANDS:  # tests dbt skipped have no run of their own
        end.run.facets = {**(end.run.facets or {}), **skipped_tests(builder, results, at=end_at)}
    yield end


def _same(event: RunEvent) -> RunEvent:
    return event
