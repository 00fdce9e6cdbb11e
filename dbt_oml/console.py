"""What dbt-oml prints on a terminal: its log lines, progress and the end-of-run summary.

Shared by the `dbt-oml` command and the dbt plugin; stdout carries only --dry-run's JSON.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from dbt_oml.errors import ConfigError

logger = logging.getLogger("dbt_oml")


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("dbt-oml: %(levelname)s: %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


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


def _print_plan(settings: Any, events: list[dict[str, Any]]) -> None:
    from dbt_oml.errors import DeliveryError
    from dbt_oml.run_state import bootstrap_plan

    try:
        plan = bootstrap_plan(settings, events)
    except (DeliveryError, ConfigError) as e:
        click.echo(f"dbt-oml: no bootstrap plan: {e}", err=True)
        return
    if plan is not None:
        click.echo("dbt-oml: OpenMetadata bootstrap plan (nothing written):", err=True)
        for line in plan or ["nothing to create"]:
            click.echo(f"  {line}", err=True)


def print_summary(report: Any, *, dry_run: bool, settings: Any = None) -> None:
    delivery = report.delivery
    if dry_run:
        click.echo(json.dumps({"events": delivery.collected}, indent=1, sort_keys=True))
        click.echo(f"dbt-oml: {report.events_built} events built (dry run, nothing sent)", err=True)
        _print_plan(settings, delivery.collected)
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
        click.echo(line, err=True)
    if report.namespaces:
        shown = ", ".join(f"{k} -> {v}" for k, v in sorted(report.namespaces.items()))
        click.echo(f"dbt-oml: namespaces: {shown}", err=True)
    if report.lineage_models or report.opaque:
        click.echo(
            f"dbt-oml: column lineage for {report.lineage_models} model(s); "
            f"{len(report.opaque)} opaque (table-level lineage only)",
            err=True,
        )
    for uid, reason in sorted(report.opaque.items()):
        logger.warning("no column lineage for %s: %s", uid, reason)
    if report.refused:
        logger.error("events NOT sent (kept in %s): %s", delivery.outbox, report.refused)
    for error in delivery.errors[:3]:
        logger.error("delivery: %s", error)
