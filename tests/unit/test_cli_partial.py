"""`lineage` and `impact` on a partial run's artifacts (issue 28 item 6): after `dbt run -s
stg_orders` the manifest has no compiled SQL for the other models, so what they read is unknown.
The answer is printed with one WARNING saying how many models it rests on lack compiled SQL and
to run `dbt compile`, and the command exits 3 (the artifacts are incomplete)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dbt_oml.cli import ExitCode, main
from tests.conftest import PROJECT

ARTIFACTS = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
RAN = "model.jaffle_oml.stg_orders"


@pytest.fixture
def partial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled project whose artifacts are those of `dbt run -s stg_orders` (a fresh
    checkout: no earlier build compiled the rest)."""
    copy = tmp_path / "p"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    shutil.copytree(ARTIFACTS, copy / "target")
    manifest = copy / "target" / "manifest.json"
    doc = json.loads(manifest.read_text())
    for uid, node in doc["nodes"].items():
        if node["resource_type"] in {"model", "snapshot"} and uid != RAN:
            node["compiled_code"], node["compiled"] = None, False
    manifest.write_text(json.dumps(doc))
    results = copy / "target" / "run_results.json"
    doc = json.loads(results.read_text())
    doc["results"] = [r for r in doc["results"] if r["unique_id"] == RAN]
    results.write_text(json.dumps(doc))
    monkeypatch.chdir(copy)
    monkeypatch.setenv("HOME", str(tmp_path))
    return copy


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([*args, "--profiles-dir", "."])
    out, err = capsys.readouterr()
    return code, out, err


def _warnings(err: str) -> list[str]:
    return [x for x in err.splitlines() if x.startswith("dbt-oml: WARNING: ")]


def test_impact_on_partial_artifacts_says_so_and_exits_3(
    partial: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "impact", "stg_orders.order_id")
    assert code == ExitCode.USAGE
    (warning,) = _warnings(err)
    assert warning.startswith(
        "dbt-oml: WARNING: this answer rests on 8 model(s) without compiled SQL in the artifacts "
        "(core_column_profile, core_customer_stats, core_open_balances, ..., of the project's "
        "15: a partial run's, such as `dbt run -s <model>`)"
    )
    assert "run `dbt compile` (the same --target and --vars), then dbt-oml impact again" in warning
    # the readers it cannot analyse are named, conservatively: "may read", not "read by 0"
    assert "may read core_orders  (opaque: no compiled SQL in the artifacts)" in out
    assert out.startswith("dbt-oml impact: incomplete: it rests on 8 model(s) without compiled")
    code, out, _ = _run(capsys, "impact", "stg_orders.order_id", "--format", "json")
    assert code == ExitCode.USAGE
    doc = json.loads(out)
    assert "model.jaffle_oml.core_orders" in doc["uncompiled"]
    code, out, _ = _run(capsys, "impact", "stg_orders.order_id", "--format", "md")
    assert "- incomplete: it rests on 8 model(s) without compiled SQL (of the project's 15" in out
    assert "| `core_orders` | may read (opaque) | no compiled SQL in the artifacts |" in out


def test_fail_on_with_named_columns_keeps_the_partial_exit(
    partial: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "impact", "stg_orders.order_id", "--fail-on", "changed")
    assert code == ExitCode.USAGE  # a column named on the command line never fails --fail-on
    assert len(_warnings(err)) == 1


def test_lineage_downstream_on_partial_artifacts_exits_3(
    partial: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "lineage", "stg_orders", "order_id", "--downstream")
    assert code == ExitCode.USAGE
    assert "(nothing downstream reads it)" in out  # the answer, printed all the same
    (warning,) = _warnings(err)
    assert warning.startswith("dbt-oml: WARNING: this answer rests on 8 model(s) without")
    assert warning.endswith("then dbt-oml lineage again")


def test_an_answer_that_rests_on_compiled_models_only_is_not_partial(
    partial: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # stg_orders' upstream is a source: nothing uncompiled on the way
    code, _, err = _run(capsys, "lineage", "stg_orders", "order_id")
    assert code == ExitCode.SUCCESS, err
    assert _warnings(err) == []


def test_complete_artifacts_are_not_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "p"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    shutil.copytree(ARTIFACTS, copy / "target")
    monkeypatch.chdir(copy)
    monkeypatch.setenv("HOME", str(tmp_path))
    code, out, err = _run(capsys, "impact", "stg_orders.order_id")
    assert code == ExitCode.SUCCESS, err
    assert "incomplete" not in out
    assert "may read core_column_profile" in out


def test_a_selector_from_partial_artifacts_is_none_and_exit_3(
    partial: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Slim CI must never build fewer models than needed: on a partial run's artifacts the
    selector could miss readers, so it prints none and says what to run."""
    state = partial / "prod-target"
    shutil.copytree(ARTIFACTS, state)
    code = main(["impact", "--state", str(state), "--selector", "--profiles-dir", "."])
    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    assert out == ""
    assert "run `dbt compile`" in err


def test_a_selector_needs_a_state(partial: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["impact", "stg_orders.order_id", "--selector", "--profiles-dir", "."])
    assert code == ExitCode.USAGE
    assert "--selector needs --state DIR" in capsys.readouterr().err
