"""The `dbt-oml` command: run dbt with OpenLineage events, or send events from artifacts.

The only module that prints, configures logging, reads the process environment (through
config.load_settings) and decides exit codes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from dbt_oml.dbt.runner import ProjectOptions

from dbt_oml.errors import ArtifactError, ConfigError, DbtOmlError
from dbt_oml.pipeline.console import print_summary, progress_bar, say, setup_logging
from dbt_oml.redaction import register
from dbt_oml.version import __version__

logger = logging.getLogger("dbt_oml")


class ExitCode(IntEnum):
    """dbt-oml's exit codes. When dbt ran, its own code (0, 1, 2) passes through."""

    SUCCESS = 0
    DBT_FAILURE = 1
    DBT_ERROR = 2
    USAGE = 3
    DELIVERY_FAILED = 4
    BUG = 5


HELP = f"""dbt-oml {__version__}: dbt with OpenLineage events, one namespace per catalog.

Usage:
  dbt-oml [OPTIONS] <dbt command> [dbt args...]   run dbt (build, run, seed, snapshot, test,
                                                   retry, ... any dbt command) with events
  dbt-oml [OPTIONS] emit [dbt project options]    send the events of existing artifacts
                                                   (alias: send-events)
  dbt-oml [OPTIONS] replay FILE... [project options]
                                                  send events kept in outbox files
  dbt-oml [OPTIONS] flush [project options]       send everything in the outbox directory
                                                   (<target>/dbt_oml/outbox or --outbox-dir;
                                                   never *.rejected.jsonl: replay those by name)
  dbt-oml relay [--once] [--batch N] [--durable NAME]
                                                   drain JetStream into OpenMetadata
  dbt-oml lineage [MODEL [COLUMN]] [--downstream] [--depth N] [--json] [--html FILE]
                                                   column lineage from existing artifacts,
                                                   upstream to files and sources or downstream;
                                                   --html writes the explorer (lineage --help)
  dbt-oml impact MODEL.COLUMN... | --state DIR [--format text|json|md] [--fail-on removed]
                                                   what downstream reads changed columns
                                                   (columns, models, tests, exposures; impact
                                                   --help); exit 1 for --fail-on

Options (anywhere on the line; everything else goes to dbt unchanged):
  --dry-run                     print the events as one JSON document on stdout, send nothing
                                (dbt's own output then goes to stderr)
  --column-lineage / --no-column-lineage
                                derive column lineage from the compiled SQL (default: on)
  --allow-empty-column-lineage  send even when no event carries column lineage (else exit 4:
                                OpenMetadata would replace the column lineage it has with none)
  --explorer                    after a build, write the column-lineage explorer page next to the
                                events (<target>/openlineage/lineage.html)
  --namespace CATALOG=NS        namespace of a catalog (repeatable), e.g. crm=mysql://crm:3306
  --duckdb-namespace NS         namespace of DuckDB files without an override ({{alias}}, {{stem}})
  --docs-generate / --no-docs-generate
                                run `dbt docs generate` for catalog.json (default: on)
  --fail-on-emit-error          exit 4 when dbt succeeded but events were not delivered
  --job-naming dbt-ol|unique_id node job names: dbt-ol's (default) or stable unique_ids
  --job-namespace NS            job namespace (default: OPENLINEAGE_NAMESPACE or "dbt")
  --openlineage-dbt-job-name N  name of the invocation's job (default dbt-run-<project>)
  --outbox-dir DIR              where undelivered events are kept (default <target>/dbt_oml/outbox)
  --events-file FILE            file of the default transport
                                (default <target>/openlineage/events.jsonl)
  --config FILE                 dbt-oml config file (default ./dbt-oml.yml if present)
  --oml-log-level LEVEL         DEBUG, INFO (default), WARNING or ERROR
  --consume-structured-logs     accepted for dbt-ol compatibility; events are always real-time

emit/lineage/flush/replay project options: --project-dir, --profiles-dir, --profile, --target/-t,
--target-path, --vars (dbt's meaning; DBT_PROJECT_DIR, DBT_PROFILES_DIR, DBT_TARGET,
DBT_TARGET_PATH also work).

Every option also has a DBT_OML_<NAME> environment variable and a dbt-oml.yml key.

Plain dbt, no wrapper: DBT_OML_PLUGIN=1 dbt build (or --vars '{{dbt_oml_plugin: true}}') emits the
same events through dbt-oml's dbt plugin (README: Plugin mode).

Exit codes:
  0, 1, 2  dbt's own code, passed through (lineage problems never change it by default)
  3        dbt-oml usage or configuration error; dbt was not started
  4        events could not be delivered (emit/replay/flush; relay --once; build with
           --fail-on-emit-error), or the column-lineage guard refused to send
  5        a dbt-oml bug (traceback printed); after a dbt run, dbt's code still wins
"""

