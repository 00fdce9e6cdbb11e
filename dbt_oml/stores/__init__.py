"""The shared lineage cache (`lineage_cache`): where analysed models outlive a pod.

A folder or object store (packs.PackStore) or a JetStream key-value bucket
(keyvalue.KeyValueStore), behind lineage.cache.SharedStore. The cache in target/ is always
looked in first; the shared store is read on the first miss there and written at the end of a
run that changed what the project uses.

Must not import the pipeline, the CLI, the plugin or the relay: the pipeline hands settings in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from dbt_oml.config import Settings
from dbt_oml.lineage.cache import SharedStore
from dbt_oml.stores.keyvalue import KeyValueStore
from dbt_oml.stores.packs import PackStore

#: The JetStream transport's settings a key-value bucket on the same NATS reuses.
_SHARED_SETTINGS = (
    "credentials_file",
    "token",
    "user",
    "password",
    "tls_ca_file",
    "connect_timeout",
    "publish_timeout",
    "num_replicas",
)


def shared_store(settings: Settings, *, scope: str) -> SharedStore | None:
    """The project's shared store (`scope`: the dbt project's name), or None when none is set."""
    url = settings.lineage.shared_cache
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme.lower() not in {"nats", "tls"}:
        return PackStore(url, scope=scope)
    from dbt_oml.transports.jetstream.config import JetStreamConfig

    same_nats = _jetstream_params(settings.transport.config)
    params: dict[str, Any] = {k: v for k, v in same_nats.items() if k in _SHARED_SETTINGS}
    userinfo = parts.netloc.rpartition("@")[0]
    hosts = parts.netloc.rpartition("@")[2].split(",")
    servers = [f"{parts.scheme}://{userinfo + '@' if userinfo else ''}{h}" for h in hosts if h]
    config = JetStreamConfig.from_dict({**params, "servers": servers})
    return KeyValueStore(config, bucket=parts.path.strip("/"), scope=scope)


def _jetstream_params(transport: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The `transport:` settings when they are a JetStream transport's (the same NATS)."""
    if transport and str(transport.get("type", "")).lower() == "jetstream":
        return transport
    return {}
