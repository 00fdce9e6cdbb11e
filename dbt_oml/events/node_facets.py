"""dbt-oml's facets for what a catalog shows of a dbt node: `dbt_oml_node` and `dbt_oml_tests`.

Pure: no I/O. OpenLineage's standard facets carry a model's description, columns, owners, tags
and compiled SQL; these two carry the rest of what OpenMetadata's own dbt ingestion shows: the raw
SQL, the file path, column tags, `meta.openmetadata` hints, and each dbt test with its tested
table, column, arguments, dbt status, message and time. Schemas: dbt_oml/schemas/.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

import attr
from openlineage.client.facet_v2 import DatasetFacet, RunFacet

from dbt_oml.artifacts import Node, NodeResult, TestInfo
from dbt_oml.errors import ArtifactError
from dbt_oml.times import format_time

_URN = "urn:dbt-oml:facets:1-0-0:"
NODE_FACET = "dbt_oml_node"
TESTS_FACET = "dbt_oml_tests"


@attr.define
class DbtColumnHints:
    """Tags and OpenMetadata hints (`meta.openmetadata`) of one declared column."""

    name: str
    tags: list[str] | None = None
    omTags: list[str] | None = None  # noqa: N815 - the facet's JSON field
    glossaryTerms: list[str] | None = None  # noqa: N815


@attr.define
class DbtNodeDatasetFacet(DatasetFacet):
    """dbt-oml's `dbt_oml_node`: a model, seed or snapshot as dbt defines it.

    On the output of the node's own COMPLETE/FAIL event. `owners` are names or e-mails in the
    order OpenMetadata's dbt ingestion prefers them (`meta.openmetadata.owner`, `meta.owner`,
    the dbt group's owner).
    """

    uniqueId: str  # noqa: N815
    resourceType: str  # noqa: N815
    project: str | None = None
    path: str | None = None
    rawSql: str | None = None  # noqa: N815
    tags: list[str] | None = None
    owners: list[str] | None = None
    omTags: list[str] | None = None  # noqa: N815
    glossaryTerms: list[str] | None = None  # noqa: N815
    tier: str | None = None
    columns: list[DbtColumnHints] | None = None

    @staticmethod
    def _get_schema() -> str:
        return _URN + "DbtNodeDatasetFacet.json#/$defs/DbtNodeDatasetFacet"


@attr.define
class DbtTestedDataset:
    namespace: str
    name: str


@attr.define
class DbtTest:
    """One dbt data test of a run, as run_results.json reports it."""

    uniqueId: str  # noqa: N815
    name: str
    type: str
    generic: bool
    status: str
    completedAt: str  # noqa: N815
    column: str | None = None
    params: dict[str, str] | None = None
    message: str | None = None
    failures: int | None = None
    description: str | None = None
    severity: str | None = None
    tested: DbtTestedDataset | None = None


@attr.define
class DbtTestsRunFacet(RunFacet):
    """dbt-oml's `dbt_oml_tests`: dbt tests of a run (a test's own run: that test; the
    invocation's end: the tests dbt skipped, which have no run of their own)."""

    tests: list[DbtTest] = attr.field(factory=list)

    @staticmethod
    def _get_schema() -> str:
        return _URN + "DbtTestsRunFacet.json#/$defs/DbtTestsRunFacet"


def _hints(meta: Sequence[tuple[str, str]]) -> Mapping[str, object]:
    """`meta.openmetadata` (stored by artifacts as JSON text), or {}.

    >>> _hints([("openmetadata", '{"tier": "Tier.Tier1"}')])["tier"]
    'Tier.Tier1'
    """
    text = dict(meta).get("openmetadata")
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _strings(value: object) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


def owners(node: Node, groups: Mapping[str, str]) -> list[str]:
    """A node's owners: `meta.openmetadata.owner`, else `meta.owner`, else its group's owner."""
    hinted = _strings(_hints(node.meta).get("owner"))
    if hinted:
        return hinted
    if node.owners:
        return list(node.owners)
    return [groups[node.group]] if node.group and node.group in groups else []


def node_facet(
    node: Node, *, project: str | None, groups: Mapping[str, str], producer: str
) -> DbtNodeDatasetFacet:
    """The `dbt_oml_node` facet of a model, seed or snapshot."""
    hints = _hints(node.meta)
    columns = []
    for column in node.columns:
        column_hints = _hints(column.meta)
        entry = DbtColumnHints(
            name=column.name,
            tags=list(column.tags) or None,
            omTags=_strings(column_hints.get("tags")) or None,
            glossaryTerms=_strings(column_hints.get("glossary")) or None,
        )
        if entry.tags or entry.omTags or entry.glossaryTerms:
            columns.append(entry)
    tier = hints.get("tier")
    return DbtNodeDatasetFacet(
        uniqueId=node.unique_id,
        resourceType=node.resource_type,
        project=project,
        path=node.original_file_path,
        rawSql=node.raw_code,
        tags=list(node.tags) or None,
        owners=owners(node, groups) or None,
        omTags=_strings(hints.get("tags")) or None,
        glossaryTerms=_strings(hints.get("glossary")) or None,
        tier=tier if isinstance(tier, str) and tier else None,
        columns=columns or None,
        producer=producer,
    )


def test_info(test: Node) -> TestInfo:
    """A test node's test metadata (the manifest reader gives every test node one)."""
    if test.test is None:
        raise ArtifactError(
            path="manifest.json", reason=f"test {test.unique_id} has no test metadata"
        )
    return test.test


def dbt_test(
    test: Node, result: NodeResult, *, tested: tuple[str, str] | None, at: datetime
) -> DbtTest:
    """One test of a run; `at` is when it ended (run_results' time, or the run's end if none)."""
    info = test_info(test)
    return DbtTest(
        uniqueId=test.unique_id,
        name=test.name,
        type=info.assertion if info.generic else test.name,
        generic=info.generic,
        status=result.status,
        completedAt=format_time(result.completed_at or at),
        column=info.column,
        params=dict(info.kwargs) or None,
        message=result.message,
        failures=result.failures,
        description=test.description or None,
        severity=info.severity,
        tested=DbtTestedDataset(namespace=tested[0], name=tested[1]) if tested else None,
    )


def dbt_tests_facet(tests: Sequence[DbtTest], producer: str) -> dict[str, RunFacet]:
    if not tests:
        return {}
    return {TESTS_FACET: DbtTestsRunFacet(tests=list(tests), producer=producer)}
