"""Parsing shared by the transports' attrs configs: strict keys, and values from env strings.

openlineage-python passes `OPENLINEAGE__TRANSPORT__*` values as strings; these helpers turn them
into the declared types and reject keys the config does not have (listing the valid ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attr

from dbt_oml.config import truthy
from dbt_oml.errors import ConfigError


def known_values(cls: type, params: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """`params` without `type`; ConfigError naming the first unknown key and the valid ones."""
    known = {f.name for f in attr.fields(cls)}
    unknown = sorted(set(params) - known - {"type"})
    if unknown:
        raise ConfigError(
            key=f"transport.{unknown[0]}",
            source=source,
            reason="unknown setting",
            hint="valid settings: " + ", ".join(sorted(known)),
        )
    return {k: v for k, v in params.items() if k != "type"}


def coerce(
    values: dict[str, Any],
    *,
    floats: Iterable[str] = (),
    ints: Iterable[str] = (),
    bools: Iterable[str] = (),
) -> dict[str, Any]:
    """Convert string values of the named keys in place (and return the dict)."""
    for key in floats:
        if key in values:
            values[key] = float(values[key])
    for key in ints:
        if key in values:
            values[key] = int(values[key])
    for key in bools:
        if isinstance(values.get(key), str):
            values[key] = truthy(values[key])
    return values
