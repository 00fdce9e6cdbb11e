"""Facet builders: turn artifact views into openlineage-python facet objects.

Pure: no I/O. Uses the client's facet_v2 classes; the only facets defined here are dbt-ol's
custom `dbt_version` and `dbt_run`, kept field-for-field so consumers of dbt-ol keep working.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attr
from openlineage.client.facet_v2 import (
    DatasetFacet,
    InputDatasetFacet,
    OutputDatasetFacet,
    RunFacet,
    column_lineage_dataset,
    data_quality_assertions_dataset,
    datasource_dataset,
    documentation_dataset,
    documentation_job,
    error_message_run,
    job_type_job,
    output_statistics_output_dataset,
    ownership_dataset,
    processing_engine_run,
    schema_dataset,
    sql_job,
    tags_run,
    test_run,
)

from dbt_oml.artifacts import Column, Node
from dbt_oml.lineage import ModelLineage, SourceColumn, Transformation

_DBT_OL_SCHEMA = (
    "https://github.com/OpenLineage/OpenLineage/tree/main/integration/common/openlineage/schema/"
)


@attr.define
class DbtVersionRunFacet(RunFacet):
    """dbt-ol's `dbt_version` run facet (deprecated upstream, still read by consumers)."""

    version: str

    @staticmethod
    def _get_schema() -> str:
        return _DBT_OL_SCHEMA + "dbt-version-run-facet.json"


@attr.define
class DbtRunRunFacet(RunFacet):
    """dbt-ol's `dbt_run` run facet: which dbt invocation a run belongs to."""

    invocation_id: str
    project_name: str | None = None
    project_version: str | None = None
    profile_name: str | None = None
    dbt_runtime: str = "core"
    command: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return _DBT_OL_SCHEMA + "dbt-run-run-facet.json"


def job_type(job_kind: str, producer: str) -> job_type_job.JobTypeJobFacet:
    return job_type_job.JobTypeJobFacet(
        processingType="BATCH", integration="DBT", jobType=job_kind, producer=producer
    )


def sql(query: str, dialect: str, producer: str) -> sql_job.SQLJobFacet:
    return sql_job.SQLJobFacet(query=query, dialect=dialect, producer=producer)


def job_documentation(text: str, producer: str) -> documentation_job.DocumentationJobFacet:
    return documentation_job.DocumentationJobFacet(description=text, producer=producer)


def schema(columns: Sequence[Column], producer: str) -> schema_dataset.SchemaDatasetFacet:
    return schema_dataset.SchemaDatasetFacet(
        fields=[
            schema_dataset.SchemaDatasetFacetFields(
                name=c.name, type=c.type, description=c.description or None
            )
            for c in columns
        ],
        producer=producer,
    )


def merged_columns(node: Node, catalog: Sequence[Column] | None) -> tuple[Column, ...]:
    """Catalog columns (real names and types) with descriptions from the YAML declarations.

    Without a catalog, the declared columns are all there is.
    """
    if not catalog:
        return node.columns
    declared = {c.name.lower(): c for c in node.columns}
    merged = []
    for col in catalog:
        doc = declared.get(col.name.lower())
        description = col.description or (doc.description if doc else None)
        merged.append(Column(name=col.name, type=col.type, description=description))
    return tuple(merged)


def dataset_facets(
    *, node: Node | None, namespace: str, columns: Sequence[Column], producer: str
) -> dict[str, DatasetFacet]:
    out: dict[str, DatasetFacet] = {
        "dataSource": datasource_dataset.DatasourceDatasetFacet(
            name=namespace, uri=namespace, producer=producer
        )
    }
    if columns:
        out["schema"] = schema(columns, producer)
    if node is not None and node.description:
        out["documentation"] = documentation_dataset.DocumentationDatasetFacet(
            description=node.description, producer=producer
        )
    if node is not None and node.owners:
        out["ownership"] = ownership_dataset.OwnershipDatasetFacet(
            owners=[ownership_dataset.Owner(name=o) for o in node.owners], producer=producer
        )
    return out


def output_statistics(rows: int | None, producer: str) -> dict[str, OutputDatasetFacet]:
    if rows is None:
        return {}
    return {
        "outputStatistics": output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
            rowCount=rows, producer=producer
        )
    }


