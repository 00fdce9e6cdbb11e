"""Facet builders: turn artifact views into openlineage-python facet objects.

Pure: no I/O. Uses the client's facet_v2 classes; three facets are defined here. dbt-ol's custom
`dbt_version` and `dbt_run`, kept field-for-field so consumers of dbt-ol keep working: their
`_schemaURL` is the `$id` of dbt-ol's schema file (OpenLineage repository,
`integration/common/src/openlineage/common/schema/`) with the facet's `#/$defs/...` fragment. And
dbt-oml's own `dbt_oml_schema` (SchemaSourceDatasetFacet: are the `schema` facet's columns
complete), whose `_schemaURL` is a `urn:dbt-oml:facets:...` URN resolved from dbt_oml/schemas/.
dbt-oml's other own facets, `dbt_oml_node` and `dbt_oml_tests`, are in node_facets.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any
from urllib.parse import quote, urlsplit

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
from dbt_oml.events.node_facets import test_info
from dbt_oml.lineage.filerefs import file_uri
from dbt_oml.lineage.model import ModelLineage, SourceColumn, Transformation

#: The base of the `$id`s of dbt-ol's facet schemas. The files have moved to
#: integration/common/src/openlineage/common/schema/ since, keeping these `$id`s.
_DBT_SCHEMA = (
    "https://raw.githubusercontent.com/OpenLineage/OpenLineage/main/"
    "integration/common/openlineage/common/schema/"
)
#: RFC 3986 `scheme ":"`, then only characters a URI may hold (percent escapes well formed).
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_URI_CHARS = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")


@attr.define
class DbtVersionRunFacet(RunFacet):
    """dbt-ol's `dbt_version` run facet (deprecated upstream, still read by consumers)."""

    version: str

    @staticmethod
    def _get_schema() -> str:
        return _DBT_SCHEMA + "dbt-version-run-facet.json#/$defs/DbtVersionRunFacet"


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
        return _DBT_SCHEMA + "dbt-run-run-facet.json#/$defs/DbtRunRunFacet"


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


def is_uri(text: str) -> bool:
    """Whether `text` is an absolute URI (RFC 3986), as the facets' `format: uri` requires.

    >>> [is_uri(t) for t in ("duckdb:///w/x.duckdb", "mysql://db:3306", "md:", "file", "a b:c")]
    [True, True, True, False, False]
    """
    if not _URI_SCHEME.match(text) or not _URI_CHARS.fullmatch(text):
        return False
    try:
        parts = urlsplit(text)
        _ = parts.port  # a port that is no number raises
    except ValueError:
        return False
    # "[" and "]" only around an IP literal host
    host = parts.netloc.rpartition("@")[2]
    rest = text.replace(host, "", 1) if host.startswith("[") else text
    return "[" not in rest and "]" not in rest


def datasource(
    *, namespace: str, name: str, producer: str
) -> datasource_dataset.DatasourceDatasetFacet:
    """The `dataSource` facet: the namespace, and a URI of where the dataset lives.

    Files (namespace `file`) get the file's own URI; other namespaces are their own URI,
    percent-encoded where they hold what a URI cannot (a space in a DuckDB file's path). A
    namespace that is no URI (an override without a scheme) is not copied into `uri`, which the
    spec types `format: uri`: the facet then carries the name alone.

    >>> datasource(namespace="file", name="/p/seeds/a b.csv", producer="p").uri
    'file:///p/seeds/a%20b.csv'
    >>> datasource(namespace="duckdb:///p/my dir/w.duckdb", name="w.main.t", producer="p").uri
    'duckdb:///p/my%20dir/w.duckdb'
    >>> datasource(namespace="my warehouse", name="db.s.t", producer="p").uri is None
    True
    """
    if namespace == "file":
        uri = file_uri(name) if name.startswith("/") else None
    elif is_uri(namespace) or not _URI_SCHEME.match(namespace):
        uri = namespace if is_uri(namespace) else None
    else:  # a path with a space, say: the same URI, percent-encoded
        encoded = quote(namespace, safe=":/?#[]@!$&'()*+,;=%~")
        uri = encoded if is_uri(encoded) else None
    return datasource_dataset.DatasourceDatasetFacet(name=namespace, uri=uri, producer=producer)


def dataset_facets(
    *, node: Node | None, namespace: str, name: str, columns: Sequence[Column], producer: str
) -> dict[str, DatasetFacet]:
    out: dict[str, DatasetFacet] = {
        "dataSource": datasource(namespace=namespace, name=name, producer=producer)
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
    info = test_info(test)
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
    info = test_info(test)
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


@cache
def _transformation(t: Transformation) -> column_lineage_dataset.Transformation:
    """One facet object per distinct transformation (a handful), shared by every edge: nothing
    changes a facet once built, and tens of thousands fewer objects per large run."""
    return column_lineage_dataset.Transformation(
        type=t.type,
        subtype=t.subtype,
        description=t.description or None,  # the struct field extracted
        masking=t.masking,
    )


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
                    transformations=[_transformation(t) for t in transforms],
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


#: `$id` of the schema of dbt-oml's own dataset facet (shipped in dbt_oml/schemas/).
SCHEMA_SOURCE_URL = (
    "urn:dbt-oml:facets:1-0-0:SchemaSourceDatasetFacet.json#/$defs/SchemaSourceDatasetFacet"
)


@attr.define
class SchemaSourceDatasetFacet(DatasetFacet):
    """dbt-oml's `dbt_oml_schema`: whether the `schema` facet lists every column.

    `complete` when the columns come from catalog.json or the warehouse itself; a consumer may
    then replace the columns it holds. Declared (YAML) columns are partial: add, never remove.
    """

    source: str
    complete: bool

    @staticmethod
    def _get_schema() -> str:
        return SCHEMA_SOURCE_URL


def schema_source(*, from_catalog: bool, producer: str) -> SchemaSourceDatasetFacet:
    return SchemaSourceDatasetFacet(
        source="catalog" if from_catalog else "declared",
        complete=from_catalog,
        producer=producer,
    )
