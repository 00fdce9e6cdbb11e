"""`dbt-oml relay`: drain a JetStream stream into OpenMetadata, acknowledging only what OM took.

A durable pull consumer fetches batches; every message gets one verdict. Delivered: ack. Kept by
OM for later (an input it cannot resolve yet) or OM unavailable: nak with backoff (the stream is
the relay's outbox). Refused for good (not a RunEvent, rejected by OM): published to the
dead-letter subject with the reason in `Dbt-Oml-Reason`, then acked. A NATS fault (a lost
server, a leader election in a cluster) ends the connection; as a service the relay reconnects,
to any of the servers, with backoff. No message can stop the relay. Replicas on the same durable
share the work: JetStream hands each message to one of them.

Must not import the pipeline, the dbt plugin, the CLI or dbt: it is a face of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from dbt_oml.errors import ConfigError
from dbt_oml.redaction import Redactor
from dbt_oml.relay.loop import Relay, RelayReport, default_backoff
from dbt_oml.relay.threads import off_loop
from dbt_oml.transports.jetstream.config import JetStreamConfig
from dbt_oml.transports.jetstream.connection import quiet_loop

if TYPE_CHECKING:
    from dbt_oml.config import RelayEnds

T = TypeVar("T")


def relay_from(
    ends: RelayEnds,
    relay: Mapping[str, Any],
    *,
    batch: int | None,
    durable: str | None,
    redactor: Redactor | None = None,
) -> Relay:
    """A Relay for the configured ends and `relay:` settings (command-line values win).

    Raises:
        ConfigError: a transport setting is wrong; names where it was configured.
    """
    from dbt_oml.transports.openmetadata import OpenMetadataConfig, OpenMetadataTransport

    source = _configured(JetStreamConfig.from_dict, ends.jetstream.config, ends.jetstream.source)
    om_config = {k: v for k, v in ends.openmetadata.config.items() if k != "type"}
    target = _configured(OpenMetadataConfig.from_dict, om_config, ends.openmetadata.source)
    redactor = redactor or Redactor()
    redactor.add(source.token, source.password)
    return Relay(
        source=source,
        om=OpenMetadataTransport(target, redactor=redactor),
        redactor=redactor,
        durable=durable or relay.get("durable", "dbt-oml-relay"),
        batch=batch or relay.get("batch", 100),
        dead_letter_subject=relay.get("dead_letter_subject"),
        ack_wait=relay.get("ack_wait", 30.0),
        fetch_timeout=relay.get("fetch_timeout", 2.0),
        source_name=ends.jetstream.source,
    )


def _configured(parse: Callable[[dict[str, Any]], T], values: Any, source: str) -> T:
    try:
        return parse(dict(values))
    except ConfigError as e:
        raise ConfigError(key=e.key, source=source, reason=e.reason, hint=e.hint) from None


def run_relay(relay: Relay, *, once: bool) -> RelayReport:
    """Run the relay on a new event loop; SIGTERM and SIGINT stop it (see Relay.run)."""
    loop = quiet_loop(asyncio.new_event_loop())
    stop = asyncio.Event()
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            # not possible outside the main thread: then only the caller can stop it
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
        return loop.run_until_complete(relay.run(once=once, stop=stop))
    finally:
        loop.close()


__all__ = ["Relay", "RelayReport", "default_backoff", "off_loop", "relay_from", "run_relay"]
