"""dbt-oml's openlineage-python transports, and a factory that knows their `type:` names.

Importing this package registers nothing globally: `build_transport_factory()` returns a *new*
factory holding the client's built-in transports plus ours. Elsewhere (an Airflow job, a script),
use the dotted class path, e.g. `type: dbt_oml.transports.openmetadata.OpenMetadataTransport`.
"""

from __future__ import annotations

from openlineage.client.transport import get_default_factory
from openlineage.client.transport.factory import DefaultTransportFactory

#: Our transport kinds, imported lazily by the factory (their dependencies stay optional).
KINDS = {
    "openmetadata": "dbt_oml.transports.openmetadata.OpenMetadataTransport",
    "jetstream": "dbt_oml.transports.jetstream.JetStreamTransport",
}


def build_transport_factory() -> DefaultTransportFactory:
    """A new factory: the client's built-in transports plus `openmetadata` and `jetstream`."""
    factory = DefaultTransportFactory()
    for kind, clazz in get_default_factory().transports.items():
        factory.register_transport(kind, clazz)
    for kind, path in KINDS.items():
        factory.register_transport(kind, path)
    return factory
