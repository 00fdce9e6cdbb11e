"""The options every command shares: dbt-oml's settings and dbt's project options; loading
Settings from them; the per-invocation state the single catch-all in `main` reads.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.console import say, setup_logging
from dbt_oml.errors import ArtifactError, ConfigError, DbtOmlError
from dbt_oml.redaction import register

if TYPE_CHECKING:
    from dbt_oml.config import Settings
    from dbt_oml.dbt.runner import ProjectOptions
    from dbt_oml.pipeline.report import Report

logger = logging.getLogger(__name__)

#: Options that select which file the other settings come from, or only set logging.
_BASE = ("config", "oml_log_level", "quiet")
#: Settings flags only the commands that run dbt use.
_RUN_ONLY: tuple[str, ...] = ("docs_generate", "explorer", "fail_on_emit_error", "dbt_usage_stats")
_RUN_ONLY += ("consume_structured_logs",)
#: Settings flags that shape events as they are built: not replay's or flush's, which send
#: events already built.
_BUILDING: tuple[str, ...] = ("namespaces", "duckdb_namespace", "job_naming", "job_namespace")
_BUILDING += ("parent_job_name", "extended_job_name", "column_lineage")
#: The dbt commands that run nodes (dbt_commands.EVENT_COMMANDS), named in refusals.
_RUNS_DBT = "the commands that run dbt (build, run, seed, snapshot, test, retry, clone)"


def _flag(decls: list[str], text: str, **kw: Any) -> click.Option:
    return click.Option(decls, is_flag=True, default=None, help=text, **kw)


def _emission_options() -> list[click.Option]:
    return [
        _flag(["--dry-run"], "Print the events as one JSON document on stdout; send nothing."),
        _flag(
            ["--column-lineage/--no-column-lineage"],
            "Derive column lineage from the compiled SQL (default: on).",
        ),
        _flag(
            ["--allow-empty-column-lineage"],
            "Send even when no event carries column lineage (else exit 4).",
        ),
        _flag(["--explorer"], "After a build, write the column-lineage explorer page."),
        _flag(
            ["--docs-generate/--no-docs-generate"],
            "Run `dbt docs generate` for catalog.json (default: on).",
        ),
        _flag(["--fail-on-emit-error"], "Exit 4 when dbt succeeded but events were not delivered."),
    ]


def _naming_options() -> list[click.Option]:
    return [
        click.Option(
            ["--namespaces", "--namespace", "namespaces"],
            multiple=True,
            metavar="CATALOG=NS",
            help="Namespace of a catalog, repeatable (alias --namespace).",
        ),
        click.Option(
            ["--duckdb-namespace"],
            metavar="NS",
            help="Namespace of DuckDB files without an override ({alias}, {stem}).",
        ),
        click.Option(
            ["--job-naming"],
            metavar="dbt-ol|unique_id",
            help="Node job names: dbt-ol's (default) or stable unique_ids.",
        ),
        click.Option(
            ["--job-namespace"],
            metavar="NS",
            help='Job namespace (default: OPENLINEAGE_NAMESPACE or "dbt").',
        ),
        click.Option(
            ["--parent-job-name", "--openlineage-dbt-job-name", "parent_job_name"],
            metavar="NAME",
            help="The invocation's job name (default dbt-run-<project>; dbt-ol's flag works).",
        ),
        _flag(
            ["--extended-job-name/--no-extended-job-name"],
            "The invocation's job as dbt-run-<project>-<profile>-<selection> (dbt-ol's "
            "OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME).",
        ),
    ]


def _place_options() -> list[click.Option]:
    return [
        click.Option(
            ["--outbox-dir"],
            metavar="DIR|URL",
            help="Where undelivered events are kept (default <target>/dbt_oml/outbox); a URL "
            "(s3://bucket/prefix, gs://...) keeps them there, beyond this machine's disk.",
        ),
        click.Option(
            ["--events-file"],
            metavar="FILE",
            help="File of the default transport (default <target>/openlineage/events.jsonl).",
        ),
        _flag(
            ["--dbt-usage-stats/--no-dbt-usage-stats"],
            "Let dbt send its anonymous usage statistics (default: off).",
        ),
        click.Option(
            ["--config"], metavar="FILE", help="dbt-oml config file (default ./dbt-oml.yml)."
        ),
        click.Option(
            ["--oml-log-level"],
            metavar="LEVEL",
            help="dbt-oml's log level: DEBUG, INFO (default), WARNING or ERROR.",
        ),
        _flag(
            ["--quiet", "-q"],
            "No progress after dbt's Done. and no INFO lines (warnings, errors, the summary).",
        ),
        _flag(
            ["--consume-structured-logs"],
            "Accepted for dbt-ol compatibility; ignored (events are always real-time).",
        ),
    ]


def settings_options(*, only: tuple[str, ...] = ()) -> list[click.Parameter]:
    """dbt-oml's own settings as options (new objects each call); `only` keeps those named."""
    options = [*_emission_options(), *_naming_options(), *_place_options()]
    return [o for o in options if not only or o.name in only]


