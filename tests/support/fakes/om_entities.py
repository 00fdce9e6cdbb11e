"""The entity kinds the OM stand-in serves and how OM stores a PUT (ref §3, §9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    entity: str
    collection: str
    schema: str | None
    parent_field: str | None = None
    parent_kind: str | None = None


KINDS: dict[str, Kind] = {
    k.collection: k
    for k in (
        Kind(
            "databaseService",
            "services/databaseServices",
            "api/services/createDatabaseService.json",
        ),
        Kind("database", "databases", "api/data/createDatabase.json", "service", "databaseService"),
        Kind(
            "databaseSchema",
            "databaseSchemas",
            "api/data/createDatabaseSchema.json",
            "database",
            "database",
        ),
        Kind("table", "tables", "api/data/createTable.json", "databaseSchema", "databaseSchema"),
        Kind(
            "pipelineService",
            "services/pipelineServices",
            "api/services/createPipelineService.json",
        ),
        Kind("pipeline", "pipelines", "api/data/createPipeline.json", "service", "pipelineService"),
        Kind(
            "storageService", "services/storageServices", "api/services/createStorageService.json"
        ),
        Kind(
            "container", "containers", "api/data/createContainer.json", "service", "storageService"
        ),
        # ref §9: classifications, tags, people, data quality (om_catalog, om_quality)
        Kind(
            "classification",
            "classifications",
            "api/classification/createClassification.json",
        ),
        Kind(
            "tag",
            "tags",
            "api/classification/createTag.json",
            "classification",
            "classification",
        ),
        Kind("glossaryTerm", "glossaryTerms", None),
        Kind("user", "users", None),
        Kind("team", "teams", None),
        Kind(
            "testDefinition",
            "dataQuality/testDefinitions",
            "api/tests/createTestDefinition.json",
        ),
        Kind("testSuite", "dataQuality/testSuites", "api/tests/createTestSuite.json"),
        Kind("testCase", "dataQuality/testCases", "api/tests/createTestCase.json"),
    )
}
BY_ENTITY = {k.entity: k for k in KINDS.values()}
#: `fields` a table GET accepts (OpenAPI 1.13, ref §3.3); anything else → 400.
_FIELDS = """tableConstraints tablePartition usageSummary owners customMetrics columns sampleData
    tags followers joins schemaDefinition dataModel extension testSuite domains dataProducts
    lifeCycle sourceHash"""
TABLE_FIELDS = frozenset(_FIELDS.split())
#: Server-maintained entity fields: not part of "did this PUT change anything".
_BOOKKEEPING = frozenset({"version", "updatedAt", "updatedBy"})


def content(entity: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entity.items() if k not in _BOOKKEEPING}


def keep_column_descriptions(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    before = {c.get("name"): c for c in old}
    for column in new:
        was = before.get(column.get("name"))
        if was is None:
            continue
        if was.get("description"):
            column["description"] = was["description"]
        if column.get("children"):
            keep_column_descriptions(was.get("children") or [], column["children"])


def table_ref(table: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": table["id"],
        "type": "table",
        "name": table["name"],
        "fullyQualifiedName": table["fullyQualifiedName"],
    }