def run_facets(
    *,
    dbt_version: str,
    adapter_version: str,
    invocation_id: str,
    project_name: str | None,
    profile_name: str | None,
    command: str | None,
    producer: str,
    project_version: str | None = None,
) -> dict[str, RunFacet]:
    return {
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=dbt_version,
            name="dbt",
            openlineageAdapterVersion=adapter_version,
            producer=producer,
        ),
        "dbt_version": DbtVersionRunFacet(version=dbt_version, producer=producer),
        "dbt_run": DbtRunRunFacet(
            invocation_id=invocation_id,
            project_name=project_name,
            project_version=project_version,
            profile_name=profile_name,
            command=command,
            producer=producer,
        ),
    }


def tags(node: Node, producer: str) -> dict[str, RunFacet]:
    fields = [tags_run.TagsRunFacetFields(key=t, value="true", source="DBT") for t in node.tags]
    fields += [tags_run.TagsRunFacetFields(key=k, value=v, source="DBT_META") for k, v in node.meta]
    return {"tags": tags_run.TagsRunFacet(tags=fields, producer=producer)} if fields else {}


def error_message(message: str, producer: str) -> error_message_run.ErrorMessageRunFacet:
    return error_message_run.ErrorMessageRunFacet(
        message=message, programmingLanguage="SQL", producer=producer
    )


def assertion(
    *, test: Node, status: str, failures: int | None
) -> data_quality_assertions_dataset.Assertion:
    info = test.test
    assert info is not None
    params: dict[str, Any] = dict(info.kwargs)
    return data_quality_assertions_dataset.Assertion(
        assertion=info.assertion,
        success=status == "pass",
        column=info.column,
        severity=info.severity,
        name=test.name,
        expected="0",
        actual=None if failures is None else str(failures),
        params=params,
    )


#: dbt test statuses as TestRunFacet reports them (pass / fail / skip).
_TEST_STATUS = {"pass": "pass", "success": "pass", "skipped": "skip"}


def test_execution(
    *, test: Node, status: str, failures: int | None, sql: str | None, producer: str
) -> dict[str, RunFacet]:
    """The `test` run facet (TestRunFacet) of one dbt test's own run."""
    info = test.test
    assert info is not None
    execution = test_run.TestExecution(
        name=test.unique_id,
        status=_TEST_STATUS.get(status, "fail"),
        severity=info.severity,
        type=info.assertion if info.generic else "singular",
        description=test.description or None,
        expected="0",
        actual=None if failures is None else str(failures),
        content=sql,
        contentType="sql" if sql else None,
        params=dict(info.kwargs),
    )
    return {"test": test_run.TestRunFacet(tests=[execution], producer=producer)}


def assertions(
    items: Sequence[data_quality_assertions_dataset.Assertion], producer: str
) -> dict[str, InputDatasetFacet]:
    return {
        "dataQualityAssertions": data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
            assertions=list(items), producer=producer
        )
    }


def column_lineage(
    lineage: ModelLineage,
    resolve: Callable[[SourceColumn], tuple[str, str, str]],
    producer: str,
) -> column_lineage_dataset.ColumnLineageDatasetFacet:
    """ColumnLineageDatasetFacet 1-2-0 from a model's lineage.

    `resolve` maps a source column to (namespace, dataset name, field) as the event's inputs
    name them. Per field the legacy transformationType/Description are set too (OpenMetadata
    shows the description as the edge's function).
    """

    def fields(
        items: Sequence[tuple[SourceColumn, tuple[Transformation, ...]]],
    ) -> list[column_lineage_dataset.InputField]:
        out = []
        for source, transforms in items:
            namespace, name, field = resolve(source)
            out.append(
                column_lineage_dataset.InputField(
                    namespace=namespace,
                    name=name,
                    field=field,
                    transformations=[
                        column_lineage_dataset.Transformation(
                            type=t.type, subtype=t.subtype, masking=t.masking
                        )
                        for t in transforms
                    ],
                )
            )
        return out

    columns = {}
    for edge in lineage.columns:
        direct = [t for _, ts in edge.inputs for t in ts if t.type == "DIRECT"]
        if any(t.masking for t in direct):
            legacy = "MASKED"
        elif direct and all(t.subtype == "IDENTITY" for t in direct):
            legacy = "IDENTITY"
        else:
            legacy = "TRANSFORMATION"
        columns[edge.output] = column_lineage_dataset.Fields(
            inputFields=fields(edge.inputs),
            transformationType=legacy,
            transformationDescription=edge.expression or None,
        )
    return column_lineage_dataset.ColumnLineageDatasetFacet(
        fields=columns, dataset=fields(lineage.dataset), producer=producer
    )