def base_options() -> list[click.Parameter]:
    """--config and --oml-log-level: for commands that send no events themselves."""
    return settings_options(only=_BASE)


def takes(command: str) -> tuple[str, ...]:
    """The settings flags one of dbt-oml's own commands takes (a dbt command takes them all)."""
    every = tuple(str(o.name) for o in settings_options())
    if command == "emit":
        return tuple(k for k in every if k not in _RUN_ONLY)
    if command in ("replay", "flush"):
        return tuple(k for k in every if k not in _RUN_ONLY + _BUILDING)
    return _BASE if command in ("relay", "lineage", "impact") else every


def not_taken(key: str, command: str) -> str | None:
    """Why `dbt-oml <command>` refuses the settings flag `key`: what it is and who takes it;
    None when the command takes it (or `key` is no settings flag).

    >>> not_taken("docs_generate", "emit")
    '--docs-generate/--no-docs-generate is an option of the commands that run dbt (build, run, \
seed, snapshot, test, retry, clone), not of emit'
    """
    option = next((o for o in settings_options() if o.name == key), None)
    if option is None or key in takes(command):
        return None
    own = [c for c in ("emit", "replay", "flush") if key in takes(c)]
    who = ", ".join(own) + " and " + _RUNS_DBT if own else _RUNS_DBT
    flag = "/".join([option.opts[0], *getattr(option, "secondary_opts", [])[:1]])
    return f"{flag} is an option of {who}, not of {command}"


def flag_not_taken(flag: str, command: str) -> str | None:
    """not_taken for a flag as typed (`--no-docs-generate`), for click's "No such option"."""
    for option in settings_options():
        if flag in (*option.opts, *getattr(option, "secondary_opts", [])):
            return not_taken(str(option.name), command)
    return None


def project_params() -> list[click.Parameter]:
    """dbt's project options, with dbt's meaning (and dbt's environment variables)."""
    return [
        click.Option(["--project-dir"], metavar="DIR", help="dbt project (DBT_PROJECT_DIR)."),
        click.Option(["--profiles-dir"], metavar="DIR", help="profiles.yml's directory."),
        click.Option(["--profile"], metavar="NAME", help="dbt profile (DBT_PROFILE)."),
        click.Option(["--target", "-t"], metavar="NAME", help="dbt target (DBT_TARGET)."),
        click.Option(["--target-path"], metavar="DIR", help="dbt's target directory."),
        click.Option(["--vars"], metavar="YAML", help="dbt vars, as for dbt."),
    ]


PROJECT_KEYS = ("project_dir", "profiles_dir", "profile", "target", "target_path", "vars")


