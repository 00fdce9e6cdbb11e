"""One model planned alone, as dbt finishes it: its worker job and the cache key the end of the
run will look it up under.

`dbt-oml build` on a cold pod analyses each model in the lineage workers while dbt runs the
rest (pipeline.running). The end of the run then computes every model's key itself, from
catalog.json, and takes an analysis from the cache only under that key, so what is planned here
can make the end faster but never change its answer: a model whose SQL, relation or upstream
columns came out otherwise at the end is simply analysed again there.

Pure: the caller brings the columns it read (the model's and those of the relations it reads)
and the cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from dbt_oml.artifacts import (
    Catalog,
    Column,
    Manifest,
    Node,
    NodeResult,
    RunArtifacts,
    RunResults,
)
from dbt_oml.lineage.batch import (
    LineageCache,
    _Analysis,
    _Tables,
    file_sources,
)
from dbt_oml.lineage.workers import Job


@dataclass(frozen=True, slots=True)
class Planned:
    """A model to analyse now: the job for a worker and the key its outcome is cached under."""

    key: str
    job: Job


def around(manifest: Manifest, node: Node) -> dict[str, Node]:
    """The nodes a model's plan needs, by unique_id: itself, the ephemeral models inlined into
    its SQL and the relations it reads, directly or through them."""
    out = {node.unique_id: node}
    stack = list(node.depends_on)
    while stack:
        parent = manifest.nodes.get(stack.pop())
        if parent is None or parent.unique_id in out:
            continue
        out[parent.unique_id] = parent
        if parent.resource_type == "model" and parent.materialized == "ephemeral":
            stack.extend(parent.depends_on)
    return out


def plan_alone(  # noqa: PLR0913 - keyword-only, what one model's plan is made of
    manifest: Manifest,
    node: Node,
    *,
    sql: str,
    columns: Mapping[str, tuple[Column, ...]],
    file_reads: Mapping[str, Node],
    dialect: str,
    default_catalog: str | None,
    spelling: Mapping[str, str],
    cache: LineageCache | None,
) -> Planned | None:
    """`node`'s job, with its compiled `sql` and the `columns` read for it and its relations
    (by unique_id); None when the cache has it already or the plan settles it (no SQL).

    `file_reads`: the manifest's sources read from files (they rewrite the SQL as the end's plan
    does); `spelling`: lower-case name -> spelling, as the run's catalog spells names first.
    """
    artifacts = _alone(manifest, node, sql=sql, columns=columns, file_reads=file_reads)
    nodes = artifacts.manifest.nodes
    tables = _Tables(case=dict(spelling))
    for uid, found in columns.items():
        if uid in nodes and found:
            tables.add(nodes[uid], found)
    run = _Analysis.over(
        artifacts, tables, dialect=dialect, default_catalog=default_catalog, cache=cache
    )
    for planned, text, key in run.plan({node.unique_id}):
        if planned.unique_id == node.unique_id:
            job = Job(
                unique_id=node.unique_id,
                sql=text,
                tables=tables.tables,
                case=tables.case,
                dialect=dialect,
                default_catalog=default_catalog,
                own_columns=run.own.get(node.unique_id, ()),
            )
            return Planned(key=key, job=job)
    return None


def file_read_sources(manifest: Manifest) -> dict[str, Node]:
    """The manifest's sources read from files, by unique_id (see batch.file_sources)."""
    wanted = set(file_sources(RunArtifacts(manifest=manifest, run_results=None, catalog=None)))
    return {
        uid: n
        for uid, n in manifest.nodes.items()
        if n.resource_type == "source" and (n.relation_name or "").strip() in wanted
    }


def _alone(
    manifest: Manifest,
    node: Node,
    *,
    sql: str,
    columns: Mapping[str, tuple[Column, ...]],
    file_reads: Mapping[str, Node],
) -> RunArtifacts:
    """The artifacts of a run of this model alone, as the end of the run will see it."""
    nodes = {**file_reads, **around(manifest, node)}
    # the manifest dbt wrote before the run has no compiled SQL; the end's has this one
    nodes[node.unique_id] = replace(node, compiled_code=sql)
    return RunArtifacts(
        manifest=replace(manifest, nodes=nodes),
        run_results=RunResults(
            path="",
            dbt_version=manifest.dbt_version,
            invocation_id=manifest.invocation_id,
            invocation_started_at=None,
            generated_at=None,
            command=None,
            results=(_success(node.unique_id, sql),),
        ),
        catalog=Catalog(path="adapter", generated_at=None, columns=columns),
    )


def _success(unique_id: str, sql: str) -> NodeResult:
    return NodeResult(
        unique_id=unique_id,
        status="success",
        message=None,
        timing=(),
        rows_affected=None,
        failures=None,
        compiled_code=sql,
    )
