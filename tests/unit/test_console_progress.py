"""Progress after dbt's `Done.` (dbt_oml.console): a live rich line on a terminal, one INFO line
per phase elsewhere, nothing with --quiet."""

from __future__ import annotations

import io
import logging

import pytest
from rich.console import Console

from dbt_oml.console import PhaseBar, PhaseLines, progress_for


def test_quiet_draws_nothing() -> None:
    assert progress_for(quiet=True, terminal=True) is None
    assert progress_for(quiet=True, terminal=False) is None


def test_off_a_terminal_each_phase_is_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    progress = progress_for(quiet=False, terminal=False)
    assert isinstance(progress, PhaseLines)
    caplog.set_level(logging.INFO, logger="dbt_oml")
    progress.phase("column lineage")
    for done in range(1, 301):
        progress.advance(done, 300)  # counts are not lines in a log
    progress.phase("events to x")
    progress.end()
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "column lineage ..."),
        ("INFO", "events to x ..."),
    ]


def test_on_a_terminal_the_live_line_shows_the_phase_and_its_count() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=100, color_system=None)
    bar = PhaseBar(console)
    bar.phase("column lineage")
    bar.advance(150, 300)
    bar._bar.refresh()  # what the live display draws on its next tick
    drawn = screen.getvalue()
    assert "dbt-oml: column lineage" in drawn
    assert "150/300" in drawn
    bar.phase("events to x")
    bar._bar.refresh()
    assert "dbt-oml: events to x" in screen.getvalue()
    assert len(bar._bar.tasks) == 1  # a new phase replaces the last one
    bar.end()
    assert not bar._bar.live.is_started


def test_a_bar_that_never_started_ends_quietly() -> None:
    bar = PhaseBar(Console(file=io.StringIO(), force_terminal=True))
    bar.end()
    assert not bar._bar.live.is_started
