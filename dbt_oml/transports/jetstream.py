"""JetStreamTransport: publish each OpenLineage event to a NATS JetStream stream, acknowledged.

An openlineage-python Transport (kind `jetstream`). A publish that returns means the stream stored
the event. The `Nats-Msg-Id` header is derived from the event (run id, event type, job, event
time), so publishing the same run twice stores it once (JetStream's duplicate window). When no
server answers within `connect_timeout` (per server), events go to the outbox (the same JSON lines
`dbt-oml replay` reads) and one line names the server and the cause: nothing is lost. nats-py is
optional (`pip install 'dbt-oml[nats]'`) and imported only here and in the relay; the transport
owns a private event loop, so asyncio stays inside.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import socket
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import attr
from openlineage.client.serde import Serde
from openlineage.client.transport.transport import Config, Transport

from dbt_oml.errors import ConfigError, TransientDeliveryError
from dbt_oml.outbox import append_events, append_reason
from dbt_oml.redaction import redact
from dbt_oml.transports.options import coerce, known_values

logger = logging.getLogger(__name__)
INSTALL_HINT: Final = "pip install 'dbt-oml[nats]'"


def message_id(event: Mapping[str, Any]) -> str:
    """The de-duplication id of an event: same run, type, job and time -> same id.

    >>> message_id({"run": {"runId": "r"}, "eventType": "COMPLETE",
    ...             "job": {"namespace": "dbt", "name": "j"}, "eventTime": "t"})[:12]
    '7fcbad3fb4c7'
    """
    job = event.get("job") or {}
    key = "\0".join(
        str(x)
        for x in (
            (event.get("run") or {}).get("runId"),
            event.get("eventType"),
            job.get("namespace"),
            job.get("name"),
            event.get("eventTime"),
        )
    )
    return hashlib.sha256(key.encode()).hexdigest()


def _nats() -> Any:
    try:
        import nats
    except ImportError as e:
        raise ConfigError(
            key="transport.type",
            source="jetstream transport",
            reason="nats-py is not installed",
            hint=INSTALL_HINT,
        ) from e
    return nats


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether a NATS subject pattern (`*` one token, `>` the rest) covers a subject.

    >>> subject_matches("ol.events.>", "ol.events.dead"), subject_matches("ol.*", "ol.a.b")
    (True, False)
    """
    want, have = pattern.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(have) > i
        if i >= len(have) or (token != "*" and token != have[i]):
            return False
    return len(want) == len(have)


class NatsUnavailableError(TransientDeliveryError):
    """No NATS server answered, or the connection broke; retrying later may help."""

    def __init__(self, *, server: str, cause: str) -> None:
        self.server = server
        self.cause = cause
        super().__init__(target=f"NATS {server}", reason=cause)


def server_label(servers: list[str]) -> str:
    """The servers as one short text, without credentials.

    >>> server_label(["nats://etl:s3cret@nats:4222"])
    'nats://***@nats:4222'
    """
    return redact(", ".join(servers))


def describe(error: BaseException, *, timeout: float) -> str:
    """A NATS failure in a few words: the cause, never a traceback or a credential.

    >>> describe(ConnectionRefusedError(111, "Connect call failed"), timeout=3)
    'connection refused'
    >>> describe(TimeoutError(), timeout=2.5)
    'no answer within 2.5 s'
    """
    from nats import errors as nats_errors
    from nats.js import errors as js_errors

    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host name ({error.strerror})"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed ({error.reason or error})"
    text = str(error).removeprefix("nats: ").strip().strip("'")
    if isinstance(error, nats_errors.AuthorizationError) or "authorization" in text.lower():
        return "not authorized (check user/password, token or credentials_file)"
    if isinstance(error, nats_errors.NoRespondersError):
        return "no JetStream there (is the server started with JetStream, -js?)"
    if isinstance(error, nats_errors.ConnectionClosedError | nats_errors.StaleConnectionError):
        return "the connection was lost"
    if isinstance(error, js_errors.APIError):
        return redact(f"JetStream refused: {error.description or error}")
    if isinstance(error, asyncio.TimeoutError | TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, ConnectionResetError | BrokenPipeError):
        return "the connection was reset"
    if isinstance(error, OSError):
        return redact(str(error.strerror or error).lower())
    if isinstance(error, nats_errors.Error) and text:
        return redact(text)
    return redact(f"{type(error).__name__}: {text}" if text else type(error).__name__)


