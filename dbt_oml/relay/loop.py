"""The relay's process: one NATS session after another, each reading batches and settling
every message with one verdict (ack, nak with backoff, or dead letter)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tenacity
from tenacity import RetryCallState

from dbt_oml.errors import ConfigError, DeliveryError, blames_payload
from dbt_oml.redaction import Redactor
from dbt_oml.relay.subjects import check_subjects
from dbt_oml.relay.threads import off_loop
from dbt_oml.relay.verdicts import (
    REASON_HEADER,
    Action,
    OpenMetadataSink,
    Verdict,
    header_value,
    read_event,
    verdicts_of,
)
from dbt_oml.transports.jetstream import ensure_stream
from dbt_oml.transports.jetstream.config import JetStreamConfig
from dbt_oml.transports.jetstream.connection import (
    LOST,
    NatsUnavailableError,
    close_quietly,
    connect,
    describe,
    nats_module,
    server_label,
    transient_faults,
)

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class RelayReport:
    received: int = 0
    """Messages, each counted once per process however often it comes back."""
    delivered: int = 0
    retried: int = 0
    dead_lettered: int = 0
    batches: int = 0
    last_error: str | None = None
    stopped: bool = False
    """Ended by SIGTERM/SIGINT (always a clean exit)."""


def default_backoff(attempt: int) -> float:
    """Seconds before the next try: 1, 2, 4, ... up to a minute.

    >>> [default_backoff(n) for n in (0, 1, 2, 10)]
    [1.0, 2.0, 4.0, 60.0]
    """
    return min(2.0 ** max(attempt, 0), 60.0)


@dataclass
class Relay:
    """Moves events from JetStream to OpenMetadata. One instance per process."""

    source: JetStreamConfig
    om: OpenMetadataSink
    durable: str = "dbt-oml-relay"
    batch: int = 100
    dead_letter_subject: str | None = None
    fetch_timeout: float = 2.0
    ack_wait: float = 30.0
    backoff: Callable[[int], float] = default_backoff
    #: deliveries after which an event that keeps raising unexpected errors is dead-lettered
    poison_after: int = 5
    #: where `source` was configured, for messages
    source_name: str = "relay.jetstream"
    redactor: Redactor = field(default_factory=Redactor)
    """The command's: masks the reasons of dead letters and of the report."""
    report: RelayReport = field(default_factory=RelayReport)
    _reconnects: int = 0
    _unsettled: set[int] = field(default_factory=set)

    @property
    def dead_letters(self) -> str:
        return self.dead_letter_subject or f"{self.source.subject}.dead"

    @property
    def server(self) -> str:
        return server_label(self.source.servers)

    @property
    def _close_timeout(self) -> float:
        return min(self.source.connect_timeout, self.ack_wait / 4)

    # -- the process --------------------------------------------------------------------------

    async def run(self, *, once: bool, stop: asyncio.Event | None = None) -> RelayReport:
        """Relay until stopped or, with `once`, until the stream has nothing more for now.

        On `stop` (SIGTERM), the batch in hand may finish and be acked within ack_wait; after
        that the relay lets it go (JetStream redelivers what was not acked) and returns.

        Raises:
            ConfigError: the stream or the dead-letter subject cannot work (exit 3).
            NatsUnavailableError: with `once`, NATS cannot be reached or the connection broke.
        """
        stop = stop or asyncio.Event()
        work = asyncio.ensure_future(self._serve(once=once, stop=stop))
        stopping = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({work, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                grace = max(self.ack_wait - self._close_timeout, 0.0)
                await asyncio.wait({work}, timeout=grace)
        finally:
            stopping.cancel()
            if not work.done():
                work.cancel()
            await asyncio.gather(work, stopping, return_exceptions=True)
        self.report.stopped = stop.is_set()
        if not work.cancelled() and not self.report.stopped:
            work.result()  # ConfigError, or NatsUnavailableError with once
        return self.report

    async def _serve(self, *, once: bool, stop: asyncio.Event) -> None:
        """Sessions until done or stopped; as a service, a lost NATS means reconnect with backoff
        (`backoff(n)` after the n-th failure in a row; a session that connects resets n)."""

        async def nap(delay: float) -> None:  # a stop ends the wait at once
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, NatsUnavailableError) and not once
            ),
            stop=tenacity.stop_never,
            wait=lambda _: self.backoff(self._reconnects),
            sleep=nap,
            before_sleep=self._reconnecting,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                if not stop.is_set():
                    await self._session(once=once, stop=stop)

    def _reconnecting(self, state: RetryCallState) -> None:
        self._reconnects += 1
        error = state.outcome.exception() if state.outcome else None
        delay = state.next_action.sleep if state.next_action else 0.0
        if isinstance(error, NatsUnavailableError):
            logger.warning(
                "relay: NATS %s: %s; reconnecting in %g s", error.server, error.cause, delay
            )

    async def _session(self, *, once: bool, stop: asyncio.Event) -> None:
        """One connection: subscribe, then batches until done, stopped or the connection breaks."""
        nats = nats_module()
        faults = (OSError, asyncio.TimeoutError, nats.errors.Error)
        lost = asyncio.Event()
        nc = await connect(self.source, on_lost=lost.set)
        try:
            js = nc.jetstream(timeout=self.source.publish_timeout)
            sub = await self._subscribe(js)
            self._reconnects = 0
            logger.log(
                logging.DEBUG if once else logging.INFO,
                "relay: reading %s (stream %s, consumer %s) on %s",
                self.source.subject,
                self.source.stream,
                self.durable,
                self.server,
            )
            while not stop.is_set():
                messages = await self._fetch(sub, stop=stop, lost=lost)
                if lost.is_set():
                    raise nats.errors.ConnectionClosedError
                if not messages:
                    if once:
                        return
                    continue
                retried = await self._batch(js, messages)
                if retried and once:
                    return  # what OM could not take now comes back later; --once ends here
        except faults as e:
            # an ack or fetch that timed out after the connection broke failed because it broke
            cause = LOST if lost.is_set() else describe(e, timeout=self.source.publish_timeout)
            raise NatsUnavailableError(server=self.server, cause=cause) from e
        finally:
            await close_quietly(nc, timeout=self._close_timeout)

    async def _subscribe(self, js: Any) -> Any:
        from nats.js.api import AckPolicy, ConsumerConfig
        from nats.js.errors import BadRequestError

        info = await ensure_stream(js, self.source)
        check_subjects(
            self.source, self.dead_letters, list(info.config.subjects or []), self.source_name
        )
        try:
            return await js.pull_subscribe(
                self.source.subject,
                durable=self.durable,
                stream=self.source.stream,
                config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=self.ack_wait),
            )
        except BadRequestError as e:
            raise ConfigError(
                key="relay.durable",
                source=self.source_name,
                reason=f"consumer {self.durable!r} on stream {self.source.stream!r}: "
                f"{e.description or e}",
                hint="use another durable name, or delete the consumer",
            ) from e

    async def _fetch(self, sub: Any, *, stop: asyncio.Event, lost: asyncio.Event) -> list[Any]:
        """The next batch; [] when there is none yet, or when stopped or disconnected."""
        fetch = asyncio.ensure_future(sub.fetch(self.batch, timeout=self.fetch_timeout))
        interrupts = [asyncio.ensure_future(e.wait()) for e in (stop, lost)]
        try:
            await asyncio.wait({fetch, *interrupts}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (fetch, *interrupts):
                if not task.done():
                    task.cancel()
            await asyncio.gather(fetch, *interrupts, return_exceptions=True)
        if fetch.cancelled():
            return []  # a message the cancelled fetch got comes back after ack_wait
        try:
            return list(fetch.result())
        except asyncio.TimeoutError:
            if lost.is_set():
                raise
            return []

    # -- one batch ----------------------------------------------------------------------------

    async def _batch(self, js: Any, messages: list[Any]) -> int:
        """Judge and settle a batch; one log line; returns how many messages were nak'ed."""
        self.report.batches += 1
        fresh = redelivered = 0
        for message in messages:
            sequence, deliveries = _position(message)
            fresh += sequence not in self._unsettled
            redelivered += deliveries > 1
            self._unsettled.add(sequence)
        self.report.received += fresh
        verdicts = await self._verdicts(messages)
        retried = [v.reason for v in verdicts if v.action is Action.RETRY and v.reason]
        if retried:  # why, from the verdicts: OM may have kept events without an error
            self.report.last_error = retried[0]
        counts = dict.fromkeys(Action, 0)
        for message, verdict in zip(messages, verdicts, strict=True):
            action = await self._settle_one(js, message, verdict)
            if action is not None:
                counts[action] += 1
        self.report.delivered += counts[Action.ACK]
        self.report.retried += counts[Action.RETRY]
        self.report.dead_lettered += counts[Action.DEAD]
        logger.log(
            logging.WARNING if counts[Action.RETRY] else logging.INFO,
            "relay batch: %d message(s)%s: delivered %d, retried %d, dead-lettered %d%s",
            len(messages),
            f" ({redelivered} redelivered)" if redelivered else "",
            counts[Action.ACK],
            counts[Action.RETRY],
            counts[Action.DEAD],
            f" ({self.report.last_error})" if counts[Action.RETRY] else "",
        )
        return counts[Action.RETRY]

    async def _verdicts(self, messages: list[Any]) -> list[Verdict]:
        verdicts: list[Verdict | None] = [None] * len(messages)
        events: list[dict[str, Any]] = []
        where: list[int] = []
        for i, message in enumerate(messages):
            try:
                event, problem = read_event(message.data)
            except Exception as e:  # noqa: BLE001 - one message never stops the relay
                problem = self.redactor(f"could not be read ({type(e).__name__}: {e})")
                event = None
            if event is None:
                verdicts[i] = Verdict(Action.DEAD, problem)
            else:
                events.append(event)
                where.append(i)
        for i, verdict in zip(where, await self._deliver(events), strict=True):
            verdicts[i] = verdict
        return [v or Verdict(Action.RETRY, "not judged (a dbt-oml bug)") for v in verdicts]

    async def _deliver(self, events: list[dict[str, Any]]) -> list[Verdict]:
        """OpenMetadata's answer for each event, with a fresh retry budget per batch."""
        if not events:
            return []
        try:
            self.om.reset_budget()
            outcome = await off_loop(lambda: self.om.deliver(events))
        except DeliveryError as e:  # nothing was taken
            self.report.last_error = self.redactor(str(e))
            if not blames_payload(e):  # OM unreachable, 5xx, 401/403: retry once fixed
                return [Verdict(Action.RETRY, self.report.last_error)] * len(events)
            if len(events) == 1:  # OM refused this event for good: a dead letter, its reason
                return [Verdict(Action.DEAD, f"OpenMetadata refused it: {self.report.last_error}")]
            logger.warning("relay: %s; trying the %d events one by one", e.reason, len(events))
            return [v for event in events for v in await self._deliver([event])]
        except Exception as e:  # noqa: BLE001 - a bug must not stop the relay: isolate the event
            reason = self.redactor(f"{type(e).__name__}: {e}")
            self.report.last_error = f"delivery failed unexpectedly ({reason})"
            if len(events) == 1:
                return [Verdict(Action.RETRY, self.report.last_error, suspect=True)]
            logger.warning("relay: %s; trying the %d events one by one", reason, len(events))
            return [v for event in events for v in await self._deliver([event])]
        return verdicts_of(outcome, len(events))

    async def _settle_one(self, js: Any, message: Any, verdict: Verdict) -> Action | None:
        """Ack, nak or dead-letter one message; a NATS fault ends the session, anything else
        is one line (the message then comes back after ack_wait)."""
        faults = transient_faults()
        sequence, deliveries = _position(message)
        action = verdict.action
        if verdict.suspect and deliveries >= self.poison_after:
            action = Action.DEAD
        try:
            if action is Action.RETRY:
                await message.nak(delay=self.backoff(deliveries - 1))
            else:
                if action is Action.DEAD:
                    await self._dead_letter(js, message, sequence, verdict.reason)
                # JetStream's answer, not the 1 s default: a consumer changing leader is slower
                await message.ack_sync(timeout=self.source.publish_timeout)
                self._unsettled.discard(sequence)
        except faults:
            raise
        except Exception as e:  # noqa: BLE001 - one message never stops the relay
            logger.warning(
                "relay: message %d not %s (%s); it comes back after ack_wait",
                sequence,
                action.value,
                describe(e, timeout=self.source.publish_timeout),
            )
            return None
        return action

    async def _dead_letter(self, js: Any, message: Any, sequence: int, reason: str) -> None:
        headers = {
            REASON_HEADER: header_value(reason, self.redactor),
            # the same message dead-lettered twice (an ack lost on the way) is stored once
            "Nats-Msg-Id": f"dbt-oml-dead-{self.source.stream}-{sequence}",
        }
        await js.publish(
            self.dead_letters, message.data, headers=headers, stream=self.source.stream
        )


def _position(message: Any) -> tuple[int, int]:
    """(stream sequence, number of deliveries) of a JetStream message."""
    try:
        metadata = message.metadata
        return int(metadata.sequence.stream), int(metadata.num_delivered)
    except (AttributeError, TypeError, ValueError):  # not a JetStream message (a test double)
        return id(message), 1
