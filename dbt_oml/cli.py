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
    from dbt_oml.dbt_process import ProjectOptions

from dbt_oml import __version__
from dbt_oml.console import print_summary, progress_bar, say, setup_logging
from dbt_oml.errors import ArtifactError, ConfigError, DbtOmlError
from dbt_oml.redaction import register

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
  dbt-oml lineage MODEL [COLUMN] [--json]         a model's column lineage from existing
                                                   artifacts, upstream to sources

Options (anywhere on the line; everything else goes to dbt unchanged):
  --dry-run                     print the events as one JSON document on stdout, send nothing
                                (dbt's own output then goes to stderr)
  --column-lineage / --no-column-lineage
                                derive column lineage from the compiled SQL (default: on)
  --allow-empty-column-lineage  send even when no event carries column lineage (else exit 4:
                                OpenMetadata would replace the column lineage it has with none)
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
    from dbt_oml.dbt_process import ProjectOptions

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
    from dbt_oml.dbt_process import target_path_of

    return target_path_of(_project_options(opts, cwd))


def _emit(settings: Any, rest: list[str], cwd: Path) -> Any:
    from dbt_oml import offline

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
    if report.received or report.batches:
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


def _lineage(rest: list[str], cwd: Path) -> int:
    from dbt_oml import offline
    from dbt_oml.lineage_view import as_json, as_text

    command = click.Command(
        "lineage",
        params=[
            *_EMIT_OPTIONS,
            click.Option(["--json", "as_json_"], is_flag=True),
            click.Argument(["model"]),
            click.Argument(["column"], required=False),
        ],
        add_help_option=False,
    )
    opts = _parse(command, rest)
    model, column, want_json = opts.pop("model"), opts.pop("column"), opts.pop("as_json_")
    view = offline.lineage_view(_project_options(opts, cwd))
    node = view.find_model(model)
    if node is None:
        raise ConfigError(key="lineage", source=model, reason="no such model (name or unique_id)")
    lineage = view.models.get(node.unique_id)
    if lineage is None:
        reason = view.opaque.get(node.unique_id, "not analysed")
        raise ConfigError(
            key="lineage", source=node.unique_id, reason=f"has no column lineage: {reason}"
        )
    columns = [
        e.output for e in lineage.columns if column is None or e.output.lower() == column.lower()
    ]
    if not columns:
        raise ConfigError(key="lineage", source=node.unique_id, reason=f"has no column {column!r}")
    if want_json:
        doc = {
            "model": node.unique_id,
            "columns": {c: as_json(view.trace(node, c)) for c in columns},
        }
        click.echo(json.dumps(doc, indent=1))
    else:
        for c in columns:
            click.echo("\n".join(as_text(node.unique_id, c, view.trace(node, c))))
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
    if command in {"emit", "send-events", "replay", "flush", "lineage", "relay"}:
        return _own_command(command, settings, rest[1:], cwd)
    from dbt_oml import pipeline
    from dbt_oml.run_state import Report

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
    from dbt_oml import offline

    try:
        if command == "lineage":
            return _lineage(rest, cwd)
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