def quiet_loop(loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    """Route asyncio's unhandled-task reports (nats-py's background tasks) to one debug line."""

    def handler(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        logger.debug(
            "asyncio: %s%s",
            context.get("message", ""),
            f" ({type(error).__name__}: {redact(str(error))})" if error else "",
        )

    loop.set_exception_handler(handler)
    return loop


@attr.define
class JetStreamConfig(Config):
    """Settings of the JetStream transport (`transport:` with `type: jetstream`)."""

    servers: list[str] = attr.field(factory=lambda: ["nats://127.0.0.1:4222"])
    subject: str = "openlineage.events"
    stream: str = "OPENLINEAGE"
    create_stream: bool = True
    max_age: float = 7 * 24 * 3600.0
    storage: str = "file"
    duplicate_window: float = 24 * 3600.0
    credentials_file: str | None = None
    token: str | None = attr.field(default=None, repr=False)
    user: str | None = None
    password: str | None = attr.field(default=None, repr=False)
    tls_ca_file: str | None = None
    publish_timeout: float = 5.0
    connect_timeout: float = 3.0
    outbox_dir: str = "dbt-oml-outbox"

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> JetStreamConfig:
        values = known_values(cls, params, source="jetstream transport")
        if isinstance(values.get("servers"), str):
            values["servers"] = [s.strip() for s in values["servers"].split(",") if s.strip()]
        coerce(
            values,
            floats=("max_age", "duplicate_window", "publish_timeout", "connect_timeout"),
            bools=("create_stream",),
        )
        if values.get("storage", "file") not in {"file", "memory"}:
            raise ConfigError(
                key="transport.storage",
                source="jetstream transport",
                reason=f"{values['storage']!r} is not file or memory",
            )
        if not values.get("servers", ["default"]):
            raise ConfigError(
                key="transport.servers", source="jetstream transport", reason="is empty"
            )
        return cls(**values)

    def connect_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "servers": self.servers,
            "connect_timeout": self.connect_timeout,
            "max_reconnect_attempts": 0,
            "allow_reconnect": False,
        }
        if self.credentials_file:
            options["user_credentials"] = self.credentials_file
        if self.token:
            options["token"] = self.token
        if self.user and self.password:
            options["user"], options["password"] = self.user, self.password
        if self.tls_ca_file:
            options["tls"] = ssl.create_default_context(cafile=self.tls_ca_file)
        return options


class _Attempt:
    """What nats-py reports while one connection attempt runs (through its callbacks)."""

    def __init__(self, servers: int, on_lost: Callable[[], None] | None) -> None:
        self.failures: list[BaseException] = []
        self.every_server_failed = asyncio.Event()
        self.connected = False
        self._servers = servers
        self._on_lost = on_lost

    async def on_error(self, error: Exception) -> None:
        if self.connected:
            logger.debug("NATS: %s", redact(f"{type(error).__name__}: {error}"))
            return
        self.failures.append(error)
        if len(self.failures) >= self._servers:
            self.every_server_failed.set()

    async def on_disconnected(self) -> None:
        if self.connected and self._on_lost is not None:
            self._on_lost()


async def connect(config: JetStreamConfig, *, on_lost: Callable[[], None] | None = None) -> Any:
    """One attempt per server, each within `connect_timeout`; the open connection.

    nats-py's own loop would retry until cancelled and print a traceback per failure; here its
    callbacks collect the failures and the first round that fails on every server ends it.

    Args:
        config: the servers, credentials and timeout.
        on_lost: called once when an open connection breaks (the relay reconnects then).

    Raises:
        NatsUnavailableError: no server answered; names the servers (no credentials) and the cause.
    """
    from nats.aio.client import Client

    attempt = _Attempt(len(config.servers), on_lost)
    nc = Client()
    task = asyncio.ensure_future(
        nc.connect(
            **config.connect_options(),
            error_cb=attempt.on_error,
            disconnected_cb=attempt.on_disconnected,
        )
    )
    failed = asyncio.ensure_future(attempt.every_server_failed.wait())
    try:
        budget = config.connect_timeout * len(config.servers)
        await asyncio.wait({task, failed}, timeout=budget, return_when=asyncio.FIRST_COMPLETED)
    finally:
        failed.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, failed, return_exceptions=True)
    error = None if task.cancelled() else task.exception()
    if task.cancelled() or error is not None:
        await close_quietly(nc, timeout=config.connect_timeout)
        cause = error or (attempt.failures[-1] if attempt.failures else asyncio.TimeoutError())
        raise NatsUnavailableError(
            server=server_label(config.servers),
            cause=describe(cause, timeout=config.connect_timeout),
        )
    attempt.connected = True
    return nc


