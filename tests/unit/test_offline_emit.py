"""`dbt-oml emit` in-process (pipeline.offline.emit) on the bundled project's saved artifacts:
every event is built and handed to the transport; what is not delivered lands in the outbox;
a missing or corrupt artifact is one clear ArtifactError. No dbt run (dbt's loaders only)."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.config import Settings, load_settings
from dbt_oml.config.settings import changed
from dbt_oml.dbt.project import ProjectOptions
from dbt_oml.delivery.emitter import read_outbox
from dbt_oml.errors import ArtifactError
from dbt_oml.pipeline import offline
from dbt_oml.redaction import Redactor
from tests.conftest import PROJECT

ARTIFACTS = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
EVENTS = 90  # what `dbt-oml build` sent for the same invocation (see tests/golden/README.md)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled project whose target/ holds the saved artifacts."""
    copy = tmp_path / "p"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    shutil.copytree(ARTIFACTS, copy / "target")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return copy


def _settings(cwd: Path, **changes: Any) -> Settings:
    base = load_settings(cli={}, environ={}, cwd=cwd, home=cwd)
    return changed(base, **changes)


def _emit(project: Path, **changes: Any) -> offline.Report:
    options = ProjectOptions(project_dir=project, profiles_dir=project)
    settings = _settings(project.parent, **changes)
    return offline.emit(settings, options, cwd=project.parent, redactor=Redactor())


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_event_is_built_and_delivered_through_the_file_transport(project: Path) -> None:
    events_file = project.parent / "out" / "events.jsonl"
    events_file.parent.mkdir()
    transport = {"type": "file", "log_file_path": str(events_file), "append": True}
    report = _emit(project, transport=transport)
    assert report.events_built == EVENTS
    assert (report.delivery.delivered, report.delivery.failed) == (EVENTS, 0)
    assert report.delivery.outbox is None
    sent = _lines(events_file)
    assert len(sent) == EVENTS
    parent = "dbt-run-jaffle_oml"
    assert (sent[0]["job"]["name"], sent[0]["eventType"]) == (parent, "START")
    assert (sent[-1]["job"]["name"], sent[-1]["eventType"]) == (parent, "COMPLETE")
    invocation = json.loads((ARTIFACTS / "run_results.json").read_text())["metadata"]
    assert sent[0]["run"]["facets"]["dbt_run"]["invocation_id"] == invocation["invocation_id"]
    assert not (project / "target" / "dbt_oml" / "outbox").exists()


def test_the_same_artifacts_give_the_same_run_ids(project: Path) -> None:
    first, second = project.parent / "a.jsonl", project.parent / "b.jsonl"
    for path in (first, second):
        _emit(project, transport={"type": "file", "log_file_path": str(path), "append": True})
    assert [e["run"]["runId"] for e in _lines(first)] == [e["run"]["runId"] for e in _lines(second)]


def test_undelivered_events_land_in_the_outbox(project: Path) -> None:
    unwritable = project.parent / "a-directory"
    unwritable.mkdir()  # the file transport cannot open a directory: every emit raises
    transport = {"type": "file", "log_file_path": str(unwritable), "append": True}
    report = _emit(project, transport=transport)
    assert report.events_built == EVENTS
    assert (report.delivery.delivered, report.delivery.failed) == (0, EVENTS)
    invocation_id = json.loads((ARTIFACTS / "run_results.json").read_text())["metadata"][
        "invocation_id"
    ]
    outbox = project / "target" / "dbt_oml" / "outbox" / f"{invocation_id}.jsonl"
    assert report.delivery.outbox == outbox
    assert stat.S_IMODE(outbox.stat().st_mode) == 0o600
    kept = read_outbox(outbox)
    assert len(kept) == EVENTS
    assert kept[0].job.name == "dbt-run-jaffle_oml"
    assert report.delivery.errors  # why, for the summary


def test_dry_run_collects_instead_of_sending(project: Path) -> None:
    report = _emit(project, dry_run=True)
    assert len(report.delivery.collected) == EVENTS
    assert report.delivery.delivered == 0
    assert not (project / "target" / "openlineage").exists()


@pytest.mark.parametrize(
    ("artifact", "damage"),
    [
        ("run_results.json", None),
        ("run_results.json", "{not json"),
        ("manifest.json", None),
        ("manifest.json", '{"truncated": '),
    ],
    ids=["missing-run-results", "corrupt-run-results", "missing-manifest", "corrupt-manifest"],
)
def test_a_missing_or_corrupt_artifact_is_one_clear_error(
    project: Path, artifact: str, damage: str | None
) -> None:
    path = project / "target" / artifact
    if damage is None:
        path.unlink()
    else:
        path.write_text(damage)
    events_file = project.parent / "events.jsonl"
    with pytest.raises(ArtifactError) as caught:
        _emit(project, transport={"type": "file", "log_file_path": str(events_file)})
    assert Path(caught.value.path).name == artifact
    assert caught.value.reason
    assert not events_file.exists()  # nothing half-sent
