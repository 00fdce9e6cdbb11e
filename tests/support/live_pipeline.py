"""The live pipeline's test inputs: the golden build's artifacts (tests/golden/artifacts), the
DbtContext dbt would give for it, settings read from nowhere but a folder, a file transport."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from dbt_oml.config import Settings, load_settings
from dbt_oml.config.settings import changed
from dbt_oml.dbt.runner import DbtContext
from dbt_oml.namespaces import CatalogSpec

ARTIFACTS = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
MODEL = "model.jaffle_oml.stg_orders"
PARENT = "dbt-run-jaffle_oml"
_META = json.loads((ARTIFACTS / "run_results.json").read_text())["metadata"]
INVOCATION = _META["invocation_id"]
STARTED = datetime.fromisoformat(_META["invocation_started_at"].replace("Z", "+00:00"))


def dbt_context(project: Path, **changes: Any) -> DbtContext:
    """The DbtContext dbt gives for the golden build of `project`, with `changes`."""
    context = DbtContext(
        invocation_id=INVOCATION,
        started_at=STARTED,
        command="build",
        project_name="jaffle_oml",
        project_version="1.0.0",
        project_root=project,
        target_path=project / "target",
        profiles_dir=str(project),
        profile_name="jaffle_oml",
        target_name="local",
        adapter_type="duckdb",
        dbt_version="1.11.16",
        catalogs=(
            CatalogSpec(alias="warehouse", type="duckdb", path="warehouse.duckdb"),
            CatalogSpec(alias="crm", type="duckdb", path="crm.duckdb"),
            CatalogSpec(alias="dw", type="duckdb", path="dw.duckdb"),
        ),
    )
    return dataclasses.replace(context, **changes)


def settings_in(cwd: Path, **changes: Any) -> Settings:
    """Settings read from `cwd` alone (no CLI options, no environment), with `changes`."""
    return changed(load_settings(cli={}, environ={}, cwd=cwd, home=cwd), **changes)


def file_transport(path: Path) -> dict[str, Any]:
    """A file transport's settings, appending to `path`."""
    return {"type": "file", "log_file_path": str(path), "append": True}
