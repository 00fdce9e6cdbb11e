"""The `relay:` section: its keys, their checks, and its DBT_OML_RELAY_* variables.

Every value is checked when it is read (file, profile, environment or flag), so a bad one is a
configuration error (exit 3) before the relay connects to anything. Pure: no environment access.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from dbt_oml.config.values import env_name, flag_name, parse_str
from dbt_oml.errors import ConfigError

#: Numbers: their type and upper bound (each must be above zero).
RELAY_NUMBERS: Final[Mapping[str, tuple[type[int] | type[float], float]]] = {
    "batch": (int, 10_000),
    "ack_wait": (float, 86_400),
    "fetch_timeout": (float, 86_400),
}
#: Names: a JetStream consumer name and a subject to publish to.
RELAY_NAMES: Final = ("durable", "dead_letter_subject")
#: Transport settings, checked by their transports when the relay starts.
RELAY_ENDS: Final = ("jetstream", "openmetadata")
#: Every key of `relay:`.
RELAY_KEYS: Final = tuple(sorted((*RELAY_NUMBERS, *RELAY_NAMES, *RELAY_ENDS)))
#: The relay settings that have an environment variable and a flag (the scalar ones).
RELAY_SCALARS: Final = tuple(sorted((*RELAY_NUMBERS, *RELAY_NAMES)))

_DURABLE = re.compile(r"[^\s.*>/\\]+")
_SUBJECT = re.compile(r"[^\s.*>]+(\.[^\s.*>]+)*")


def relay_env_name(key: str) -> str:
    """The environment variable of a `relay:` setting.

    >>> relay_env_name("ack_wait")
    'DBT_OML_RELAY_ACK_WAIT'
    """
    return env_name(f"relay_{key}")


def _as_float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _number(value: object, key: str, source: str) -> int | float:
    kind, most = RELAY_NUMBERS[key]
    number = _as_float(value)
    if (
        number is None
        or not math.isfinite(number)
        or not 0 < number <= most
        or (kind is int and not number.is_integer())
    ):
        what = "a whole number" if kind is int else "a number of seconds"
        raise ConfigError(
            key=f"relay.{key}",
            source=source,
            reason=f"{value!r} is not {what} above 0 and at most {most:g}",
        )
    return int(number) if kind is int else number


def _name(value: object, key: str, source: str) -> str:
    text = parse_str(value, f"relay.{key}", source)
    pattern = _DURABLE if key == "durable" else _SUBJECT
    if isinstance(value, Mapping | list | tuple | bool) or not pattern.fullmatch(text):
        what = (
            "a consumer name (no spaces, '.', '*', '>', '/' or '\\')"
            if key == "durable"
            else "a subject to publish to (dot-separated tokens, no spaces or wildcards)"
        )
        raise ConfigError(key=f"relay.{key}", source=source, reason=f"{value!r} is not {what}")
    return text


def relay_value(key: str, value: object, source: str) -> Any:
    """One `relay:` value, checked; ConfigError names `relay.<key>` and `source`."""
    if key in RELAY_NUMBERS:
        return _number(value, key, source)
    if key in RELAY_NAMES:
        return _name(value, key, source)
    if key in RELAY_ENDS:
        if not isinstance(value, Mapping):
            raise ConfigError(
                key=f"relay.{key}", source=source, reason="must be a mapping of transport settings"
            )
        return dict(value)
    raise ConfigError(
        key=f"relay.{key}",
        source=source,
        reason="unknown setting",
        hint="valid settings: " + ", ".join(RELAY_KEYS),
    )


def parse_relay(value: object, key: str, source: str) -> Mapping[str, Any]:
    """The `relay:` section of a file or profile, every value checked."""
    if not isinstance(value, Mapping):
        raise ConfigError(
            key=key, source=source, reason="must be a mapping of " + ", ".join(RELAY_KEYS)
        )
    unknown = sorted(set(map(str, value)) - set(RELAY_KEYS))
    if unknown:
        relay_value(unknown[0], None, source)
    return {str(k): relay_value(str(k), v, source) for k, v in value.items()}


def relay_from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    """The DBT_OML_RELAY_* variables that are set, checked."""
    out: dict[str, Any] = {}
    for key in RELAY_SCALARS:
        var = relay_env_name(key)
        if environ.get(var) not in (None, ""):
            out[key] = relay_value(key, environ[var], var)
    return out


def relay_from_flags(flags: object) -> dict[str, Any]:
    """`relay` flags given on the command line (key -> value), checked."""
    if not isinstance(flags, Mapping):
        raise ConfigError(key="relay", source="command line", reason="must be a mapping")
    return {
        str(k): relay_value(str(k), v, flag_name(str(k))) for k, v in flags.items() if v is not None
    }
