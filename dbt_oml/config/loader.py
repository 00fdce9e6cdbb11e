"""`load_settings`: the one function that reads dbt-oml's settings, and the table of keys.

Precedence, lowest first: defaults < config file (dbt-oml.yml) < the `dbt_oml.duckdb` plugin's
config in profiles.yml < DBT_OML_* environment variables (and the OpenLineage variables dbt-ol
honours, below them) < command-line flags the user actually gave. `relay:` merges key by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dbt_oml.config.environment import (
    COMPAT_ENV,
    om_transport,
    orchestrator,
    secret_values,
)
from dbt_oml.config.files import read_file
from dbt_oml.config.keys import FILE_ONLY, KEYS
from dbt_oml.config.openlineage import read_openlineage
from dbt_oml.config.relay_section import relay_from_environ, relay_from_flags
from dbt_oml.config.settings import DEFAULT_CONFIG_FILE, Settings, sectioned
from dbt_oml.config.values import (
    env_name,
    flag_name,
)
from dbt_oml.errors import ConfigError

_PROFILE_SOURCE = "profiles.yml (plugins: dbt_oml.duckdb config)"


def _config_path(cli: Mapping[str, object], environ: Mapping[str, str], cwd: Path) -> Path | None:
    named = cli.get("config") or environ.get("DBT_OML_CONFIG")
    if named:
        return Path(str(named)).expanduser()
    if (cwd / DEFAULT_CONFIG_FILE).is_file():
        return cwd / DEFAULT_CONFIG_FILE
    return None


def _set(values: dict[str, Any], key: str, value: Any) -> None:
    """Set a parsed value; `relay` merges over what lower levels gave."""
    values[key] = {**values.get("relay", {}), **value} if key == "relay" else value


def _read_doc(
    values: dict[str, Any], doc: Mapping[Any, Any], source: str, sources: dict[str, str]
) -> None:
    for key, value in doc.items():
        if key not in KEYS:
            raise ConfigError(
                key=str(key),
                source=source,
                reason="unknown setting",
                hint="valid settings: " + ", ".join(sorted(KEYS)),
            )
        _set(values, key, KEYS[key](value, key, source))
        sources[key] = source


def _read_environ(
    values: dict[str, Any], environ: Mapping[str, str], sources: dict[str, str]
) -> None:
    for var, key in COMPAT_ENV.items():
        if environ.get(var):
            values[key] = KEYS[key](environ[var], key, var)
            sources[key] = var
    for key, parse in KEYS.items():
        var = env_name(key)
        if key not in FILE_ONLY and environ.get(var) not in (None, ""):
            values[key] = parse(environ[var], key, var)
            sources[key] = var
    relay = relay_from_environ(environ)
    if relay:
        _set(values, "relay", relay)


def _read_flags(values: dict[str, Any], cli: Mapping[str, object], sources: dict[str, str]) -> None:
    for key, value in cli.items():
        if key == "config" or value is None:
            continue
        if key == "relay":
            _set(values, key, relay_from_flags(value))
        elif key in KEYS:
            values[key] = KEYS[key](value, key, flag_name(key))
            sources[key] = flag_name(key)
        else:
            raise ConfigError(key=key, source="command line", reason="unknown setting")


def load_settings(
    *,
    cli: Mapping[str, object],
    environ: Mapping[str, str],
    cwd: Path,
    home: Path | None = None,
    profile: Mapping[str, object] | None = None,
) -> Settings:
    """Build Settings from flags, environment and config file, in that order of precedence.

    Args:
        cli: the dbt-oml flags the user actually gave (key -> value), plus optionally "config";
            "relay" is a mapping of `relay:` keys given as flags.
        environ: the process environment (tests pass a dict).
        cwd: the working directory (where dbt-oml.yml and openlineage.yml are looked for).
        home: the user's home directory (for ~/.openlineage/openlineage.yml).
        profile: settings from the `config:` of a `dbt_oml.duckdb` entry in the target's
            `plugins:` (profiles.yml); read like a config file, over dbt-oml.yml.

    Raises:
        ConfigError: an unknown key, or a value that does not parse; names the key and source.
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    config_path = _config_path(cli, environ, cwd)
    if config_path is not None:
        _read_doc(values, read_file(config_path), str(config_path), sources)
    _read_doc(values, profile or {}, _PROFILE_SOURCE, sources)
    _read_environ(values, environ, sources)
    _read_flags(values, cli, sources)
    openlineage = read_openlineage(environ, cwd, home)
    om = om_transport(environ)
    if om is not None and "transport" not in values and not openlineage.configured:
        values["transport"] = om
        sources["transport"] = "OM_HOST"
    if isinstance(values.get("outbox_dir"), str):  # a durable outbox's URL; events spool locally
        values["outbox_url"] = values.pop("outbox_dir")
    secrets = secret_values(environ, values.get("transport"), values.get("relay"), om)
    return Settings(
        **sectioned(
            values,
            transport={"om": om, "openlineage": openlineage},
            emit={"orchestrator": orchestrator(environ)},
        ),
        sources=sources,
        config_file=config_path,
        secrets=secrets,
    )
