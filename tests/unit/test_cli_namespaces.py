"""Namespace overrides naming no catalog of the project (issue 27 item 9): exit 3 with one line
listing the catalogs, before any event is sent: `emit` from the profile and the manifest, a build
from the profile at once, or from the manifest as soon as dbt has parsed (events held till then).
No dbt run: the bundled project's saved artifacts, and LiveEmitter driven as dbt drives it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.artifacts import read_artifacts
from dbt_oml.cli import ExitCode, main
from dbt_oml.dbt.runner import NodeStarted
from dbt_oml.errors import ConfigError
from dbt_oml.pipeline.live import LiveEmitter, finish
from dbt_oml.pipeline.report import Report
from dbt_oml.redaction import Redactor
from tests.conftest import PROJECT
from tests.support.live_pipeline import (
    MODEL,
    PARENT,
    STARTED,
    dbt_context,
    file_transport,
    settings_in,
)

ARTIFACTS = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
SOURCE = "source.jaffle_oml.crm.customers"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled project with the saved artifacts; its crm.customers source lives in a
    catalog `lake` that only the manifest names (attached by a hook, say)."""
    copy = tmp_path / "p"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    shutil.copytree(ARTIFACTS, copy / "target")
    manifest = copy / "target" / "manifest.json"
    doc = json.loads(manifest.read_text())
    doc["sources"][SOURCE]["database"] = "lake"
    manifest.write_text(json.dumps(doc))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return copy


def _emit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["emit", "--project-dir", "p", "--profiles-dir", "p", *args])
    return code, capsys.readouterr().err


def test_emit_refuses_an_override_of_no_catalog_before_sending(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _emit(capsys, "--namespaces", "crmm=mssql://source-sql:1433")
    assert code == ExitCode.USAGE
    assert err.strip().splitlines() == [
        "dbt-oml emit: config 'namespaces' (--namespaces): names no catalog of the project: "
        "'crmm' (did you mean 'crm'?); its catalogs: crm, dw, lake, warehouse"
    ]
    assert not (project / "target" / "openlineage").exists()  # nothing was sent


def test_emit_takes_a_catalog_only_the_manifest_names_in_any_case(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _emit(capsys, "--namespaces", "LAKE=s3://lake", "--namespaces", "Crm=mysql://c:1")
    assert code == ExitCode.SUCCESS, err
    lines = (project / "target/openlineage/events.jsonl").read_text().splitlines()
    events = [json.loads(x) for x in lines]
    read = {d["name"]: d["namespace"] for e in events for d in e["inputs"]}
    assert read["lake.sales.Customers"] == "s3://lake"
    assert read["crm.sales.payments"] == "mysql://c:1"
    # one catalog named twice (Crm= for crm) is one catalog in the summary
    assert "Crm -> " not in err
    assert "crm -> mysql://c:1" in err


def test_the_variable_is_named_as_the_source(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBT_OML_NAMESPACES", "dww=postgres://dw:5432")
    code, err = _emit(capsys)
    assert code == ExitCode.USAGE
    assert "(DBT_OML_NAMESPACES): names no catalog of the project: 'dww' (did you mean" in err


def _live(project: Path, **namespaces: str) -> tuple[LiveEmitter, Path, list[int]]:
    """LiveEmitter as dbt drives it: the invocation, one model's start, then the end."""
    events = project.parent / "events.jsonl"
    settings = settings_in(project.parent, transport=file_transport(events), namespaces=namespaces)
    live = LiveEmitter(settings, cwd=project.parent, report=Report(), redactor=Redactor())
    context = dbt_context(project)
    seen = []
    live.on_invocation(context)
    seen.append(len(events.read_text().splitlines()) if events.exists() else 0)
    live.on_node_start(NodeStarted(unique_id=MODEL, started_at=STARTED + timedelta(seconds=1)))
    seen.append(len(events.read_text().splitlines()) if events.exists() else 0)
    return live, events, seen


def _finish(live: LiveEmitter, project: Path) -> None:
    finish(
        live,
        read_artifacts(project / "target"),
        node_starts={MODEL: STARTED + timedelta(seconds=1)},
        ended_at=STARTED + timedelta(minutes=1),
        error=None,
    )


def test_a_build_holds_its_events_until_the_manifest_names_the_catalog(project: Path) -> None:
    live, events, seen = _live(project, lake="s3://lake")
    # the profile has no `lake`: the parent START waited for dbt's parse, then went out first
    assert seen == [0, 2]
    _finish(live, project)
    sent = [json.loads(x) for x in events.read_text().splitlines()]
    assert (sent[0]["job"]["name"], sent[0]["eventType"]) == (PARENT, "START")
    assert sent[1]["job"]["name"].endswith("stg_orders.build.run")
    assert {d["namespace"] for e in sent for d in e["inputs"] if d["name"].startswith("lake.")} == {
        "s3://lake"
    }


def test_a_build_sends_nothing_when_an_override_names_no_catalog(project: Path) -> None:
    live, events, seen = _live(project, laek="s3://lake")
    assert seen == [0, 0]
    with pytest.raises(ConfigError, match=r"'laek' \(did you mean 'lake'\?\)") as err:
        _finish(live, project)
    assert err.value.key == "namespaces"
    assert not events.exists()
    assert live.report.delivery.delivered == 0


def test_a_profile_catalog_is_known_at_once(project: Path) -> None:
    _, _, seen = _live(project, crm="mssql://source-sql:1433")
    assert seen == [1, 2]  # no waiting: the parent START went out live


@pytest.mark.parametrize(("dbt_code", "expected"), [(0, ExitCode.USAGE), (1, 1), (2, 2)])
def test_after_dbt_ran_the_refusal_is_exit_3_unless_dbt_failed(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    dbt_code: int,
    expected: int,
) -> None:
    from dbt_oml.pipeline import live as pipeline

    def build(settings: Any, args: Any, *, report: Report, **_: Any) -> Report:
        report.dbt_return_code = dbt_code
        raise ConfigError(key="namespaces", source="--namespaces", reason="names no catalog")

    monkeypatch.setattr(pipeline, "build", build)
    assert main(["build", "--namespaces", "crmm=x://y"]) == expected
    err = capsys.readouterr().err
    assert "dbt ran, no events were sent: fix it, then `dbt-oml emit`" in err


def test_settings_remember_where_each_value_was_read(tmp_path: Path) -> None:
    from dbt_oml.config import load_settings

    (tmp_path / "dbt-oml.yml").write_text("namespaces: {crm: 'mysql://c:1'}\njob_namespace: a\n")
    settings = load_settings(
        cli={"job_namespace": "b"},
        environ={"OM_HOST": "https://om", "DBT_OML_DUCKDB_NAMESPACE": "duckdb://pod"},
        cwd=tmp_path,
    )
    assert dataclasses.asdict(settings)["sources"] == {
        "namespaces": str(tmp_path / "dbt-oml.yml"),
        "job_namespace": "--job-namespace",
        "duckdb_namespace": "DBT_OML_DUCKDB_NAMESPACE",
        "transport": "OM_HOST",
    }
