"""The options every command shares: dbt-oml's settings and dbt's project options; loading
Settings from them; the per-invocation state the single catch-all in `main` reads.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.config.keys import TABLE, Key
from dbt_oml.config.values import flag_name
from dbt_oml.console import Console
from dbt_oml.errors import ArtifactError, ConfigError, DbtOmlError

if TYPE_CHECKING:
    from dbt_oml.config import Settings
    from dbt_oml.dbt.runner import ProjectOptions
    from dbt_oml.pipeline.report import Report

logger = logging.getLogger(__name__)

#: Options that select which file the other settings come from, or only set logging.
_BASE = ("config", "oml_log_level", "quiet")
#: Settings flags only the commands that run dbt use.
_RUN_ONLY: tuple[str, ...] = ("docs_generate", "explorer", "fail_on_emit_error", "dbt_usage_stats")
_RUN_ONLY += ("consume_structured_logs", "lineage_during_run")
#: Settings flags that shape events as they are built: not replay's or flush's, which send
#: events already built.
_BUILDING: tuple[str, ...] = ("namespaces", "duckdb_namespace", "job_naming", "job_namespace")
_BUILDING += ("parent_job_name", "extended_job_name", "column_lineage")
#: The dbt commands that run nodes (dbt_commands.EVENT_COMMANDS), named in refusals.
_RUNS_DBT = "the commands that run dbt (build, run, seed, snapshot, test, retry, clone)"


def _option(key: Key) -> click.Option:
    """A setting's option, as the key table describes it."""
    flag = flag_name(key.name)
    decls = [flag, *key.aliases, key.name]
    if key.metavar is None:
        if key.negatable:
            decls = [f"{flag}/--no-{flag[2:]}", *key.aliases, key.name]
        return click.Option(decls, is_flag=True, default=None, help=key.help)
    return click.Option(decls, metavar=key.metavar, multiple=key.repeatable, help=key.help)


def _command_line_only() -> list[click.Option]:
    """Options that are no setting: which config file to read, and one dbt-ol accepts."""
    return [
        click.Option(
            ["--config"], metavar="FILE", help="dbt-oml config file (default ./dbt-oml.yml)."
        ),
        click.Option(
            ["--consume-structured-logs"],
            is_flag=True,
            default=None,
            help="Accepted for dbt-ol compatibility; ignored (events are always real-time).",
        ),
    ]


def settings_options(*, only: tuple[str, ...] = ()) -> list[click.Parameter]:
    """dbt-oml's own settings as options, made from the key table (new objects each call);
    `only` keeps those named."""
    options = [_option(k) for k in TABLE if not k.file_only] + _command_line_only()
    return [o for o in options if not only or o.name in only]


def base_options() -> list[click.Parameter]:
    """--config and --oml-log-level: for commands that send no events themselves."""
    return settings_options(only=_BASE)


def takes(command: str) -> tuple[str, ...]:
    """The settings flags one of dbt-oml's own commands takes (a dbt command takes them all)."""
    every = tuple(str(o.name) for o in settings_options())
    if command in ("emit", "verify"):
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
    """One `dbt-oml` command: its console (and so its redactor), and what the single catch-all
    in `main` needs to know: has dbt run, and with which code."""

    report: Report | None = None
    fail_on_emit_error: bool = False
    console: Console = field(default_factory=Console)

    def code_after_bug(self) -> int:
        """A dbt-oml bug: exit 5, unless dbt ran (its non-zero code wins, as does its 0
        without --fail-on-emit-error)."""
        rc = self.report.dbt_return_code if self.report is not None else None
        if rc is None or (rc == 0 and self.fail_on_emit_error):
            return ExitCode.BUG
        return rc


def console() -> Console:
    """This command's console (click's context carries the Invocation `main` made)."""
    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(Invocation) if ctx is not None else None
    return state.console if state is not None else Console()


def say(text: str) -> None:
    """One line on stderr through this command's redactor."""
    console().say(text)


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
    out = console()
    out.redactor.add(*settings.secrets)
    quiet = settings.quiet and settings.oml_log_level in ("DEBUG", "INFO")
    out.log_to_stderr("WARNING" if quiet else settings.oml_log_level)
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
