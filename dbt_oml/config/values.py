"""Parsers from raw values (file, environment text, flags) to typed settings, and TRUTHY.

Each parser takes `(value, key, source)` and returns the typed value or raises a ConfigError
naming the key and where the value came from. Pure: no environment, no files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from dbt_oml.errors import ConfigError
from dbt_oml.runs import JobNaming

#: The strings that mean true, wherever dbt-oml reads a switch from text (lower-cased, stripped).
TRUTHY: Final = frozenset({"1", "true", "yes", "on"})
#: The strings that mean false.
FALSY: Final = frozenset({"0", "false", "no", "off", ""})

Parser = Callable[[object, str, str], Any]


def truthy(text: object) -> bool:
    """Whether a switch's text means true (`1`, `true`, `yes`, `on`, any case).

    >>> truthy(" Yes"), truthy("0"), truthy("maybe")
    (True, False, False)
    """
    return str(text).strip().lower() in TRUTHY


def parse_bool(value: object, key: str, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUTHY:
        return True
    if text in FALSY:
        return False
    raise ConfigError(key=key, source=source, reason=f"{value!r} is not true or false")


def parse_mapping(value: object, key: str, source: str) -> dict[str, str]:
    """A catalog=namespace mapping from a dict, JSON, or `a=x,b=y` / repeated `a=x` flags."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    items: list[str]
    if isinstance(value, tuple | list):
        items = [str(v) for v in value]
    else:
        text = str(value).strip()
        if text.startswith("{"):
            try:
                return parse_mapping(json.loads(text), key, source)
            except json.JSONDecodeError as e:
                raise ConfigError(key=key, source=source, reason=f"invalid JSON ({e})") from e
        items = [p for p in text.split(",") if p.strip()]
    out: dict[str, str] = {}
    for item in items:
        catalog, sep, namespace = item.partition("=")
        if not sep or not catalog.strip() or not namespace.strip():
            raise ConfigError(
                key=key,
                source=source,
                reason=f"{item!r} is not CATALOG=NAMESPACE",
                hint="for example crm=mysql://crm-db:3306",
            )
        out[catalog.strip()] = namespace.strip()
    return out


def parse_naming(value: object, key: str, source: str) -> JobNaming:
    try:
        return JobNaming(str(value))
    except ValueError:
        valid = ", ".join(m.value for m in JobNaming)
        raise ConfigError(
            key=key, source=source, reason=f"{value!r} is not one of {valid}"
        ) from None


def parse_level(value: object, key: str, source: str) -> str:
    level = str(value).upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
        raise ConfigError(
            key=key, source=source, reason=f"{value!r} is not DEBUG/INFO/WARNING/ERROR"
        )
    return level


def parse_str(value: object, key: str, source: str) -> str:
    text = str(value).strip()
    if not text:
        raise ConfigError(key=key, source=source, reason="is empty")
    return text


#: What a `duckdb_namespace` template may name: the catalog's alias and its file's stem.
DUCKDB_PLACEHOLDERS = ("alias", "stem")


def parse_duckdb_namespace(value: object, key: str, source: str) -> str:
    """A namespace template for DuckDB files: only the known placeholders, a URL scheme."""
    text = parse_str(value, key, source)
    unknown = sorted(set(re.findall(r"\{([^{}]*)\}", text)) - set(DUCKDB_PLACEHOLDERS))
    if unknown:
        valid = ", ".join(f"{{{p}}}" for p in DUCKDB_PLACEHOLDERS)
        raise ConfigError(
            key=key,
            source=source,
            reason=f"unknown placeholder {{{unknown[0]}}} in {text!r}; valid: {valid}",
        )
    if "://" not in text:
        raise ConfigError(
            key=key, source=source, reason=f"{text!r} is not a URL (e.g. duckdb://pod/{{alias}})"
        )
    return text


def parse_path(value: object, key: str, source: str) -> Path:
    return Path(parse_str(value, key, source)).expanduser()


def parse_transport(value: object, key: str, source: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or "type" not in value:
        raise ConfigError(
            key=key,
            source=source,
            reason="must be a mapping with a `type`",
            hint="see the openlineage-python transport docs, e.g. {type: http, url: ...}",
        )
    return dict(value)


def env_name(key: str) -> str:
    """The environment variable of a setting.

    >>> env_name("fail_on_emit_error")
    'DBT_OML_FAIL_ON_EMIT_ERROR'
    """
    return "DBT_OML_" + key.upper()


def flag_name(key: str) -> str:
    """The command-line flag of a setting.

    >>> flag_name("parent_job_name")
    '--parent-job-name'
    """
    return "--" + key.replace("_", "-")