_OPTIONS: list[click.Parameter] = [
    click.Option(["--dry-run"], is_flag=True, default=None),
    click.Option(["--column-lineage/--no-column-lineage"], default=None),
    click.Option(["--allow-empty-column-lineage"], is_flag=True, default=None),
    click.Option(["--explorer"], is_flag=True, default=None),
    click.Option(["--namespace", "namespaces"], multiple=True),
    click.Option(["--duckdb-namespace"]),
    click.Option(["--docs-generate/--no-docs-generate"], default=None),
    click.Option(["--fail-on-emit-error"], is_flag=True, default=None),
    click.Option(["--job-naming"]),
    click.Option(["--job-namespace"]),
    click.Option(["--openlineage-dbt-job-name", "parent_job_name"]),
    click.Option(["--outbox-dir"]),
    click.Option(["--events-file"]),
    click.Option(["--config"]),
    click.Option(["--oml-log-level"]),
    click.Option(["--consume-structured-logs"], is_flag=True, default=None),
]
_EMIT_OPTIONS: list[click.Parameter] = [
    click.Option(["--project-dir"]),
    click.Option(["--profiles-dir"]),
    click.Option(["--profile"]),
    click.Option(["--target", "-t"]),
    click.Option(["--target-path"]),
    click.Option(["--vars"]),
]


def _parse(command: click.Command, argv: Sequence[str]) -> dict[str, Any]:
    ctx = command.make_context("dbt-oml", list(argv), resilient_parsing=False)
    return dict(ctx.params)


