"""Where `dbt-oml relay` reads (a JetStream stream) and writes (OpenMetadata), and from which
configuration each end came, so error messages name the real place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dbt_oml.config.openlineage import Sourced
from dbt_oml.config.settings import Settings
from dbt_oml.errors import ConfigError


@dataclass(frozen=True, slots=True)
class RelayEnds:
    """What `dbt-oml relay` reads (a JetStream stream) and where it writes (OpenMetadata)."""

    jetstream: Sourced
    openmetadata: Sourced


def find_transport(config: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    """`config` when it is a transport of this kind, or the one of this kind in a composite.

    >>> find_transport({"type": "composite", "transports": {"a": {"type": "jetstream"}}},
    ...                "jetstream")
    {'type': 'jetstream'}
    """
    if not isinstance(config, Mapping):
        return None
    kind_type = str(config.get("type") or "")
    # a dotted path names a class in the kind's package, `dbt_oml.transports.<kind>`
    if kind_type == kind or kind_type.startswith(f"dbt_oml.transports.{kind}."):
        return config
    if kind_type == "composite":
        members = config.get("transports") or {}
        for member in members.values() if isinstance(members, Mapping) else members:
            found = find_transport(member, kind)
            if found is not None:
                return found
    return None


def _producer_transport(settings: Settings) -> Sourced | None:
    """The transport `dbt-oml build` sends with (dbt-oml's config wins over openlineage's)."""
    if settings.transport.config is not None:
        where = f"{settings.config_file} transport:" if settings.config_file else "OM_* variables"
        return Sourced(config=settings.transport.config, source=where)
    return (
        settings.transport.openlineage.transport()
        if settings.transport.openlineage_configured
        else None
    )


def _relay_source(settings: Settings) -> str:
    return f"{settings.config_file} relay:" if settings.config_file else "no dbt-oml.yml"


def relay_ends(settings: Settings) -> RelayEnds:
    """Where the relay reads: `relay.jetstream`, else the producer's own jetstream transport
    (dbt-oml.yml `transport:`, openlineage.yml, OPENLINEAGE__TRANSPORT__*), so the NATS settings
    are written once. Where it writes: `relay.openmetadata`, else OM_HOST and friends, else an
    openmetadata transport.

    Raises:
        ConfigError: either end is missing; names the places that were looked at.
    """
    relay = settings.relay
    producer = _producer_transport(settings)
    jetstream = find_transport(producer.config if producer else None, "jetstream")
    if "jetstream" in relay:
        source = Sourced(config=relay["jetstream"], source=f"{_relay_source(settings)} jetstream")
    elif producer is not None and jetstream is not None:
        source = Sourced(config=jetstream, source=producer.source)
    else:
        found = (
            f"the producer's transport is {producer.config.get('type')!r} ({producer.source})"
            if producer
            else "no transport is configured (dbt-oml.yml, openlineage.yml, OPENLINEAGE__*)"
        )
        raise ConfigError(
            key="relay.jetstream",
            source=_relay_source(settings),
            reason=f"nothing to read from: {found}",
            hint="set a jetstream transport where dbt-oml build reads it "
            "(OPENLINEAGE__TRANSPORT__TYPE=jetstream, openlineage.yml or dbt-oml.yml), "
            "or relay.jetstream in dbt-oml.yml",
        )
    return RelayEnds(jetstream=source, openmetadata=_relay_target(settings, producer))


def _relay_target(settings: Settings, producer: Sourced | None) -> Sourced:
    if "openmetadata" in settings.relay:
        where = f"{_relay_source(settings)} openmetadata"
        return Sourced(config=settings.relay["openmetadata"], source=where)
    if settings.transport.om is not None:
        return Sourced(config=settings.transport.om, source="OM_* variables")
    om = find_transport(producer.config if producer else None, "openmetadata")
    if producer is not None and om is not None:
        return Sourced(config=om, source=producer.source)
    raise ConfigError(
        key="relay.openmetadata",
        source=_relay_source(settings),
        reason="nowhere to write: no OpenMetadata is configured",
        hint="set OM_HOST (and OM_JWT_TOKEN or OM_JWT_TOKEN_FILE), or relay.openmetadata "
        "in dbt-oml.yml",
    )


def plan_settings(settings: Settings) -> Settings:
    """`settings` with `transport` set to the openmetadata transport its events would go to,
    wherever that is configured (dbt-oml.yml, openlineage.yml, OPENLINEAGE__TRANSPORT__*, OM_HOST;
    alone or inside a composite), its empty keys filled from OM_* as the transport factory does:
    what --dry-run's bootstrap plan reads. Unchanged when events would not go to OpenMetadata.
    """
    try:
        producer = _producer_transport(settings)
    except ConfigError:
        return settings  # an openlineage.yml that does not parse: no plan, as without OM
    found = find_transport(producer.config if producer else None, "openmetadata")
    if found is None:
        return settings
    om = dict(found)
    for key, value in (settings.transport.om or {}).items():
        if key != "type" and om.get(key) in (None, ""):
            om[key] = value
    return replace(settings, transport=replace(settings.transport, config=om))