async def close_quietly(nc: Any, *, timeout: float) -> None:
    """Close a connection that may already be broken (SIGTERM while NATS is down): never raises."""
    from nats import errors as nats_errors

    try:
        await asyncio.wait_for(nc.close(), timeout)
    except (OSError, asyncio.TimeoutError, nats_errors.Error) as e:
        logger.debug("NATS close: %s", describe(e, timeout=timeout))


async def ensure_stream(js: Any, config: JetStreamConfig) -> Any:
    """The stream's info; the stream is created when missing (and the config allows it).

    Raises:
        ConfigError: the stream is missing and create_stream is off.
    """
    from nats.js.api import StorageType, StreamConfig
    from nats.js.errors import BadRequestError, NotFoundError

    try:
        return await js.stream_info(config.stream)
    except NotFoundError:
        if not config.create_stream:
            raise ConfigError(
                key="transport.stream",
                source="jetstream transport",
                reason=f"stream {config.stream!r} does not exist on {server_label(config.servers)}",
                hint="create it, or set create_stream: true",
            ) from None
    stream = StreamConfig(
        name=config.stream,
        subjects=[config.subject, f"{config.subject}.>"],
        storage=StorageType.FILE if config.storage == "file" else StorageType.MEMORY,
        max_age=config.max_age,
        duplicate_window=config.duplicate_window,
    )
    try:
        return await js.add_stream(stream)
    except BadRequestError as e:  # e.g. another stream already holds the subject
        raise ConfigError(
            key="transport.stream",
            source="jetstream transport",
            reason=f"stream {config.stream!r} cannot be created for {config.subject!r}: "
            f"{e.description or e}",
            hint="create it yourself, or choose another subject or stream name",
        ) from e


class JetStreamTransport(Transport):
    kind = "jetstream"
    config_class = JetStreamConfig

    def __init__(self, config: JetStreamConfig) -> None:
        self.config = config
        self._nats = _nats()
        self._loop = quiet_loop(asyncio.new_event_loop())
        self._nc: Any = None
        self._js: Any = None
        self._dead: str | None = None
        self.delivered = 0
        self.undelivered = 0
        self.problems: list[str] = []
        self.outbox: Path | None = None
        self._reasons: dict[str, int] = {}

    def __repr__(self) -> str:
        servers = server_label(self.config.servers)
        return f"JetStreamTransport({servers!r}, subject={self.config.subject!r})"

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def _connect(self) -> Any:
        if self._js is None:

            async def open_stream() -> Any:
                nc = await connect(self.config)
                try:
                    js = nc.jetstream(timeout=self.config.publish_timeout)
                    await ensure_stream(js, self.config)
                except BaseException:
                    await close_quietly(nc, timeout=self.config.connect_timeout)
                    raise
                return nc, js

            self._nc, self._js = self._run(open_stream())
        return self._js

    def emit(self, event: Any) -> None:
        doc = Serde.to_dict(event) if not isinstance(event, dict) else dict(event)
        if self._dead is not None:
            self._keep(doc, self._dead)
            return
        payload = json.dumps(doc, sort_keys=True).encode()
        headers = {"Nats-Msg-Id": message_id(doc)}
        try:
            js = self._connect()
            self._run(
                js.publish(
                    self.config.subject,
                    payload,
                    timeout=self.config.publish_timeout,
                    stream=self.config.stream,
                    headers=headers,
                )
            )
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

    def close(self, timeout: float = -1) -> bool:  # noqa: ARG002 - publishes are synchronous
        if self._nc is not None:  # every publish was acknowledged: nothing to drain
            self._run(close_quietly(self._nc, timeout=self.config.connect_timeout))
        self._loop.close()
        folder = Path(self.config.outbox_dir)
        for reason, count in self._reasons.items():
            append_reason(folder / "jetstream.reasons.log", count, reason)
        self._reasons.clear()
        return self.undelivered == 0

    def _keep(self, event: Mapping[str, Any], reason: str) -> None:
        self.outbox = Path(self.config.outbox_dir) / "jetstream.jsonl"
        append_events(self.outbox, [event])
        self.undelivered += 1
        self._reasons[reason] = self._reasons.get(reason, 0) + 1
        if reason not in self.problems:  # the caller reports problems: one line per cause
            self.problems.append(reason)
            logger.debug("JetStream: event(s) not published (%s); kept in %s", reason, self.outbox)
