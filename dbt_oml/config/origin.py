"""Which transport the events go to, and which configuration chose it, for the one INFO line a
command prints at its start (`events -> openmetadata https://om:8585 (from OM_HOST)`).

Follows the order `dbt-oml build` creates its client in: dbt-oml's `transport:` (dbt-oml.yml,
the profile's plugin config, or OM_HOST alone), then openlineage-python's own configuration
(openlineage.yml, OPENLINEAGE__TRANSPORT__*, OPENLINEAGE_URL), else the events file. Never shows
a secret: only the transport's kind and where it sends (URLs redacted).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from dbt_oml.config.settings import Settings
from dbt_oml.redaction import mask

#: The keys that say where a transport sends, first found wins (http, openmetadata: url;
#: jetstream: servers; file: log_file_path; kafka: topic).
_WHERE: Final = ("url", "servers", "log_file_path", "topic", "subject")
_DEFAULT_FILE: Final = "<target>/openlineage/events.jsonl"


def _is_openmetadata(kind: str) -> bool:
    return kind == "openmetadata" or kind.endswith(".OpenMetadataTransport")


def describe_transport(
    config: Mapping[str, Any], om_defaults: Mapping[str, Any] | None = None
) -> tuple[str, bool]:
    """`kind where` of a transport config (a composite lists its members), and whether an
    openmetadata transport's url is OM_HOST's (the factory fills its empty keys from OM_*).

    >>> describe_transport({"type": "http", "url": "https://u:pw@marquez:5000", "auth": {}})
    ('http https://***@marquez:5000', False)
    >>> describe_transport({"type": "composite", "transports": {"a": {"type": "console"},
    ...     "b": {"type": "openmetadata"}}}, {"url": "https://om"})
    ('composite [console, openmetadata https://om]', True)
    """
    kind = str(config.get("type") or "?")
    if kind == "composite":
        members = config.get("transports") or []
        if isinstance(members, Mapping):
            members = list(members.values())
        inner = [describe_transport(m, om_defaults) for m in members if isinstance(m, Mapping)]
        text = ", ".join(t for t, _ in inner)
        return f"composite [{text}]", any(filled for _, filled in inner)
    where = next((config[k] for k in _WHERE if config.get(k) not in (None, "", [])), None)
    filled = where is None and _is_openmetadata(kind) and bool((om_defaults or {}).get("url"))
    if filled:
        where = (om_defaults or {})["url"]
    if isinstance(where, list | tuple):
        where = ",".join(str(w) for w in where)
    return mask(f"{kind} {where}" if where is not None else kind), filled


def _shown(source: str, cwd: Path) -> str:
    """A config file by its name when it is in the working directory, else as it was given."""
    path = Path(source)
    return path.name if path.is_absolute() and path.parent == cwd else source


def _from(config: Mapping[str, Any], om: Mapping[str, Any] | None, source: str) -> str:
    text, filled = describe_transport(config, om)
    url = "; url from OM_HOST" if filled and source != "OM_HOST" else ""
    return f"{text} (from {source}{url})"


def events_destination(settings: Settings, environ: Mapping[str, str], *, cwd: Path) -> str:
    """Where this command's events go and which configuration chose it, in one phrase.

    Raises:
        ConfigError: openlineage.yml is not valid YAML (creating the client would say the same).
    """
    if settings.transport.config is not None:
        source = settings.sources.get("transport") or str(settings.config_file or "dbt-oml.yml")
        text = _from(settings.transport.config, settings.transport.om, _shown(source, cwd))
    elif environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        text = "nowhere (OPENLINEAGE_DISABLED=true)"
    elif settings.transport.openlineage_configured:
        found = settings.transport.openlineage.transport()
        if found is not None:
            source = _shown(found.source.removesuffix(" transport:"), cwd)
            text = _from(found.config, settings.transport.om, source)
        elif environ.get("OPENLINEAGE_URL"):
            text = mask(f"http {environ['OPENLINEAGE_URL']} (from OPENLINEAGE_URL)")
        else:
            text = "console (openlineage-python's default: its configuration names no transport)"
    else:
        events = settings.transport.events_file or _DEFAULT_FILE
        text = f"file {events} (the default: no transport is configured)"
    return f"stdout (--dry-run; configured: {text})" if settings.emit.dry_run else text
