"""The `dbt-oml` click group: dbt-oml's own commands, and dbt for every other name."""

from __future__ import annotations

from typing import Any

import click

from dbt_oml.cli.dbt_commands import DBT_COMMANDS, dbt_command
from dbt_oml.cli.emit import emit, flush, replay
from dbt_oml.cli.impact import impact
from dbt_oml.cli.lineage import lineage
from dbt_oml.cli.options import settings_options
from dbt_oml.cli.relay import relay
from dbt_oml.cli.verify import verify
from dbt_oml.version import __version__

#: dbt-ol's name for `emit`.
ALIASES = {"send-events": "emit"}

HELP = f"""dbt-oml {__version__}: dbt with OpenLineage events, one namespace per catalog.

\b
  dbt-oml [OPTIONS] <dbt command> [dbt args...]   run dbt (build, run, seed, snapshot, test,
                                                   retry, ... any dbt command) with events
  dbt-oml <command> --help                        the options of dbt-oml's own commands

dbt-oml's options may stand anywhere on a dbt command's line; everything else goes to dbt
unchanged. Every option is also a DBT_OML_<NAME> environment variable and a dbt-oml.yml key
(docs/configuration.md). Plain dbt, no wrapper: DBT_OML_PLUGIN=1 dbt build emits the same events
through dbt-oml's dbt plugin (docs/plugin.md).

\b
Exit codes:
  0, 1, 2  dbt's own code, passed through (lineage problems never change it by default)
  3        dbt-oml usage or configuration error; dbt was not started
  4        events could not be delivered (emit/replay/flush; relay --once; build with
           --fail-on-emit-error), or the column-lineage guard refused to send (a
           transport that may reach OpenMetadata; never file or console)
  5        a dbt-oml bug (traceback printed); after a dbt run, dbt's code still wins
"""


def _version(ctx: click.Context, _: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from dbt.version import __version__ as dbt_version

    click.echo(f"dbt-oml {__version__} (dbt-core {dbt_version})")
    ctx.exit(0)


class DbtOmlGroup(click.Group):
    """A group where every name that is not dbt-oml's own is a dbt command."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        own = super().get_command(ctx, ALIASES.get(cmd_name, cmd_name))
        if own is not None:
            return own
        if cmd_name not in DBT_COMMANDS and cmd_name not in _dbts_commands():
            raise click.UsageError(_no_such_command(cmd_name, [*self.commands, *ALIASES]), ctx)
        return dbt_command(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] == "help":
            click.echo(ctx.get_help())
            ctx.exit(0)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_commands(ctx, formatter)
        with formatter.section("dbt commands"):
            formatter.write_text(
                ", ".join(DBT_COMMANDS) + " and any other command of the installed dbt: dbt with "
                "those arguments; with events for the ones that run nodes (build, run, seed, "
                "snapshot, test, retry, clone), plain dbt for the rest."
            )


def _dbts_commands() -> list[str]:
    """The commands of the installed dbt (a name dbt-oml does not list may be a newer dbt's)."""
    from dbt.cli.main import cli as dbt_cli

    return list(dbt_cli.commands)


def _no_such_command(name: str, own: list[str]) -> str:
    """'No such command', with the closest names of dbt-oml's and dbt's.

    >>> _no_such_command("emti", ["emit", "flush"])
    "No such command 'emti'. Did you mean 'emit'?"
    """
    import difflib

    close = difflib.get_close_matches(name, [*own, *DBT_COMMANDS], n=2, cutoff=0.6)
    hint = " or ".join(f"'{c}'" for c in close)
    return f"No such command '{name}'." + (f" Did you mean {hint}?" if hint else "")


def _group() -> click.Group:
    group = DbtOmlGroup(
        "dbt-oml",
        help=HELP,
        params=[
            *settings_options(),
            click.Option(
                ["--version"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_version,
                help="dbt-oml's and dbt-core's versions.",
            ),
        ],
        context_settings={
            "help_option_names": ["-h", "--help"],
            "ignore_unknown_options": True,
            "max_content_width": 100,
        },
        invoke_without_command=False,
    )
    for command in (emit, replay, flush, relay, lineage, impact, verify):
        group.add_command(command)
    return group


cli: Any = _group()
