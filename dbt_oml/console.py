"""What dbt-oml prints on a terminal: its log lines, progress and the end-of-run summary.

Shared by the `dbt-oml` command and the dbt plugin, each making one `Console` per command with
the run's redactor: every line it writes, the log's included, is redacted by it. stdout carries
only --dry-run's JSON.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from dbt_oml.redaction import Redactor

logger = logging.getLogger("dbt_oml")


class RedactingFormatter(logging.Formatter):
    """Formats a record (message, arguments, traceback) and masks every secret in the result."""

    def __init__(self, fmt: str, redactor: Redactor) -> None:
        super().__init__(fmt)
        self.redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor(super().format(record))


class Console:
    """One command's output: its log handler, its lines and its summary, all redacted by the
    run's redactor (which learns the profile's secrets as the run goes)."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self.redactor = redactor or Redactor()

    def log_to_stderr(self, level: str) -> None:
        """dbt-oml's one stderr handler (replacing an earlier command's in this process)."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            RedactingFormatter("dbt-oml: %(levelname)s: %(message)s", self.redactor)
        )
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False

    def say(self, text: str, *, err: bool = True) -> None:
        """Echo one line (stderr by default), secrets masked."""
        click.echo(self.redactor(text), err=err)

    def summary(self, report: Any, *, dry_run: bool) -> None:
        """The end-of-run summary; a dry run prints the events and the plan on the report."""
        _summary(self, report, dry_run=dry_run)


class PhaseLines:
    """Off a terminal (CI logs, a pod's log): one INFO line as each phase starts, so a wait
    says what it is waiting for; counts are not drawn."""

    def phase(self, label: str) -> None:
        logger.info("%s ...", label)

    def advance(self, done: int, total: int) -> None:
        pass

    def end(self) -> None:
        pass


class PhaseBar:
    """On a terminal: rich's live line on stderr (spinner, phase, bar and count, elapsed),
    replaced by each new phase and gone when the work ends."""

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("dbt-oml: {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console or Console(stderr=True),
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._task: Any = None

    def phase(self, label: str) -> None:
        if self._task is None:
            self._bar.start()
        else:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(label, total=None)

    def advance(self, done: int, total: int) -> None:
        if self._task is not None:
            self._bar.update(self._task, completed=done, total=total)

    def end(self) -> None:
        if self._task is not None:
            self._bar.stop()
            self._task = None


def progress_for(*, quiet: bool, terminal: bool | None = None) -> PhaseBar | PhaseLines | None:
    """How the work after dbt shows itself: nothing with --quiet, a live bar on a terminal
    (stderr), else one line per phase."""
    if quiet:
        return None
    on_terminal = sys.stderr.isatty() if terminal is None else terminal
    return PhaseBar() if on_terminal else PhaseLines()


def _print_plan(say: Any, report: Any) -> None:
    """The bootstrap plan the pipeline put on the report (--dry-run with OpenMetadata)."""
    problem = getattr(report, "plan_problem", None)
    plan = getattr(report, "plan", None)
    if problem is not None:
        say(f"dbt-oml: no bootstrap plan: {problem}")
    elif plan is not None:
        say("dbt-oml: OpenMetadata bootstrap plan (nothing written):")
        for line in plan or ["nothing to create"]:
            say(f"  {line}")


def _summary(console: Console, report: Any, *, dry_run: bool) -> None:
    say = console.say
    delivery = report.delivery
    if dry_run:
        doc = {"events": [console.redactor.event(e) for e in delivery.collected]}
        click.echo(json.dumps(doc, indent=1, sort_keys=True))
        say(f"dbt-oml: {report.events_built} events built (dry run, nothing sent)")
        _print_plan(say, report)
    else:
        line = (
            f"dbt-oml: {report.events_built} events, {delivery.delivered} delivered to "
            f"{report.destination}"
        )
        if delivery.failed and delivery.kept_remotely:
            line += (
                f"; {delivery.failed} NOT delivered, kept in {delivery.kept_remotely} "
                f"(send later: dbt-oml flush --outbox-dir {delivery.kept_remotely})"
            )
        elif delivery.failed:
            line += (
                f"; {delivery.failed} NOT delivered, kept in {delivery.outbox} "
                f"(send later: dbt-oml replay {delivery.outbox})"
            )
        say(line)
        for note in delivery.notes:
            say(f"dbt-oml: {note}")
    if report.namespaces:
        shown = ", ".join(f"{k} -> {v}" for k, v in sorted(report.namespaces.items()))
        say(f"dbt-oml: namespaces: {shown}")
    if report.lineage_models or report.opaque:
        say(
            f"dbt-oml: column lineage for {report.lineage_models} model(s); "
            f"{len(report.opaque)} opaque (table-level lineage only)"
        )
    for uid, reason in sorted(report.opaque.items()):
        logger.warning("no column lineage for %s: %s", uid, reason)
    explorer = getattr(report, "explorer", None)
    if explorer is not None:
        say(f"dbt-oml: lineage explorer: {explorer} (xdg-open {explorer})")
    if report.refused:
        logger.error("events NOT sent (kept in %s): %s", delivery.outbox, report.refused)
    for error in delivery.errors[:3]:
        logger.error("delivery: %s", error)
