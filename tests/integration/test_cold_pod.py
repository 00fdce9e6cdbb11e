"""`dbt-oml emit` on a cold pod resolves a plain DuckDB project without dbt-core's loaders
(dbt.quick_project; issue 31: they cost 0.9 s and 80 MiB before an artifact is read), and its
events are the ones dbt's loaders give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CliRun, clean_env, copy_of_built, read_events

pytestmark = pytest.mark.integration

_EMIT = """
import json, sys
from dbt_oml.cli import main
code = main(["emit", "--profiles-dir", "."])
print(json.dumps({"code": code, "dbt": sorted(m for m in sys.modules if m.startswith("dbt."))}))
"""


def _emit(project: Path) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _EMIT],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_emit_needs_no_dbt_loaders_and_sends_what_they_would(built: CliRun, tmp_path: Path) -> None:
    quick = copy_of_built(built, tmp_path / "quick")
    first = _emit(quick)
    assert first["code"] == 0
    assert not [m for m in first["dbt"] if m.startswith(("dbt.config", "dbt.adapters"))]

    # the same project, its profile given a Jinja filter only dbt's loaders know
    slow = copy_of_built(built, tmp_path / "slow")
    profiles = slow / "profiles.yml"
    text = profiles.read_text()
    profiles.write_text(
        text.replace("path: warehouse.duckdb", "path: \"{{ 'warehouse.duckdb' | lower }}\"", 1)
    )
    second = _emit(slow)
    assert second["code"] == 0
    assert "dbt.config.runtime" in second["dbt"]

    def events(project: Path) -> list[str]:
        """Each event as text, the project's folder written as <project> (file datasets)."""
        found = read_events(project / "target" / "openlineage" / "events.jsonl")
        return [json.dumps(e, sort_keys=True).replace(str(project), "<project>") for e in found]

    assert events(quick) == events(slow)