@dataclass
class Invocation:
    """What the single catch-all in `main` needs to know: has dbt run, and with which code."""

    report: Report | None = None
    fail_on_emit_error: bool = False

    def code_after_bug(self) -> int:
        """A dbt-oml bug: exit 5, unless dbt ran (its non-zero code wins, as does its 0
        without --fail-on-emit-error)."""
        rc = self.report.dbt_return_code if self.report is not None else None
        if rc is None or (rc == 0 and self.fail_on_emit_error):
            return ExitCode.BUG
        return rc


def _given(ctx: click.Context) -> dict[str, Any]:
    """The settings flags of this command line: the group's, overridden by the command's.

    Raises:
        click.UsageError: a flag given before one of dbt-oml's own commands that it does not
            take (it would be ignored); names the commands that take it.
    """
    names = {o.name for o in settings_options()}
    given: dict[str, Any] = {}
    command = ctx.command.name or ""
    for level in (ctx.find_root(), ctx):
        for key, value in level.params.items():
            if key in names and value not in (None, ()):
                refused = not_taken(key, command)
                if refused is not None:
                    raise click.UsageError(refused, ctx)
                given[key] = value
    given.pop("consume_structured_logs", None)
    return given


def load(ctx: click.Context, **extra: object) -> Settings:
    """Settings from this command line, the environment and the config file; sets up logging.

    Raises:
        ConfigError: a bad value or key, named with where it was read.
    """
    from dbt_oml.config import load_settings

    flags = _given(ctx) | {k: v for k, v in extra.items() if v}
    settings = load_settings(cli=flags, environ=os.environ, cwd=Path.cwd(), home=Path.home())
    register(settings.secrets)
    quiet = settings.quiet and settings.oml_log_level in ("DEBUG", "INFO")
    setup_logging("WARNING" if quiet else settings.oml_log_level)
    return settings


def announce(settings: Settings) -> None:
    """The one INFO line at the start of a command that sends events: where they go, and which
    configuration chose that (dbt-oml.yml, OPENLINEAGE__TRANSPORT__*, OM_HOST, ...)."""
    from dbt_oml.config import events_destination

    logger.info("events -> %s", events_destination(settings, os.environ, cwd=Path.cwd()))


def project_options(opts: dict[str, Any], cwd: Path) -> ProjectOptions:
    """dbt's project options, with dbt's environment variables as fallbacks."""
    from dbt_oml.dbt.runner import ProjectOptions

    env = os.environ
    profiles = opts.get("profiles_dir") or env.get("DBT_PROFILES_DIR")
    target_path = opts.get("target_path") or env.get("DBT_TARGET_PATH")
    cli_vars: dict[str, Any] = {}
    if opts.get("vars"):
        import yaml

        try:
            loaded = yaml.safe_load(opts["vars"])
        except yaml.YAMLError as e:
            raise ConfigError(key="vars", source="--vars", reason="is not YAML") from e
        cli_vars = loaded if isinstance(loaded, dict) else {}
    return ProjectOptions(
        project_dir=Path(opts.get("project_dir") or env.get("DBT_PROJECT_DIR") or cwd).resolve(),
        profiles_dir=Path(profiles).resolve() if profiles else None,
        profile=opts.get("profile") or env.get("DBT_PROFILE"),
        target=opts.get("target") or env.get("DBT_TARGET"),
        target_path=Path(target_path) if target_path else None,
        cli_vars=cli_vars,
        environ=env,
    )


def guarded(command: Callable[..., int]) -> Callable[..., int]:
    """dbt-oml's own commands: config and artifact errors exit 3, delivery errors exit 4.

    Anything else is a bug and goes to the single catch-all in `main` (exit 5).
    """

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> int:
        ctx = click.get_current_context()
        try:
            return command(*args, **kwargs)
        except (ConfigError, ArtifactError) as e:
            say(f"{ctx.command_path}: {e}")
            return ExitCode.USAGE
        except DbtOmlError as e:
            say(f"{ctx.command_path}: {e}")
            return ExitCode.DELIVERY_FAILED

    return run
