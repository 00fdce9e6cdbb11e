"""What dbt-oml prints on a terminal: its log lines, progress and the end-of-run summary.

Shared by the `dbt-oml` command and the dbt plugin; stdout carries only --dry-run's JSON.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from dbt_oml.redaction import redact, redact_event

logger = logging.getLogger("dbt_oml")


class RedactingFormatter(logging.Formatter):
    """Formats a record (message, arguments, traceback) and masks every secret in the result."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(level: str) -> None:
    """dbt-oml's one stderr handler; every line it writes goes through the redactor."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(RedactingFormatter("dbt-oml: %(levelname)s: %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


def say(text: str, *, err: bool = True) -> None:
    """Echo one line (stderr by default), secrets masked."""
    click.echo(redact(text), err=err)


def progress_bar() -> Any:
    """Column-lineage progress on stderr, only when stderr is a terminal (never in CI logs)."""
    if not sys.stderr.isatty():
        return None

    def draw(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        click.echo(f"\rdbt-oml: column lineage {done}/{total} models", err=True, nl=False)
        if end:
            click.echo("", err=True)

    return draw


def _print_plan(report: Any) -> None:
    """The bootstrap plan the pipeline put on the report (--dry-run with OpenMetadata)."""
    problem = getattr(report, "plan_problem", None)
    plan = getattr(report, "plan", None)
    if problem is not None:
        say(f"dbt-oml: no bootstrap plan: {problem}")
    elif plan is not None:
        say("dbt-oml: OpenMetadata bootstrap plan (nothing written):")
        for line in plan or ["nothing to create"]:
            say(f"  {line}")


def print_summary(report: Any, *, dry_run: bool) -> None:
    """The end-of-run summary; a dry run prints the events and the plan on the report."""
    delivery = report.delivery
    if dry_run:
        doc = {"events": [redact_event(e) for e in delivery.collected]}
        click.echo(json.dumps(doc, indent=1, sort_keys=True))
        say(f"dbt-oml: {report.events_built} events built (dry run, nothing sent)")
        _print_plan(report)
    else:
        line = (
            f"dbt-oml: {report.events_built} events, {delivery.delivered} delivered to "
            f"{report.destination}"
        )
        if delivery.failed:
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
        click.echo(f"dbt-oml: lineage explorer: {explorer} (xdg-open {explorer})", err=True)
    if report.refused:
        logger.error("events NOT sent (kept in %s): %s", delivery.outbox, report.refused)
    for error in delivery.errors[:3]:
        logger.error("delivery: %s", error)
