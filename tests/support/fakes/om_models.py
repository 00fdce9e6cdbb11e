"""OM's request schemas for the OM stand-in, from the pydantic models OM generates from them.

PyPI's `openmetadata-ingestion` ships, under `metadata.generated.schema`, the models that OM's
build generates from its JSON schemas (`openmetadata-spec/.../json/schema/`, the files the server
binds request bodies with). `python -m tests.support.fakes.om_models` (run by `make test`) installs each
pinned release with `--no-deps` into a folder of its own under OM_MODELS_DIR (default
`.venv/om-models`: outside site-packages, as the package registers a pytest plugin and needs 100
dependencies to import whole), then writes each release's schemas to `<release>.json` there, one
child process per release (both are the `metadata` package). A child needs only pydantic and
email-validator: it gives the `metadata` package without running its `__init__` (which imports
the profiler).

A model's JSON schema is turned back into what OM's JSON schema says: `Optional[X]` is X (OM
binds a JSON null like an absent field, see om_rules), and a URI has no length bounds (pydantic's
AnyUrl adds 1..2083; java.net.URI has none). The releases differ (2.0.7 adds tableType
SemanticView, jobFacets.ownership, ownershipUpdateMode, ...), so each version the stand-in plays
reads its own.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

#: The version the stand-in plays -> the openmetadata-ingestion release whose models it reads.
RELEASES = {"2.0": "2.0.7.0", "1.12": "1.12.14.2"}
ROOT = Path(__file__).resolve().parents[3]
MODELS_DIR = Path(os.environ.get("OM_MODELS_DIR") or ROOT / ".venv" / "om-models")

#: OM's schema file (below json/schema/) -> the model generated from it; `file#Model` names a
#: definition inside a file (the body of PUT /tables/{id}/dataModel is table.json's dataModel).
MODELS = {
    "api/services/createDatabaseService.json": "CreateDatabaseServiceRequest",
    "api/data/createDatabase.json": "CreateDatabaseRequest",
    "api/data/createDatabaseSchema.json": "CreateDatabaseSchemaRequest",
    "api/data/createTable.json": "CreateTableRequest",
    "api/services/createPipelineService.json": "CreatePipelineServiceRequest",
    "api/data/createPipeline.json": "CreatePipelineRequest",
    "api/services/createStorageService.json": "CreateStorageServiceRequest",
    "api/data/createContainer.json": "CreateContainerRequest",
    "api/classification/createClassification.json": "CreateClassificationRequest",
    "api/classification/createTag.json": "CreateTagRequest",
    "api/tests/createTestDefinition.json": "CreateTestDefinitionRequest",
    "api/tests/createTestSuite.json": "CreateTestSuiteRequest",
    "api/tests/createTestCase.json": "CreateTestCaseRequest",
    "api/tests/createTestCaseResult.json": "CreateTestCaseResult",
    "api/lineage/addLineage.json": "AddLineageRequest",
    "auth/loginRequest.json": "LoginRequest",
    "configuration/openLineageSettings.json": "OpenLineageSettings",
    "api/lineage/openlineage/openLineageRunEvent.json": "OpenLineageRunEvent",
    "api/lineage/openlineage/openLineageBatchRequest.json": "OpenLineageBatchRequest",
    "entity/data/table.json#DataModel": "DataModel",
    "entity/data/table.json#Column": "Column",
}


class ModelsMissingError(RuntimeError):
    """The pinned openmetadata-ingestion releases are not installed where the stand-in looks."""


@functools.cache
def json_schema(relative: str, version: str) -> dict[str, Any]:
    """The JSON schema OM `version` validates a body of `relative` (a key of MODELS) against."""
    return _schemas(RELEASES[version])[relative]


@functools.cache
def _schemas(release: str) -> dict[str, Any]:
    path = MODELS_DIR / f"{release}.json"
    if not path.is_file():
        raise ModelsMissingError(
            f"OM's schemas of openmetadata-ingestion {release} are not in {MODELS_DIR}: run "
            "`make test` (or `python -m tests.support.fakes.om_models`, which installs them from PyPI)"
        )
    schemas: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schemas


def install() -> None:
    """Each release into MODELS_DIR/<release> (pip, no dependencies), then its schemas' JSON."""
    for release in RELEASES.values():
        folder = MODELS_DIR / release
        if not (folder / "metadata").is_dir():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--no-deps",
                    "--target",
                    str(folder),
                    f"openmetadata-ingestion=={release}",
                ],
                check=True,
            )
        subprocess.run(
            [sys.executable, __file__, str(folder), str(MODELS_DIR / f"{release}.json")], check=True
        )


def write_schemas(folder: Path, out: Path) -> None:
    """In a child: the schemas of the release installed in `folder`, written to `out`."""
    shell = types.ModuleType("metadata")  # the package without its __init__ (the profiler)
    shell.__path__ = [str(folder / "metadata")]
    sys.modules["metadata"] = shell
    schemas = {}
    for relative, model in MODELS.items():
        module = relative.partition("#")[0].removesuffix(".json").replace("/", ".")
        generated = importlib.import_module(f"metadata.generated.schema.{module}")
        schemas[relative] = as_om_reads(getattr(generated, model).model_json_schema())
    partial = out.with_suffix(".partial")
    partial.write_text(json.dumps(schemas, sort_keys=True), encoding="utf-8")
    partial.replace(out)


def as_om_reads(node: Any) -> Any:
    """A pydantic JSON schema as OM's own file says it (see the module docstring)."""
    if isinstance(node, list):
        return [as_om_reads(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: as_om_reads(v) for k, v in node.items()}
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        del out["anyOf"]
        out.pop("default", None)
        if len(rest) == 1:
            out = {**rest[0], **out}
        else:
            out["anyOf"] = rest
    if out.get("format") == "uri":
        out.pop("minLength", None)
        out.pop("maxLength", None)
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3:
        write_schemas(Path(sys.argv[1]), Path(sys.argv[2]))
    else:
        install()
