"""openlineage-python's own configuration, read the way the client documents it: the one reader.

The file is the one OPENLINEAGE_CONFIG names, else ./openlineage.yml, else
~/.openlineage/openlineage.yml (the first readable one). OPENLINEAGE__A__B=value variables are
the nested key a.b (lowercased) with the value as JSON, or as text when it is not JSON. The file
wins over the variables. Read once, from the `environ`, `cwd` and `home` given, when the settings
are loaded; nothing here reads the process environment.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from dbt_oml.config.files import read_file
from dbt_oml.errors import ConfigError

ENV_PREFIX: Final = "OPENLINEAGE__"
ENV_SOURCE: Final = "OPENLINEAGE__TRANSPORT__* variables"
#: Variables that configure openlineage-python by themselves.
_MARKERS: Final = ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED")


@dataclass(frozen=True, slots=True)
class Sourced:
    """A transport configuration and where it was read (error messages name the real place)."""

    config: Mapping[str, Any]
    """The transport's settings (`type` included)."""
    source: str
    """Where they came from: a file and key, or the environment variables."""


@dataclass(frozen=True, slots=True)
class OpenLineageConfig:
    """What openlineage-python would configure itself with, and where each part was read."""

    configured: bool = False
    """Whether openlineage-python has a configuration of its own (variables or a file)."""
    path: Path | None = None
    from_file: Mapping[str, Any] = field(default_factory=dict)
    from_env: Mapping[str, Any] = field(default_factory=dict)
    error: ConfigError | None = None
    """The file is not valid YAML (raised when its transport is asked for)."""

    def transport(self) -> Sourced | None:
        """The transport it configures, and where it was found.

        Raises:
            ConfigError: the file is not valid YAML.
        """
        if self.error is not None:
            raise self.error
        transport = _merged(self.from_env, self.from_file).get("transport")
        if not isinstance(transport, Mapping) or not transport.get("type"):
            return None
        sources = (
            [f"{self.path} transport:"]
            if isinstance(self.from_file.get("transport"), Mapping)
            else []
        )
        if isinstance(self.from_env.get("transport"), Mapping):
            sources.append(ENV_SOURCE)
        return Sourced(config=dict(transport), source=" + ".join(sources))


def read_openlineage(environ: Mapping[str, str], cwd: Path, home: Path | None) -> OpenLineageConfig:
    """openlineage-python's configuration from these variables and directories."""
    path = config_file(environ, cwd, home)
    from_env = from_variables(environ)
    configured = bool(
        any(environ.get(k) for k in _MARKERS) or from_env or _default_files(cwd, home, exist=True)
    )
    try:
        from_file = read_file(path) if path is not None else {}
    except ConfigError as e:
        return OpenLineageConfig(configured=configured, path=path, from_env=from_env, error=e)
    return OpenLineageConfig(
        configured=configured, path=path, from_file=from_file, from_env=from_env
    )


def config_file(environ: Mapping[str, str], cwd: Path, home: Path | None) -> Path | None:
    """The first readable file of: OPENLINEAGE_CONFIG, ./openlineage.yml, ~/.openlineage/."""
    named = environ.get("OPENLINEAGE_CONFIG")
    for path in [*([Path(named)] if named else []), *_default_files(cwd, home, exist=False)]:
        if path.is_file() and os.access(path, os.R_OK):
            return path
    return None


def from_variables(environ: Mapping[str, str]) -> dict[str, Any]:
    """The nested configuration of the OPENLINEAGE__* variables.

    >>> from_variables({"OPENLINEAGE__TRANSPORT__TYPE": "http",
    ...                 "OPENLINEAGE__TRANSPORT__TIMEOUT": "5"})
    {'transport': {'type': 'http', 'timeout': 5}}
    """
    config: dict[str, Any] = {}
    for name, text in sorted(environ.items(), reverse=True):  # a parent key before its children
        if not name.startswith(ENV_PREFIX):
            continue
        keys = [k.lower() for k in name[len(ENV_PREFIX) :].split("__")]
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        node = config
        for key in keys[:-1]:
            child = node.get(key)
            node = node.setdefault(key, {}) if not isinstance(child, dict) else child
        node[keys[-1]] = value
    return config


def _default_files(cwd: Path, home: Path | None, *, exist: bool) -> list[Path]:
    paths = [cwd / "openlineage.yml"]
    if home is not None:
        paths.append(home / ".openlineage" / "openlineage.yml")
    return [p for p in paths if p.is_file()] if exist else paths


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` merged into `base`, nested mappings key by key (`over` wins)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out
