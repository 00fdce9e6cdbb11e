"""JetStreamTransport: publish each OpenLineage event to a NATS JetStream stream, acknowledged.

An openlineage-python Transport (kind `jetstream`). A publish that returns means the stream stored
the event. The `Nats-Msg-Id` header is derived from the event (run id, event type, job, event
time), so publishing the same run twice stores it once (JetStream's duplicate window). In a
cluster, a publish that meets a leader election or a lost server is retried on another connection
within `retry_budget` (same id: stored once). When no server answers within `connect_timeout` (per
server), or the budget is spent, events go to the outbox (the JSON lines `dbt-oml replay` reads)
and one line names the server and the cause: nothing is lost. nats-py is optional
(`pip install 'dbt-oml[nats]'`, see connection); the transport owns a private event
loop, so asyncio stays inside.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tenacity
from openlineage.client.transport.transport import Transport
from tenacity import RetryCallState

from dbt_oml.delivery.outbox import Keeper
from dbt_oml.errors import ConfigError
from dbt_oml.events import serialize
from dbt_oml.redaction import Redactor
from dbt_oml.retry import exponential, within
from dbt_oml.transports.base import Keeping
from dbt_oml.transports.jetstream.config import JetStreamConfig
from dbt_oml.transports.jetstream.connection import (
    NatsUnavailableError,  # re-exported (__all__): dbt_oml.cli catches it
    cause_of,
    close_quietly,
    connect,
    describe,
    nats_module,
    quiet_loop,
    server_label,
    transient_faults,
)
from dbt_oml.transports.jetstream.stream import ensure_stream, message_id

logger = logging.getLogger(__name__)


class JetStreamTransport(Keeping, Transport):
    kind = "jetstream"
    config_class = JetStreamConfig

    def __init__(self, config: JetStreamConfig, *, redactor: Redactor | None = None) -> None:
        self.config = config
        self.redactor = redactor or Redactor()
        self.redactor.add(config.token, config.password)
        self._nats = nats_module()
        self._loop = quiet_loop(asyncio.new_event_loop())
        self._nc: Any = None
        self._js: Any = None
        self._lost = asyncio.Event()
        self._reached = False  # a server answered once in this run: a fault now is worth a retry
        self._dead: str | None = None
        self.delivered = 0
        self.kept = Keeper(Path(config.outbox_dir), "jetstream", self.redactor)
        self.problems: list[str] = []
        self._retried: dict[str, int] = {}
        self._already_stored = 0

    def __repr__(self) -> str:
        servers = server_label(self.config.servers)
        return f"JetStreamTransport({servers!r}, subject={self.config.subject!r})"

    @property
    def notes(self) -> list[str]:
        """Lines for the run summary: publishes that needed another try, and why."""
        if not self._retried:
            return []
        causes = "; ".join(f"{cause}: {n}" for cause, n in self._retried.items())
        again = sum(self._retried.values())
        stored = f" ({self._already_stored} had been stored)" if self._already_stored else ""
        return [
            f"JetStream: {again} event(s) published again after a NATS fault ({causes}), "
            f"each stored once{stored}"
        ]

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    async def _open(self) -> Any:
        if self._js is None:
            lost = asyncio.Event()
            nc = await connect(self.config, on_lost=lost.set)
            self._reached = True
            try:
                js = nc.jetstream(timeout=self.config.publish_timeout)
                await ensure_stream(js, self.config)
            except BaseException:
                await close_quietly(nc, timeout=self.config.connect_timeout)
                raise
            self._nc, self._js, self._lost = nc, js, lost
        return self._js

    async def _drop_broken(self) -> None:
        """Forget a connection that broke (its server died); the next try opens another."""
        nc = self._nc
        if nc is not None and (self._lost.is_set() or not nc.is_connected):
            self._nc = self._js = None
            await close_quietly(nc, timeout=self.config.connect_timeout)

    def emit(self, event: Any) -> None:
        doc = serialize.to_dict(event) if not isinstance(event, dict) else dict(event)
        if self._dead is not None:
            self._keep(doc, self._dead)
            return
        payload = serialize.dumps_bytes(doc)
        headers = {"Nats-Msg-Id": message_id(doc)}
        try:
            self._run(self._publish(payload, headers))
        except (NatsUnavailableError, ConfigError) as e:
            self._dead = str(e)  # unreachable: do not pay the timeout again for every event
            self._keep(doc, self._dead)
            return
        except Exception as e:  # noqa: BLE001 - a publish without an ack is not stored
            reason = f"publish to {self.config.subject!r} failed: " + describe(
                e, timeout=self.config.publish_timeout
            )
            self._keep(doc, reason)
            return
        self.delivered += 1

    async def _publish(self, payload: bytes, headers: dict[str, str]) -> None:
        """One acknowledged publish. A lost server or a leader election on the way is retried,
        on a new connection if the old one broke, within `retry_budget`; the Nats-Msg-Id makes
        a try that was stored before its ack got lost count once.

        Raises:
            NatsUnavailableError: no server answered at all, or the budget is spent.
        """
        clock = asyncio.get_running_loop().time
        started, wait = clock(), exponential(0.1, 2.0)
        causes: list[str] = []

        def note(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            causes.append(cause_of(error or Exception(), timeout=self.config.publish_timeout))

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(self._worth_another_try),
            stop=within(started + self.config.retry_budget, clock, wait),
            wait=wait,
            before_sleep=note,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    ack = await self._publish_on_a_connection(payload, headers)
        except tenacity.RetryError as e:
            error = e.last_attempt.exception()
            spent = clock() - started
            cause = cause_of(error or e, timeout=self.config.publish_timeout)
            raise NatsUnavailableError(
                server=server_label(self.config.servers),
                cause=f"{cause} (still after {spent:.0f} s of retries: retry_budget)",
            ) from error
        if causes:
            self._retried[causes[0]] = self._retried.get(causes[0], 0) + 1
            self._already_stored += bool(getattr(ack, "duplicate", False))

    def _worth_another_try(self, error: BaseException) -> bool:
        """A NATS fault once NATS was reached in this run (never reached: the outbox now)."""
        if isinstance(error, NatsUnavailableError):
            return self._reached
        return isinstance(error, transient_faults())

    async def _publish_on_a_connection(self, payload: bytes, headers: dict[str, str]) -> Any:
        faults: tuple[type[BaseException], ...] = (NatsUnavailableError, *transient_faults())
        try:
            js = await self._open()
            return await self._publish_once(js, payload, headers)
        except faults:
            await self._drop_broken()
            raise

    async def _publish_once(self, js: Any, payload: bytes, headers: dict[str, str]) -> Any:
        """The stream's ack; a connection that breaks meanwhile ends the wait at once."""
        publish = asyncio.ensure_future(
            js.publish(
                self.config.subject,
                payload,
                timeout=self.config.publish_timeout,
                stream=self.config.stream,
                headers=headers,
            )
        )
        lost = asyncio.ensure_future(self._lost.wait())
        try:
            await asyncio.wait({publish, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (publish, lost):
                if not task.done():
                    task.cancel()
            await asyncio.gather(publish, lost, return_exceptions=True)
        if publish.cancelled():
            raise self._nats.errors.ConnectionClosedError
        return publish.result()

    def close(self, timeout: float = -1) -> bool:  # noqa: ARG002 - publishes are synchronous
        if self._nc is not None:  # every publish was acknowledged: nothing to drain
            self._run(close_quietly(self._nc, timeout=self.config.connect_timeout))
        self._loop.close()
        self.kept.log_reasons()
        return self.undelivered == 0

    def _keep(self, event: Mapping[str, Any], reason: str) -> None:
        self.kept.keep([event], reason)
        if reason not in self.problems:  # the caller reports problems: one line per cause
            self.problems.append(reason)
            logger.debug("JetStream: event(s) not published (%s); kept in %s", reason, self.outbox)


__all__ = ["JetStreamTransport", "NatsUnavailableError"]
