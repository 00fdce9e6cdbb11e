"""Exit codes and messages of the CLI paths that do not run dbt (those are in integration/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dbt_oml import cli
from dbt_oml.cli import ExitCode, main
from dbt_oml.delivery.emitter import to_dict
from tests.conftest import MINI, PROJECT


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == ExitCode.SUCCESS
    out = capsys.readouterr().out
    for code in ("0, 1, 2", "3 ", "4 ", "5 "):
        assert code in out
    assert main([]) == ExitCode.USAGE


def test_every_option_is_documented_in_help() -> None:
    for option in cli._OPTIONS:
        for flag in option.opts:
            assert flag in cli.HELP, flag


def test_bad_config_is_one_line_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--job-naming", "nope", "build"]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "job_naming" in err[0]
    assert "Traceback" not in err[0]


def test_missing_option_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--namespace"]) == ExitCode.USAGE
    assert "--namespace" in capsys.readouterr().err


def _emit(tmp_path: Path, target: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "dbt_oml",
            "emit",
            "--project-dir",
            str(PROJECT),
            "--profiles-dir",
            str(PROJECT),
            "--target-path",
            str(target),
            *extra,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DO_NOT_TRACK": "1"},
    )


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda t: (t / "run_results.json").unlink(), "run_results.json: not found"),
        (
            lambda t: (t / "manifest.json").write_text("{not json"),
            "manifest.json: is not valid JSON",
        ),
        (
            lambda t: (t / "manifest.json").write_text(
                json.dumps(
                    {
                        "metadata": {
                            "dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v99.json"
                        }
                    }
                )
            ),
            "manifest schema v99 is not supported",
        ),
    ],
    ids=["missing", "corrupt", "version"],
)
def test_emit_bad_artifacts(tmp_path: Path, mini_target: Path, damage, expected: str) -> None:
    damage(mini_target)
    proc = _emit(tmp_path, mini_target)
    assert proc.returncode == ExitCode.USAGE, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert expected in lines[0]
    assert str(mini_target) in lines[0]


def test_emit_dry_run_prints_one_json_document(tmp_path: Path, mini_target: Path) -> None:
    proc = _emit(tmp_path, mini_target, "--dry-run")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["events"]) > 10
    assert not (mini_target / "openlineage").exists()


def test_emit_bad_profile_dir(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dbt_oml", "emit", "--project-dir", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == ExitCode.USAGE
    assert "has no dbt_project.yml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_replay_needs_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay"]) == ExitCode.USAGE
    assert "needs outbox FILE" in capsys.readouterr().err


def test_mini_fixture_is_present() -> None:
    assert (MINI / "manifest.json").exists()


class _BoomError(RuntimeError):
    pass


def _crashing_build(dbt_code: int):
    def build(settings, args, *, cwd, report, **_):
        report.dbt_return_code = dbt_code
        raise _BoomError("a dbt-oml bug")

    return build


@pytest.mark.parametrize(
    ("dbt_code", "flags", "expected"),
    [(0, [], 0), (1, [], 1), (0, ["--fail-on-emit-error"], 5), (1, ["--fail-on-emit-error"], 1)],
)
def test_a_bug_after_dbt_ran_does_not_hide_dbts_code(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    dbt_code: int,
    flags: list[str],
    expected: int,
) -> None:
    from dbt_oml.pipeline import live as pipeline

    monkeypatch.setattr(pipeline, "build", _crashing_build(dbt_code))
    assert main([*flags, "build"]) == expected
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert "_BoomError: a dbt-oml bug" in err
    assert "internal error" in err


def test_a_bug_before_dbt_ran_is_exit_5(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dbt_oml.pipeline import live as pipeline

    def build(settings, args, *, cwd, report, **_):
        raise _BoomError("early")

    monkeypatch.setattr(pipeline, "build", build)
    assert main(["build"]) == ExitCode.BUG


# -- flush and replay find the project's outbox from anywhere ----------------------------------


def _outbox_project(tmp_path: Path, target: str = "target") -> tuple[Path, list[dict]]:
    from tests.conftest import copy_project
    from tests.unit.test_delivery import _events

    events = [to_dict(e) for e in _events(MINI)]
    proj = copy_project(tmp_path / "project")
    outbox = proj / target / "dbt_oml" / "outbox"
    outbox.mkdir(parents=True)
    lines = "".join(json.dumps(e) + "\n" for e in events)
    (outbox / "inv.jsonl").write_text(lines)
    (outbox / "inv.rejected.jsonl").write_text(lines[: lines.index("\n") + 1])
    return proj, events


@pytest.mark.parametrize("target", ["target", "custom-target"])
def test_flush_from_another_directory_honours_the_project_options(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
) -> None:
    proj, events = _outbox_project(tmp_path, target)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    flags = ["--project-dir", str(proj), "--profiles-dir", str(proj)]
    if target != "target":
        flags += ["--target-path", target]
    assert main(["flush", *flags]) == ExitCode.SUCCESS, capsys.readouterr().err
    sent = (proj / target / "openlineage" / "events.jsonl").read_text().splitlines()
    assert len(sent) == len(events)
    outbox = proj / target / "dbt_oml" / "outbox"
    assert sorted(p.name for p in outbox.iterdir()) == ["inv.rejected.jsonl"]
    assert f"{len(events)} events, {len(events)} delivered" in capsys.readouterr().err


def test_replay_sends_rejected_events_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proj, _ = _outbox_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    rejected = proj / "target" / "dbt_oml" / "outbox" / "inv.rejected.jsonl"
    assert main(["replay", str(rejected), "--project-dir", str(proj)]) == ExitCode.SUCCESS
    sent = (proj / "target" / "openlineage" / "events.jsonl").read_text().splitlines()
    assert len(sent) == 1
    assert not rejected.exists()
    assert "1 events, 1 delivered" in capsys.readouterr().err


def test_flush_skips_a_torn_last_line_and_sends_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proj, events = _outbox_project(tmp_path)
    kept = proj / "target" / "dbt_oml" / "outbox" / "inv.jsonl"
    lines = kept.read_text()
    kept.write_text(lines + lines[:50])  # the process died in the middle of an append
    monkeypatch.chdir(proj)
    assert main(["flush"]) == ExitCode.SUCCESS
    sent = (proj / "target" / "openlineage" / "events.jsonl").read_text().splitlines()
    assert len(sent) == len(events)
    err = capsys.readouterr().err
    assert f"WARNING: {kept}:{len(events) + 1}: skipped, not a JSON line, torn" in err
