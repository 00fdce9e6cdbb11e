"""Pass-through to dbt: `dbt-oml build|run|test|seed|snapshot|... [dbt args]` and any command
dbt-oml does not know run dbt with exactly those arguments, with events.

dbt-oml's own options may stand anywhere on the line; everything else goes to dbt unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.cli.options import Invocation, announce, console, load, say, settings_options
from dbt_oml.console import progress_for
from dbt_oml.errors import ConfigError

logger = logging.getLogger("dbt_oml")

#: dbt commands listed in `dbt-oml --help` (any other name goes to dbt as well).
DBT_COMMANDS: Final = (
    "build",
    "run",
    "test",
    "seed",
    "snapshot",
    "retry",
    "compile",
    "docs",
    "source",
    "run-operation",
    "show",
    "ls",
    "parse",
    "debug",
    "deps",
    "clean",
    "init",
    "clone",
)
#: dbt commands that run nodes get events; the others (ls, compile, debug, deps, docs, ...) run
#: as plain dbt, as dbt-ol leaves them (dbt-ol wraps compile and docs generate in a run of their
#: own that holds nothing: not copied).
EVENT_COMMANDS: Final = frozenset({"build", "run", "seed", "snapshot", "test", "retry", "clone"})
#: dbt's own switch for its usage statistics (given by the user, it wins over dbt-oml's).
_USAGE_FLAGS: Final = ("--send-anonymous-usage-stats", "--no-send-anonymous-usage-stats")
_PASS_THROUGH: Final[dict[str, Any]] = {
    "ignore_unknown_options": True,
    "allow_extra_args": True,
    "allow_interspersed_args": True,
}


def dbt_command(name: str) -> click.Command:
    """A command that runs `dbt <name> ...` with events (its --help is dbt's)."""
    return click.Command(
        name,
        callback=_run,
        params=[
            *settings_options(),
            click.Argument(["dbt_args"], nargs=-1, type=click.UNPROCESSED),
        ],
        context_settings=_PASS_THROUGH,
        add_help_option=False,
        help=f"Run `dbt {name}` with OpenLineage events (dbt's --help: dbt-oml {name} --help).",
    )


def dbt_args_of(name: str, args: Sequence[str], *, usage_stats: bool) -> list[str]:
    """dbt's command line: the user's, plus dbt's no-usage-stats flag unless they chose.

    >>> dbt_args_of("build", ["-s", "x"], usage_stats=False)
    ['build', '-s', 'x', '--no-send-anonymous-usage-stats']
    >>> dbt_args_of("build", ["--send-anonymous-usage-stats"], usage_stats=False)
    ['build', '--send-anonymous-usage-stats']
    """
    out = [name, *args]
    if not usage_stats and not any(a in _USAGE_FLAGS for a in out):
        out.append("--no-send-anonymous-usage-stats")
    return out


def _run(dbt_args: tuple[str, ...], **_: object) -> int:
    ctx = click.get_current_context()
    state = ctx.find_object(Invocation) or Invocation()
    try:
        settings = load(ctx)
    except ConfigError as e:
        say(f"dbt-oml: {e}")
        return ExitCode.USAGE
    from dbt_oml.pipeline import live as pipeline
    from dbt_oml.pipeline.report import Report

    report = state.report = Report()
    state.fail_on_emit_error = settings.emit.fail_on_emit_error
    args = dbt_args_of(ctx.info_name or "", dbt_args, usage_stats=settings.dbt.dbt_usage_stats)
    if ctx.info_name not in EVENT_COMMANDS:
        report = state.report = pipeline.plain(args)
        if report.dbt_return_code == ExitCode.DBT_ERROR and report.dbt_error:
            say(f"dbt: {report.dbt_error}")  # in-process dbt does not print these
        return int(report.dbt_return_code or 0)
    try:
        stream = sys.stderr if settings.emit.dry_run else sys.stdout
        with contextlib.redirect_stdout(stream):
            report = pipeline.build(
                settings,
                args,
                cwd=Path.cwd(),
                redactor=state.console.redactor,
                report=report,
                progress=progress_for(quiet=settings.quiet),
                announce=lambda: announce(settings),
            )
            state.report = report
    except ConfigError as e:
        rc = report.dbt_return_code
        ran = "" if rc is None else " (dbt ran, no events were sent: fix it, then `dbt-oml emit`)"
        say(f"dbt-oml: {e}{ran}")
        return rc if rc else ExitCode.USAGE  # dbt's own failure wins
    return _outcome(report, settings)


def _outcome(report: Any, settings: Any) -> int:
    if report.dbt_return_code is not None and (report.events_built or settings.emit.dry_run):
        console().summary(report, dry_run=settings.emit.dry_run)
    elif report.dbt_return_code == ExitCode.DBT_ERROR and report.dbt_error:
        say(f"dbt: {report.dbt_error}")  # in-process dbt does not print these
    for problem in report.problems:
        logger.warning("%s", problem)
    rc = report.dbt_return_code if report.dbt_return_code is not None else ExitCode.DBT_ERROR
    if rc == 0 and report.refused and not settings.emit.dry_run:
        return ExitCode.DELIVERY_FAILED
    if rc == 0 and settings.emit.fail_on_emit_error and report.delivery.failed:
        return ExitCode.DELIVERY_FAILED
    return int(rc)
