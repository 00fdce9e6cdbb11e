"""`dbt-oml flush` and `replay`: the project's outbox from anywhere, crash-safe claims, lines
that are no event kept, reasons logs that go with what they explained."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dbt_oml.cli import ExitCode, main
from dbt_oml.delivery.emitter import to_dict
from tests.conftest import MINI

# -- flush and replay find the project's outbox from anywhere ----------------------------------


def _outbox_project(tmp_path: Path, target: str = "target") -> tuple[Path, list[dict]]:
    from tests.conftest import copy_project
    from tests.support.events import run_events

    events = [to_dict(e) for e in run_events(MINI)]
    proj = copy_project(tmp_path / "project", parsed=False)  # files only: no dbt here
    outbox = proj / target / "dbt_oml" / "outbox"
    outbox.mkdir(parents=True)
    lines = "".join(json.dumps(e) + "\n" for e in events)
    (outbox / "inv.jsonl").write_text(lines)
    (outbox / "inv.rejected.jsonl").write_text(lines[: lines.index("\n") + 1])
    return proj, events


@pytest.mark.parametrize(
    ("target", "given"), [("target", None), ("custom-target", "flag"), ("env-target", "env")]
)
def test_flush_from_another_directory_honours_the_project_options(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    given: str | None,
) -> None:
    proj, events = _outbox_project(tmp_path, target)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    flags = ["--project-dir", str(proj), "--profiles-dir", str(proj)]
    if given == "flag":
        flags += ["--target-path", target]
    elif given == "env":  # dbt's own variable, relative to the project as dbt reads it
        monkeypatch.setenv("DBT_TARGET_PATH", target)
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


def test_replay_from_another_directory_honours_the_target_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proj, _ = _outbox_project(tmp_path, "custom-target")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    rejected = proj / "custom-target" / "dbt_oml" / "outbox" / "inv.rejected.jsonl"
    flags = ["--project-dir", str(proj), "--target-path", "custom-target"]
    assert main(["replay", str(rejected), *flags]) == ExitCode.SUCCESS
    sent = (proj / "custom-target" / "openlineage" / "events.jsonl").read_text().splitlines()
    assert len(sent) == 1
    assert not (proj / "target").exists()
    assert not (elsewhere / "target").exists()
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
    # named as the flush claimed it (inv.jsonl.replaying-<host>-<pid>)
    line = re.escape(f"WARNING: {kept}") + r"\.replaying-\S+-\d+:" + f"{len(events) + 1}: skipped"
    assert re.search(line + ", not a JSON line, torn", err), err


def test_a_flush_killed_mid_delivery_strands_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A flush killed after claiming its files (an older release's `*.replaying`, this one's
    `*.replaying-<host>-<pid>` of a process that is gone): the next flush gives them back and
    sends every event; a claim of a flush still running is left to it."""
    import socket

    proj, events = _outbox_project(tmp_path)
    outbox = proj / "target" / "dbt_oml" / "outbox"
    kept = outbox / "inv.jsonl"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    host = socket.gethostname()
    (outbox / "old.jsonl.replaying").write_text(kept.read_text())
    kept.replace(outbox / f"inv.jsonl.replaying-{host}-{dead}")
    alive = outbox / f"busy.jsonl.replaying-{host}-1"  # pid 1 runs: its flush goes on
    alive.write_text("{}\n")
    monkeypatch.chdir(proj)
    assert main(["flush"]) == ExitCode.SUCCESS, capsys.readouterr().err
    sent = (proj / "target" / "openlineage" / "events.jsonl").read_text().splitlines()
    assert len(sent) == 2 * len(events)
    assert sorted(p.name for p in outbox.iterdir()) == [alive.name, "inv.rejected.jsonl"]
    err = capsys.readouterr().err
    assert "a flush that did not finish left it" in err


def test_a_flush_that_delivers_everything_removes_the_reasons_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proj, _ = _outbox_project(tmp_path)
    outbox = proj / "target" / "dbt_oml" / "outbox"
    (outbox / "inv.jsonl").replace(outbox / "jetstream.jsonl")
    (outbox / "jetstream.reasons.log").write_text("2026-12-02T10:00:00Z 3 event(s): refused\n")
    monkeypatch.chdir(proj)
    assert main(["flush"]) == ExitCode.SUCCESS, capsys.readouterr().err
    assert sorted(p.name for p in outbox.iterdir()) == ["inv.rejected.jsonl"]


def test_a_flush_keeps_the_lines_it_cannot_read_in_a_rejected_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line nested 100,000 deep, a JSON object that is no event, a torn last line: each is
    skipped with a WARNING, every event of every file is sent, and the skipped lines are kept
    as they were in `<stem>.rejected.jsonl` (flush never sends it): nothing is lost."""
    proj, events = _outbox_project(tmp_path)
    outbox = proj / "target" / "dbt_oml" / "outbox"
    good = (outbox / "inv.jsonl").read_text()
    deep, no_event, torn = "[" * 100_000, '{"eventType": "COMPLETE"}', good[:50]
    (outbox / "inv.jsonl").write_text(f"{deep}\n{good}{no_event}\n{torn}")
    (outbox / "other.jsonl").write_text(good)
    (outbox / "odd.jsonl").mkdir()  # a directory: left alone, one WARNING
    monkeypatch.chdir(proj)
    assert main(["flush"]) == ExitCode.SUCCESS, capsys.readouterr().err
    sent = (proj / "target" / "openlineage" / "events.jsonl").read_text().splitlines()
    assert len(sent) == 2 * len(events)
    assert sorted(p.name for p in outbox.iterdir()) == [
        "inv.rejected.jsonl",
        "odd.jsonl",
    ]
    rejected = (outbox / "inv.rejected.jsonl").read_text().splitlines()
    assert rejected[1:] == [deep, no_event, torn]  # after the event the server refused
    err = capsys.readouterr().err
    assert err.count("odd.jsonl: a directory, not an outbox file: left alone") == 1
    assert f"3 line(s) that are no event kept in {outbox / 'inv.rejected.jsonl'}" in err
    assert "Traceback" not in err
