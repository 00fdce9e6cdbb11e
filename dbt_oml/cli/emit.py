"""`dbt-oml emit` (alias send-events), `replay` and `flush`: send events without running dbt.

\b
Exit codes:
  0  every event was delivered (or --dry-run)
  3  usage or configuration error, missing or corrupt artifacts
  4  events were not delivered (they stay in the outbox), or the column-lineage guard refused
     (a transport that may reach OpenMetadata; never file or console)
  5  a dbt-oml bug (traceback printed)
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.cli.options import (
    PROJECT_KEYS,
    announce,
    console,
    guarded,
    load,
    project_options,
    project_params,
    say,
    settings_options,
    takes,
)
from dbt_oml.console import progress_for
from dbt_oml.errors import ConfigError

if TYPE_CHECKING:
    from dbt_oml.config import Settings
    from dbt_oml.pipeline.report import Report

logger = logging.getLogger("dbt_oml")
_CODES = (__doc__ or "").split("\n\n", 1)[1]


def _project(opts: dict[str, Any]) -> dict[str, Any]:
    return {k: opts.get(k) for k in PROJECT_KEYS}


def _target_path(opts: dict[str, Any]) -> Path:
    """dbt's target directory from the project options (flush and replay need no profile)."""
    from dbt_oml.dbt.runner import target_path_of

    return target_path_of(project_options(_project(opts), Path.cwd()))


def _finish(report: Report, settings: Settings) -> int:
    console().summary(report, dry_run=settings.emit.dry_run)
    for problem in report.problems:
        logger.warning("%s", problem)
    failed = report.delivery.failed or (report.refused and not settings.emit.dry_run)
    return ExitCode.DELIVERY_FAILED if failed else ExitCode.SUCCESS


def _send_again(settings: Settings, files: list[Path], target: Path) -> int:
    """replay and flush: the kept events of `files` sent again, and the summary."""
    from dbt_oml.pipeline import offline

    report = offline.replay(
        settings,
        files,
        target_path=target,
        redactor=console().redactor,
        announce=lambda: announce(settings),
    )
    return _finish(report, settings)


def _command(name: str, text: str, *extra: click.Parameter) -> Callable[[Any], click.Command]:
    own = takes(name)  # the others (--docs-generate, ...) would be ignored: click refuses them
    return click.command(
        name,
        short_help=text.split(",", maxsplit=1)[0].split("(", maxsplit=1)[0].strip().rstrip("."),
        params=[*settings_options(only=own), *project_params(), *extra],
        help=f"{text}\n\n{_CODES}",
        context_settings={"max_content_width": 100},
    )


@_command(
    "emit",
    "Build and send the events of existing artifacts, without running dbt (dbt-ol's "
    "send-events works too). The same artifacts always give the same run ids.",
)
@click.pass_context
@guarded
def emit(ctx: click.Context, **opts: Any) -> int:
    from dbt_oml.pipeline import offline

    settings = load(ctx)
    cwd = Path.cwd()
    # dbt's own log lines (adapter imports) must not mix into --dry-run's JSON
    with contextlib.redirect_stdout(sys.stderr if settings.emit.dry_run else sys.stdout):
        options = project_options(_project(opts), cwd)
        report = offline.emit(
            settings,
            options,
            cwd=cwd,
            redactor=console().redactor,
            announce=lambda: announce(settings),
            progress=progress_for(quiet=settings.quiet),
        )
    return _finish(report, settings)


@_command(
    "replay",
    "Send the events kept in outbox FILES (*.rejected.jsonl too); what is still not "
    "delivered is kept again.",
    click.Argument(["files"], nargs=-1, type=click.Path(dir_okay=False)),
)
@click.pass_context
@guarded
def replay(ctx: click.Context, files: tuple[str, ...], **opts: Any) -> int:
    if not files:
        raise ConfigError(key="replay", source="command line", reason="needs outbox FILE(s)")
    settings = load(ctx)
    paths = [Path.cwd() / p for p in files]
    target = _target_path(opts)
    return _send_again(settings, paths, target)


@_command(
    "flush",
    "Send everything in the project's outbox directory (<target>/dbt_oml/outbox, or "
    "--outbox-dir), from any working directory; never *.rejected.jsonl (replay those by name).",
)
@click.pass_context
@guarded
def flush(ctx: click.Context, **opts: Any) -> int:
    from dbt_oml.pipeline import offline

    settings = load(ctx)
    target = _target_path(opts)
    outbox, files = offline.outbox_files(settings, target)
    if not files:
        say(f"dbt-oml flush: nothing to send in {outbox}")
        return ExitCode.SUCCESS
    return _send_again(settings, files, target)
