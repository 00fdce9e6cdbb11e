"""The `dbt-oml` command: run dbt with OpenLineage events, or send events from artifacts.

A click group (group.py): dbt-oml's own commands, one module per family (emit.py: emit, replay,
flush; relay.py; lineage.py; impact.py), and dbt for every other name (dbt_commands.py).

Who prints: this package writes the lineage and impact reports, --version and --help to stdout
(click.echo); every other line goes through console.py (log lines, progress, the
end-of-run summary on stderr, --dry-run's JSON on stdout), which the dbt plugin shares, and the
plugin's own warnings through plugin/notice.py (stderr). Nothing else in dbt_oml prints. Each
command has one console.Console (options.Invocation, made by `main`: its redactor learns the
settings' and the profile's secrets), and so does the plugin's session. This
package hands the process environment to config.load_settings (the plugin's entry does the same
inside a plain `dbt`), alone decides exit codes, and `main` is the single catch-all. Nothing in
dbt_oml may import it (it is the top layer).
"""

from __future__ import annotations

import gc
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.cli.options import Invocation, flag_not_taken


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `dbt-oml`; returns the exit code (see `dbt-oml --help`)."""
    from dbt_oml.cli.group import cli

    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        click.echo(cli.get_help(click.Context(cli, info_name="dbt-oml", **cli.context_settings)))
        return ExitCode.USAGE
    state = Invocation()
    try:
        code = cli.main(args, prog_name="dbt-oml", standalone_mode=False, obj=state)
    except click.ClickException as e:
        ctx = e.ctx if isinstance(e, click.UsageError) else None
        where = ctx.command_path if ctx is not None else "dbt-oml"
        message = e.format_message()
        if isinstance(e, click.NoSuchOption) and ctx is not None:
            message = flag_not_taken(e.option_name, ctx.command.name or "") or message
        state.console.say(f"{where}: {message} (see {where} --help)")
        return ExitCode.USAGE
    except click.Abort:
        return ExitCode.USAGE
    except Exception:  # noqa: BLE001 - the single catch-all: a dbt-oml bug must not hide dbt's result
        state.console.say(traceback.format_exc().rstrip())
        state.console.say("dbt-oml: internal error (a bug; please report it)")
        return state.code_after_bug()
    return int(code) if code is not None else ExitCode.SUCCESS


def run() -> NoReturn:
    """The `dbt-oml` command (its console script, `python -m dbt_oml`): `main`, then exit.

    Every object still alive leaves the collector first (`gc.freeze`): the interpreter's last
    collections would walk dbt's project, the artifacts and the events once more only to free
    memory the process is about to give back (0.55-0.75 s of a 500-model `dbt-oml build`;
    benchmarks/README.md 0f). The exit is otherwise the usual one: atexit handlers run (dbt-duckdb
    closes its database, logging flushes its files), objects go as their references drop, and
    only garbage in reference cycles is left to the operating system. `main` stays for callers
    that live on (tests, embedding).
    """
    code = main()
    gc.freeze()
    sys.exit(code)


__all__ = ["ExitCode", "main", "run"]
