"""`dbt-oml relay`: drain a JetStream stream into OpenMetadata, acknowledging only what OM took.

A durable pull consumer fetches batches. Each batch goes through the OpenMetadata transport
(bootstrap + batch post). Delivered: the messages are acked. OM down, 5xx, timeouts: nothing is
acked; the messages come back after a backoff (nak with delay). Rejected for good (a 400, an event
OM cannot use): the batch is retried event by event, and each event that still fails goes to a
dead-letter subject with the reason, then is acked. One log line per batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt_oml.errors import DeliveryError, TerminalDeliveryError, TransientDeliveryError
from dbt_oml.transports.jetstream import JetStreamConfig, _nats, ensure_stream
from dbt_oml.transports.openmetadata import OpenMetadataTransport

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class RelayReport:
    received: int = 0
    delivered: int = 0
    retried: int = 0
    dead_lettered: int = 0
    batches: int = 0
    last_error: str | None = None


@dataclass
class Relay:
    """Moves events from JetStream to OpenMetadata. One instance per process."""

    source: JetStreamConfig
    om: OpenMetadataTransport
    durable: str = "dbt-oml-relay"
    batch: int = 100
    dead_letter_subject: str | None = None
    fetch_timeout: float = 2.0
    ack_wait: float = 30.0
    backoff: Callable[[int], float] = field(default=lambda attempt: min(2.0**attempt, 60.0))
    report: RelayReport = field(default_factory=RelayReport)

    @property
    def dead_letters(self) -> str:
        return self.dead_letter_subject or f"{self.source.subject}.dead"

    async def run(self, *, once: bool, stop: asyncio.Event | None = None) -> RelayReport:
        """Relay until stopped (SIGTERM: finish the batch, ack, exit) or, with once, until empty.

        With `once`, a batch that OM cannot take now ends the run: nothing of it is acked.
        """
        nats = _nats()
        from nats.errors import TimeoutError as FetchTimeout
        from nats.js.api import AckPolicy, ConsumerConfig

        stop = stop or asyncio.Event()
        nc = await nats.connect(
            **{
                **self.source.connect_options(),
                "allow_reconnect": True,
                "max_reconnect_attempts": -1 if not once else 0,
            }
        )
        try:
            js = nc.jetstream()
            await ensure_stream(js, self.source)
            sub = await js.pull_subscribe(
                self.source.subject,
                durable=self.durable,
                stream=self.source.stream,
                config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=self.ack_wait),
            )
            attempt = 0
            while not stop.is_set():
                try:
                    messages = await sub.fetch(self.batch, timeout=self.fetch_timeout)
                except FetchTimeout:
                    if once:
                        break
                    continue
                ok = await self._handle(js, messages, attempt)
                attempt = 0 if ok else attempt + 1
                if not ok and once:
                    break
        finally:
            await nc.close()  # every message was acked (ack_sync) or nak'ed: nothing to drain
        return self.report

    async def _handle(self, js: Any, messages: list[Any], attempt: int) -> bool:
        report = self.report
        report.batches += 1
        report.received += len(messages)
        events, poison = [], []
        for message in messages:
            try:
                events.append((message, json.loads(message.data)))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                poison.append((message, f"not JSON: {e}"))
        for message, reason in poison:
            await self._dead_letter(js, message, reason)
        delivered = retried = dead = 0
        try:
            self.om.deliver([e for _, e in events])
            delivered = len(events)
            for message, _ in events:
                await message.ack_sync()
        except TransientDeliveryError as e:
            report.last_error = str(e)
            delay = self.backoff(attempt)
            for message, _ in events:
                await message.nak(delay=delay)
            retried = len(events)
        except DeliveryError:
            delivered, dead = await self._one_by_one(js, events)
        report.delivered += delivered
        report.retried += retried
        report.dead_lettered += dead + len(poison)
        logger.info(
            "relay batch: received %d, delivered %d, retried %d, dead-lettered %d",
            len(messages),
            delivered,
            retried,
            dead + len(poison),
        )
        return retried == 0

    async def _one_by_one(self, js: Any, events: list[tuple[Any, Any]]) -> tuple[int, int]:
        delivered = dead = 0
        for message, event in events:
            try:
                self.om.deliver([event])
            except TerminalDeliveryError as e:
                await self._dead_letter(js, message, str(e))
                dead += 1
                continue
            except TransientDeliveryError:
                await message.nak(delay=self.backoff(0))
                continue
            await message.ack_sync()
            delivered += 1
        return delivered, dead

    async def _dead_letter(self, js: Any, message: Any, reason: str) -> None:
        headers = {"Dbt-Oml-Reason": reason[:1000]}
        await js.publish(
            self.dead_letters, message.data, headers=headers, stream=self.source.stream
        )
        await message.ack_sync()


def run_relay(relay: Relay, *, once: bool) -> RelayReport:
    """Run the relay on a new event loop; SIGTERM and SIGINT stop it after the current batch."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            # not possible outside the main thread: then only the caller can stop it
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
        return loop.run_until_complete(relay.run(once=once, stop=stop))
    finally:
        loop.close()