def split_args(argv: Sequence[str]) -> tuple[dict[str, object], list[str]]:
    """Separate dbt-oml's options (anywhere on the line) from dbt's arguments."""
    command = click.Command(
        "dbt-oml",
        params=[*_OPTIONS, click.Argument(["rest"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True},
        add_help_option=False,
    )
    params = _parse(command, argv)
    rest = list(params.pop("rest"))
    params.pop("consume_structured_logs", None)
    if not params.get("namespaces"):
        params.pop("namespaces", None)
    return {k: v for k, v in params.items() if v is not None}, rest


def _project_options(opts: dict[str, Any], cwd: Path) -> ProjectOptions:
    """dbt's project options, with dbt's environment variables as fallbacks."""
    from dbt_oml.dbt.runner import ProjectOptions

    env = os.environ
    profiles = opts["profiles_dir"] or env.get("DBT_PROFILES_DIR")
    target_path = opts["target_path"] or env.get("DBT_TARGET_PATH")
    cli_vars: dict[str, Any] = {}
    if opts["vars"]:
        import yaml

        try:
            loaded = yaml.safe_load(opts["vars"])
        except yaml.YAMLError as e:
            raise ConfigError(key="vars", source="--vars", reason="is not YAML") from e
        cli_vars = loaded if isinstance(loaded, dict) else {}
    return ProjectOptions(
        project_dir=Path(opts["project_dir"] or env.get("DBT_PROJECT_DIR") or cwd).resolve(),
        profiles_dir=Path(profiles).resolve() if profiles else None,
        profile=opts["profile"] or env.get("DBT_PROFILE"),
        target=opts["target"] or env.get("DBT_TARGET"),
        target_path=Path(target_path) if target_path else None,
        cli_vars=cli_vars,
        environ=env,
    )


def _command(name: str, *extra: click.Parameter) -> click.Command:
    """A subcommand that takes dbt's project options (and `extra`)."""
    return click.Command(name, params=[*_EMIT_OPTIONS, *extra], add_help_option=False)


def _target_path(opts: dict[str, Any], cwd: Path) -> Path:
    """dbt's target directory from the project options (flush and replay need no profile)."""
    from dbt_oml.dbt.runner import target_path_of

    return target_path_of(_project_options(opts, cwd))


def _emit(settings: Any, rest: list[str], cwd: Path) -> Any:
    from dbt_oml.pipeline import offline

    command = click.Command("emit", params=_EMIT_OPTIONS, add_help_option=False)
    return offline.emit(settings, _project_options(_parse(command, rest), cwd), cwd=cwd)


def _relay(settings: Any, rest: list[str]) -> int:
    from dbt_oml.config import relay_ends
    from dbt_oml.relay import relay_from, run_relay
    from dbt_oml.transports.jetstream import NatsUnavailableError

    command = click.Command(
        "relay",
        params=[
            click.Option(["--once"], is_flag=True),
            click.Option(["--batch"], type=click.IntRange(min=1)),
            click.Option(["--durable"]),
        ],
        add_help_option=False,
    )
    opts = _parse(command, rest)
    relay = relay_from(
        relay_ends(settings), settings.relay, batch=opts["batch"], durable=opts["durable"]
    )
    try:
        report = run_relay(relay, once=opts["once"])
    except NatsUnavailableError as e:
        say(
            f"dbt-oml relay: NATS {e.server}: {e.cause}; unacked messages stay in the stream, "
            "run again when NATS is reachable"
        )
        return ExitCode.DELIVERY_FAILED
    if report.received or report.batches or not opts["once"]:
        say(
            f"dbt-oml relay: received {report.received}, delivered {report.delivered}, "
            f"retried {report.retried}, dead-lettered {report.dead_lettered}"
        )
    elif opts["once"]:
        say(f"dbt-oml relay: nothing to relay on {relay.source.subject!r}")
    if report.retried and opts["once"] and not report.stopped:
        say(f"dbt-oml relay: OpenMetadata did not take everything: {report.last_error}")
        return ExitCode.DELIVERY_FAILED
    return ExitCode.SUCCESS


_PROJECT_HELP = (
    "Project options: --project-dir, --profiles-dir, --profile, --target/-t, --target-path, "
    "--vars (dbt's meaning and environment variables)."
)
LINEAGE_HELP = f"""Column lineage from existing artifacts (run dbt or dbt-oml first).

MODEL is a model, snapshot, seed or source (name, `source.table` or unique_id); COLUMN one of
its columns (default: every column). Upstream (the default) follows each column to the sources,
seeds' CSV files and files it comes from; --downstream to every column and model that reads it.
Without MODEL, --json and --html cover the whole project. The JSON document's shape is in the
README (Column lineage).

{_PROJECT_HELP}

\b
Exit codes:
  0  done
  3  unknown model or column, a model without column lineage, missing artifacts
  5  a dbt-oml bug
"""


def _lineage_command() -> click.Command:
    return click.Command(
        "lineage",
        params=[
            *_EMIT_OPTIONS,
            click.Option(["--upstream", "up"], is_flag=True, help="Trace upstream (default)."),
            click.Option(["--downstream", "down"], is_flag=True, help="Trace downstream."),
            click.Option(["--depth"], type=click.IntRange(min=1), help="Follow at most N hops."),
            click.Option(
                ["--direct-only"],
                is_flag=True,
                help="Only edges that carry values (DIRECT), not filters, joins, conditions.",
            ),
            click.Option(["--json", "as_json_"], is_flag=True, help="Print the JSON document."),
            click.Option(
                ["--html"],
                type=click.Path(dir_okay=False, writable=True),
                help="Write the explorer (one self-contained HTML file) to FILE.",
            ),
            click.Argument(["model"], required=False),
            click.Argument(["column"], required=False),
        ],
        help=LINEAGE_HELP,
        add_help_option=False,
        context_settings={"max_content_width": 100},
    )


def _help_of(command: click.Command, name: str) -> str:
    return command.get_help(click.Context(command, info_name=f"dbt-oml {name}"))


def _lineage(rest: list[str], cwd: Path) -> int:
    from dbt_oml.lineage.view import LineageQueryError, Query, TreeOptions, answer, text_lines
    from dbt_oml.pipeline import offline

    command = _lineage_command()
    if "--help" in rest or "-h" in rest:
        click.echo(_help_of(command, "lineage"))
        return ExitCode.SUCCESS
    opts = _parse(command, rest)
    model, column, html = opts.pop("model"), opts.pop("column"), opts.pop("html")
    want_json, up, down = opts.pop("as_json_"), opts.pop("up"), opts.pop("down")
    options = TreeOptions(depth=opts.pop("depth"), direct_only=opts.pop("direct_only"))
    if model is None and not (want_json or html):
        raise click.UsageError("needs MODEL [COLUMN] (or --json/--html for the whole project)")
    query = Query(model, column, upstream=up or not down, downstream=down, options=options)
    view = offline.lineage_view(_project_options(opts, cwd))
    try:
        result = answer(view, query)
        if html:
            focus = answer(view, Query()).document
            focus.update(model=result.document["model"], column=column)
            path = offline.write_explorer(Path(html), focus)
            say(f"dbt-oml lineage: explorer written to {path} (open it: xdg-open {path})")
    except LineageQueryError as e:
        say(f"dbt-oml lineage: {e}")
        return ExitCode.USAGE
    if want_json:
        click.echo(json.dumps(result.document, indent=1))
    elif not html:
        click.echo("\n".join(text_lines(result)))
    return ExitCode.SUCCESS


IMPACT_HELP = f"""What reads the given columns, downstream: every column (direct or indirect), every
model whose rows they shape (joins, filters), every dbt test and exposure, each with the path.

COLUMNS are MODEL.COLUMN (a model, snapshot, seed or source, as for `dbt-oml lineage`). With
--state DIR (the target directory of a production build, as dbt's --state), the models whose
compiled SQL changed are compared with it: removed, renamed and changed columns are the ones
analysed. Works from artifacts alone: `dbt compile` is enough for the current build.

{_PROJECT_HELP}

\b
Exit codes:
  0  done
  1  --fail-on removed: a removed (or renamed) column is still read downstream;
     --fail-on changed: any changed column is read downstream
  3  unknown model or column, missing artifacts
  5  a dbt-oml bug
"""


def _impact_command() -> click.Command:
    return click.Command(
        "impact",
        params=[
            *_EMIT_OPTIONS,
            click.Option(
                ["--state"],
                type=click.Path(file_okay=False),
                help="Target directory of the production build to compare with.",
            ),
            click.Option(["--json", "as_json_"], is_flag=True, help="Same as --format json."),
            click.Option(
                ["--format", "fmt"],
                type=click.Choice(["text", "json", "md"]),
                default="text",
                help="text (default), json, or md (GitHub-flavoured Markdown for a CI comment).",
            ),
            click.Option(
                ["--fail-on"],
                type=click.Choice(["removed", "changed"]),
                help="Exit 1 when a removed (or any changed) column is still read downstream.",
            ),
            click.Argument(["columns"], nargs=-1),
        ],
        help=IMPACT_HELP,
        add_help_option=False,
        context_settings={"max_content_width": 100},
    )


def _impact(rest: list[str], cwd: Path) -> int:
    from dbt_oml.impact import report as impact_report
    from dbt_oml.lineage.view import LineageQueryError
    from dbt_oml.pipeline.impact import impact

    command = _impact_command()
    if "--help" in rest or "-h" in rest:
        click.echo(_help_of(command, "impact"))
        return ExitCode.SUCCESS
    opts = _parse(command, rest)
    columns, state, fail_on = opts.pop("columns"), opts.pop("state"), opts.pop("fail_on")
    as_json_, fmt = opts.pop("as_json_"), opts.pop("fmt")
    fmt = "json" if as_json_ else fmt
    if not columns and not state:
        raise click.UsageError("needs MODEL.COLUMN ... or --state DIR")
    try:
        report, graph = impact(
            _project_options(opts, cwd), state=Path(state) if state else None, columns=columns
        )
    except LineageQueryError as e:
        say(f"dbt-oml impact: {e}")
        return ExitCode.USAGE
    if fmt == "json":
        click.echo(json.dumps(impact_report.as_json(report, graph), indent=1))
    elif fmt == "md":
        click.echo(impact_report.as_markdown(report, graph), nl=False)
    else:
        click.echo("\n".join(impact_report.as_text(report, graph)))
    failing = report.failing(fail_on)
    if failing:
        names = ", ".join(f"{i.change.node}.{i.change.column}" for i in failing)
        say(f"dbt-oml impact: --fail-on {fail_on}: still read downstream: {names}")
        return ExitCode.DBT_FAILURE
    return ExitCode.SUCCESS


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `dbt-oml`; returns the exit code (see HELP)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        click.echo(HELP)
        return ExitCode.SUCCESS if args else ExitCode.USAGE
    if args == ["--version"]:
        from dbt.version import __version__ as dbt_version

        click.echo(f"dbt-oml {__version__} (dbt-core {dbt_version})")
        return ExitCode.SUCCESS
    from dbt_oml.config import load_settings

    cwd = Path.cwd()
    try:
        flags, rest = split_args(args)
        settings = load_settings(cli=flags, environ=os.environ, cwd=cwd, home=Path.home())
    except click.ClickException as e:
        say(f"dbt-oml: {e.format_message()} (see dbt-oml --help)")
        return ExitCode.USAGE
    except ConfigError as e:
        say(f"dbt-oml: {e}")
        return ExitCode.USAGE
    register(settings.secrets)
    setup_logging(settings.oml_log_level)
    os.environ.setdefault("DO_NOT_TRACK", "1")  # no usage-stats posts from inside a pod
    command = rest[0] if rest else ""
    if command in {"emit", "send-events", "replay", "flush", "lineage", "impact", "relay"}:
        return _own_command(command, settings, rest[1:], cwd)
    from dbt_oml.pipeline import live as pipeline
    from dbt_oml.pipeline.run_state import Report

    report = Report()
    try:
        stream = sys.stderr if settings.dry_run else sys.stdout
        with contextlib.redirect_stdout(stream):
            report = pipeline.build(settings, rest, cwd=cwd, report=report, progress=progress_bar())
    except ConfigError as e:
        say(f"dbt-oml: {e}")
        return report.dbt_return_code if report.dbt_return_code is not None else ExitCode.USAGE
    except Exception:  # noqa: BLE001 - the single catch-all: a dbt-oml bug must not hide dbt's result
        say(traceback.format_exc().rstrip())
        say("dbt-oml: internal error while emitting lineage (a bug; please report it)")
        if report.dbt_return_code is None:
            return ExitCode.BUG
        if report.dbt_return_code == 0 and settings.fail_on_emit_error:
            return ExitCode.BUG
        return report.dbt_return_code
    if report.dbt_return_code is not None and (report.events_built or settings.dry_run):
        print_summary(report, dry_run=settings.dry_run, settings=settings)
    elif report.dbt_return_code == ExitCode.DBT_ERROR and report.dbt_error:
        say(f"dbt: {report.dbt_error}")  # in-process dbt does not print these
    for problem in report.problems:
        logger.warning("%s", problem)
    rc = report.dbt_return_code if report.dbt_return_code is not None else ExitCode.DBT_ERROR
    if rc == 0 and report.refused and not settings.dry_run:
        return ExitCode.DELIVERY_FAILED
    if rc == 0 and settings.fail_on_emit_error and report.delivery.failed:
        return ExitCode.DELIVERY_FAILED
    return rc


def _own_command(command: str, settings: Any, rest: list[str], cwd: Path) -> int:
    from dbt_oml.pipeline import offline

    try:
        if command == "lineage":
            return _lineage(rest, cwd)
        if command == "impact":
            return _impact(rest, cwd)
        if command == "relay":
            return _relay(settings, rest)
        if command == "flush":
            target = _target_path(_parse(_command("flush"), rest), cwd)
            outbox, files = offline.outbox_files(settings, target)
            if not files:
                say(f"dbt-oml flush: nothing to send in {outbox}")
                return ExitCode.SUCCESS
            report = offline.replay(settings, files, target_path=target)
        elif command == "replay":
            opts = _parse(_command("replay", click.Argument(["files"], nargs=-1)), rest)
            if not opts["files"]:
                raise ConfigError(
                    key="replay", source="command line", reason="needs outbox FILE(s)"
                )
            files = [cwd / p for p in opts.pop("files")]
            report = offline.replay(settings, files, target_path=_target_path(opts, cwd))
        else:
            # dbt's own log lines (adapter imports) must not mix into --dry-run's JSON
            stream = sys.stderr if settings.dry_run else sys.stdout
            with contextlib.redirect_stdout(stream):
                report = _emit(settings, rest, cwd)
    except click.ClickException as e:
        say(f"dbt-oml {command}: {e.format_message()}")
        return ExitCode.USAGE
    except (ConfigError, ArtifactError) as e:
        say(f"dbt-oml {command}: {e}")
        return ExitCode.USAGE
    except DbtOmlError as e:
        say(f"dbt-oml {command}: {e}")
        return ExitCode.DELIVERY_FAILED
    except Exception:  # noqa: BLE001 - the single catch-all for our own commands
        say(traceback.format_exc().rstrip())
        say(f"dbt-oml {command}: internal error (a bug; please report it)")
        return ExitCode.BUG
    print_summary(report, dry_run=settings.dry_run, settings=settings)
    for problem in report.problems:
        logger.warning("%s", problem)
    failed = report.delivery.failed or (report.refused and not settings.dry_run)
    return ExitCode.DELIVERY_FAILED if failed else ExitCode.SUCCESS
