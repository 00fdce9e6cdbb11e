"""dbt's artifacts (manifest.json, run_results.json, catalog.json) read into small frozen views.

Pure: the readers take a path and return dataclasses; raw dicts never leave this package. Unknown
fields are ignored (dbt adds fields in minor versions); a missing file, invalid JSON or an
unsupported major schema version raises ArtifactError naming the file.

- `views`: the dataclasses (Manifest, Node, RunResults, Catalog, RunArtifacts, ...).
- `reading`: loading a JSON file, the schema-version check and tolerant coercions.
- `manifest`, `run_results`, `catalog`: one reader each; `bundle`: a target directory's set.

Must not import: dbt, nor any I/O library beyond reading the given JSON files (no yaml, duckdb,
httpx2, nats, requests, socket, subprocess), nor any part of dbt_oml above `errors` and `config`.
"""

from dbt_oml.artifacts.bundle import read_artifacts
from dbt_oml.artifacts.catalog import catalog_from_document, read_catalog, read_optional_catalog
from dbt_oml.artifacts.manifest import read_manifest
from dbt_oml.artifacts.reading import SUPPORTED
from dbt_oml.artifacts.run_results import KNOWN_STATUSES, read_run_results
from dbt_oml.artifacts.views import (
    DOCS_GENERATE_DIR,
    KEPT_MANIFEST,
    KEPT_RUN_RESULTS,
    Catalog,
    Column,
    Manifest,
    Node,
    NodeResult,
    RelationKey,
    RunArtifacts,
    RunResults,
    TestInfo,
    Timing,
    failure_summary,
    parse_time,
    relation_key,
    relation_parts,
    relations_by_key,
)

__all__ = [
    "DOCS_GENERATE_DIR",
    "KEPT_MANIFEST",
    "KEPT_RUN_RESULTS",
    "KNOWN_STATUSES",
    "SUPPORTED",
    "Catalog",
    "Column",
    "Manifest",
    "Node",
    "RelationKey",
    "NodeResult",
    "RunArtifacts",
    "RunResults",
    "TestInfo",
    "Timing",
    "catalog_from_document",
    "failure_summary",
    "parse_time",
    "read_artifacts",
    "read_catalog",
    "read_manifest",
    "read_optional_catalog",
    "read_run_results",
    "relation_key",
    "relation_parts",
    "relations_by_key",
]
