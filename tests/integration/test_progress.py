"""After dbt's `Done.`: what `dbt-oml build` and `emit` say while they work (issue: 11-12 s of
silence at 300 models). Off a terminal one INFO line per phase; --quiet: none."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CliRun, copy_of_built, run_in_process

pytestmark = pytest.mark.integration

PHASES = ("catalog.json (dbt docs generate) ...", "column lineage and events to ")


def _phase_lines(stderr: str) -> list[str]:
    info = [x.removeprefix("dbt-oml: INFO: ") for x in stderr.splitlines()]
    return [x for x in info if x.startswith(PHASES)]


def _phases(stderr: str) -> list[str]:
    return [next(p for p in PHASES if x.startswith(p)) for x in _phase_lines(stderr)]


def test_build_says_each_phase_after_dbt_in_order(built: CliRun) -> None:
    assert built.returncode == 0, built.stderr[-3000:]
    # a whole build wrote catalog.json as it ended: no docs generate to wait for
    # the events of the models analysed first go out while the workers analyse the rest
    assert _phases(built.stderr) == list(PHASES[1:])
    assert _phase_lines(built.stderr)[-1] == (
        f"column lineage and events to {built.target / 'openlineage' / 'events.jsonl'} ..."
    )


def test_emit_says_its_phases_and_quiet_says_none(built: CliRun, tmp_path: Path) -> None:
    project = copy_of_built(built, tmp_path / "p")
    loud = run_in_process(["emit", "--profiles-dir", "."], cwd=project)
    assert loud.returncode == 0, loud.stderr
    # no dbt run: no docs generate; the events are built while the models are analysed
    info = [x.removeprefix("dbt-oml: INFO: ") for x in loud.stderr.splitlines()]
    assert [x for x in info if x.endswith(" ...")] == [
        f"column lineage and events to {project / 'target' / 'openlineage' / 'events.jsonl'} ..."
    ]
    quiet = run_in_process(["emit", "--profiles-dir", ".", "--quiet"], cwd=project)
    assert quiet.returncode == 0, quiet.stderr
    assert "INFO" not in quiet.stderr
    assert _phase_lines(quiet.stderr) == []
    assert "column lineage and events" not in quiet.stderr
    (summary,) = [x for x in quiet.stderr.splitlines() if " events, " in x]
    assert " delivered to " in summary


def test_on_a_terminal_the_phases_are_a_live_line_not_log_lines(
    built: CliRun, tmp_path: Path
) -> None:
    """stderr a real pseudo-terminal: rich draws the phases in place (and clears them)."""
    import os
    import pty
    import subprocess
    import sys

    project = copy_of_built(built, tmp_path / "p")
    screen, terminal = pty.openpty()
    cli = Path(sys.executable).with_name("dbt-oml")
    with subprocess.Popen(
        [str(cli), "emit", "--profiles-dir", "."],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
    ) as proc:
        os.close(terminal)
        drawn = b""
        while chunk := _read(screen):
            drawn += chunk
        assert proc.wait(timeout=120) == 0
    os.close(screen)
    text = drawn.decode(errors="replace")
    assert "dbt-oml: column lineage" in text  # drawn by the live line
    assert "INFO: column lineage" not in text  # not a log line
    assert " events, " in text  # the summary stays


def _read(fd: int) -> bytes:
    import os

    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the child closed its end
        return b""
