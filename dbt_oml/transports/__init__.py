"""dbt-oml's openlineage-python transports, and a factory that knows their `type:` names.

Importing this package registers nothing globally: `build_transport_factory()` returns a *new*
factory holding the client's built-in transports plus ours. Elsewhere (an Airflow job, a script),
use the dotted class path, e.g. `type: dbt_oml.transports.openmetadata.OpenMetadataTransport`.

Must not import the pipeline, the CLI, the relay or dbt: the layers above hand settings in.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any

from openlineage.client.transport import get_default_factory
from openlineage.client.transport.composite import CompositeConfig, CompositeTransport
from openlineage.client.transport.factory import DefaultTransportFactory
from openlineage.client.transport.transport import Transport
from openlineage.client.utils import import_from_string

from dbt_oml.errors import ConfigError
from dbt_oml.redaction import Redactor

logger = logging.getLogger(__name__)

#: Our transport kinds, imported lazily by the factory (their dependencies stay optional): the
#: one table of them. A kind's package is `dbt_oml.transports.<kind>`.
KINDS = {
    "openmetadata": "dbt_oml.transports.openmetadata.OpenMetadataTransport",
    "jetstream": "dbt_oml.transports.jetstream.JetStreamTransport",
}
#: `type: file`: openlineage-python's FileTransport with one-pass serialisation (same bytes)
FILE = "dbt_oml.transports.file.FileTransport"


def kind_named(type_: object) -> str | None:
    """Our kind a `type:` value names (the kind, or a dotted path into its package), else None.

    >>> kind_named("dbt_oml.transports.openmetadata.OpenMetadataTransport")
    'openmetadata'
    >>> kind_named("http") is None
    True
    """
    if not isinstance(type_, str):
        return None
    return next(
        (k for k in KINDS if type_ == k or type_.startswith(f"dbt_oml.transports.{k}.")), None
    )


class TransportFactory(DefaultTransportFactory):
    """The client's factory, filling each of our transports' empty keys from defaults.

    The defaults come from dbt-oml's configuration (OM_HOST, OM_JWT_TOKEN, ...), so they apply
    wherever the transport is configured: dbt-oml.yml, openlineage.yml or OPENLINEAGE__*.
    """

    def __init__(
        self,
        defaults: Mapping[str, Mapping[str, Any]] | None = None,
        forced: Mapping[str, Mapping[str, Any]] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        super().__init__()
        self.defaults = {k: dict(v) for k, v in (defaults or {}).items()}
        self.forced = {k: dict(v) for k, v in (forced or {}).items()}
        self.redactor = redactor or Redactor()

    def _create_transport(self, config: dict[str, str]) -> Transport:
        self._check_type(config.get("type"))
        if config.get("type") == "composite":
            return self._composite(dict(config))
        kind = kind_named(config.get("type"))
        if kind is not None and isinstance(config.get("transports"), Mapping):
            # openlineage-python turns a leftover OPENLINEAGE_URL into `transports:
            # {default_http: ...}` of whatever OPENLINEAGE__TRANSPORT__TYPE names; one transport
            # of ours has no sub-transports: the explicit type wins, said once
            extra = ", ".join(config.pop("transports"))
            logger.info(
                "transport %s: OPENLINEAGE_URL (%s) left out: OPENLINEAGE__TRANSPORT__TYPE "
                "names the transport (use type: composite for both)",
                kind,
                extra,
            )
        for key, value in self.defaults.get(kind or "", {}).items():
            if key != "type" and config.get(key) in (None, ""):
                config[key] = value
        config.update(self.forced.get(kind or "", {}))
        if kind is None:
            return super()._create_transport(config)
        return self._ours(kind, config)

    def _ours(self, kind: str, config: dict[str, Any]) -> Transport:
        """One of our transports, given the run's redactor (the client's factory knows only
        `transport_class(config)`)."""
        name, priority = config.pop("name", None), int(config.pop("priority", 0) or 0)
        clazz = import_from_string(KINDS[kind])
        transport: Transport = clazz(clazz.config_class.from_dict(config), redactor=self.redactor)
        transport.name = transport.name or name
        transport.priority = transport.priority or priority
        return transport

    def _check_type(self, kind: object) -> None:
        """A `type:` that is neither a known transport nor a dotted class path: one line with
        the valid types (openlineage-python would try to import it: `not enough values to
        unpack`)."""
        if not isinstance(kind, str) or kind in self.transports or "." in kind:
            return
        close = difflib.get_close_matches(kind, list(self.transports), n=1, cutoff=0.6)
        raise ConfigError(
            key="transport.type",
            source="the transport configuration",
            reason=f"unknown transport type {kind!r}"
            + (f" (did you mean {close[0]!r}?)" if close else ""),
            hint="valid types: "
            + ", ".join(sorted(self.transports))
            + ", or a Transport class's dotted path",
        )

    def _composite(self, config: dict[str, Any]) -> Transport:
        """openlineage-python's composite with its members made by this factory: the client's
        own composite asks the global factory, which knows no `openmetadata` or `jetstream`."""
        name, priority = config.pop("name", None), int(config.pop("priority", 0) or 0)
        members = config.get("transports") or []
        if isinstance(members, Mapping):
            members = [{**c, "name": n} for n, c in members.items() if c]
        made = [self.create(dict(member)) for member in members]
        composite = CompositeConfig.from_dict(config)
        if composite.sort_transports:
            made.sort(key=lambda t: t.priority, reverse=True)
        transport = CompositeTransport.__new__(CompositeTransport)
        transport.__dict__["transports"] = made  # its cached property, filled by us
        transport.__init__(composite)  # type: ignore[misc]
        transport.name = transport.name or name
        transport.priority = transport.priority or priority
        return transport


def build_transport_factory(
    defaults: Mapping[str, Mapping[str, Any]] | None = None,
    forced: Mapping[str, Mapping[str, Any]] | None = None,
    redactor: Redactor | None = None,
) -> DefaultTransportFactory:
    """A new factory: the client's built-in transports plus `openmetadata` and `jetstream`.

    `defaults` maps a kind (`openmetadata`, `jetstream`) to values for keys its configuration
    leaves empty; `forced` to values that win over its configuration. Both apply before the
    transport is made. Our transports get `redactor`, the run's (else one of their own).
    """
    factory = TransportFactory(defaults, forced, redactor)
    for kind, clazz in get_default_factory().transports.items():
        factory.register_transport(kind, clazz)
    for kind, path in KINDS.items():
        factory.register_transport(kind, path)
    factory.register_transport("file", FILE)  # the client's file transport, serialising faster
    return factory
