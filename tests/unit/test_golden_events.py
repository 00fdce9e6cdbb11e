"""Golden events: `dbt-oml emit` on saved artifacts of the bundled project, normalised, per job.

No dbt run: the artifacts in tests/golden/artifacts/ come from one `dbt-oml build` of
integration_project/ (see tests/golden/README.md). Set DBT_OML_UPDATE_GOLDEN=1 to rewrite the
golden files on purpose, then review the diff.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from dbt_oml import __version__
from dbt_oml.cli import main
from tests.conftest import PROJECT

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
ARTIFACTS = GOLDEN / "artifacts"
EVENTS = GOLDEN / "events"
# read at import: the autouse fixture clears DBT_OML_* before each test runs
UPDATE = os.environ.get("DBT_OML_UPDATE_GOLDEN") == "1"

_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TYPE_ORDER = {"START": 0, "RUNNING": 1, "COMPLETE": 2, "FAIL": 2, "ABORT": 2, "OTHER": 3}


class Normaliser:
    """Replaces what changes from run to run (ids, times, paths, versions) with placeholders."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.uuids: dict[str, str] = {}
        self.versions = {
            __version__: "<dbt-oml-version>",
            version("openlineage-python"): "<openlineage-version>",
        }

    def _uuid(self, match: re.Match[str]) -> str:
        return self.uuids.setdefault(match.group(0), f"<uuid-{len(self.uuids) + 1}>")

    def text(self, value: str) -> str:
        value = value.replace(self.root, "<root>")
        value = _TIME.sub("<time>", value)
        value = _UUID.sub(self._uuid, value)
        for real, placeholder in self.versions.items():
            value = re.sub(rf"(?<![\d.]){re.escape(real)}(?![\d.])", placeholder, value)
        return value

    def __call__(self, doc: Any) -> Any:
        if isinstance(doc, dict):
            return {k: self(v) for k, v in doc.items()}
        if isinstance(doc, list):
            return [self(v) for v in doc]
        if isinstance(doc, str):
            return self.text(doc)
        return doc


def normalise(events: list[dict[str, Any]], root: Path) -> dict[str, list[dict[str, Any]]]:
    """Events per job file name, in a stable order; placeholders numbered in that order."""
    ordered = sorted(
        events,
        key=lambda e: (
            e["job"]["namespace"],
            e["job"]["name"],
            e["eventTime"],
            _TYPE_ORDER.get(e["eventType"], 9),
        ),
    )
    norm = Normaliser(root)
    jobs: dict[str, list[dict[str, Any]]] = {}
    for event in ordered:
        name = re.sub(
            r"[^A-Za-z0-9._-]", "_", f"{event['job']['namespace']}.{event['job']['name']}"
        )
        jobs.setdefault(name, []).append(norm(event))
    return jobs


def dump(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    """`dbt-oml emit` in-process on a copy of the bundled project holding the saved artifacts."""
    root = tmp_path_factory.mktemp("golden")
    project = root / "p"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    shutil.copytree(ARTIFACTS, project / "target")
    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith(("DBT_OML_", "OPENLINEAGE", "DBT_")):
                mp.delenv(key)
        mp.setenv("HOME", str(root))
        mp.setenv("DO_NOT_TRACK", "1")
        mp.chdir(root)
        code = main(["emit", "--project-dir", "p", "--profiles-dir", "p"])
    assert code == 0
    lines = (project / "target" / "openlineage" / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines], root


def test_golden_events(emitted: tuple[list[dict[str, Any]], Path]) -> None:
    events, root = emitted
    jobs = normalise(events, root)
    if UPDATE:
        shutil.rmtree(EVENTS, ignore_errors=True)
        EVENTS.mkdir(parents=True)
        for name, docs in jobs.items():
            (EVENTS / f"{name}.json").write_text(dump(docs), encoding="utf-8")
    stored = {p.stem: p.read_text(encoding="utf-8") for p in sorted(EVENTS.glob("*.json"))}
    assert sorted(stored) == sorted(jobs), "jobs differ; DBT_OML_UPDATE_GOLDEN=1 rewrites them"
    for name, docs in jobs.items():
        assert dump(docs) == stored[name], f"{name}: events differ from tests/golden/events/"


def test_the_golden_run_covers_every_kind_of_node(
    emitted: tuple[list[dict[str, Any]], Path],
) -> None:
    events, _ = emitted
    assert len(events) == 90
    names = {e["job"]["name"] for e in events}
    kinds = {n.rsplit(".", 1)[-1] for n in names}
    assert {"run", "seed", "snapshot", "test"} <= kinds
    assert any(n.startswith("test.") for n in names)  # a run per test, at its own times
    assert any("columnLineage" in d.get("facets", {}) for e in events for d in e.get("outputs", []))


def test_normalisation_is_stable(tmp_path: Path) -> None:
    run = "01a22a97-c811-7ab0-b0d7-94051423011d"
    event = {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "START",
        "producer": f"https://pypi.org/project/dbt-oml/{__version__}/",
        "run": {"runId": run, "facets": {"parent": {"run": {"runId": run}}}},
        "job": {"namespace": "dbt", "name": "j"},
        "inputs": [{"namespace": f"duckdb://{tmp_path}/w.duckdb", "name": "t"}],
    }
    [(name, [doc])] = normalise([event], tmp_path).items()
    assert name == "dbt.j"
    assert doc["eventTime"] == "<time>"
    assert doc["run"]["runId"] == doc["run"]["facets"]["parent"]["run"]["runId"] == "<uuid-1>"
    assert doc["producer"] == "https://pypi.org/project/dbt-oml/<dbt-oml-version>/"
    assert doc["inputs"][0]["namespace"] == "duckdb://<root>/w.duckdb"
