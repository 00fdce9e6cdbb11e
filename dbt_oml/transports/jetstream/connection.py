"""The NATS connection for the JetStream transport and the relay: one bounded attempt per server,
a lost connection reported once, faults named in a few words and sorted into "try again" or not.

nats-py is optional (`pip install 'dbt-oml[nats]'`) and imported only inside these functions.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from dbt_oml.errors import ConfigError, TransientDeliveryError
from dbt_oml.redaction import mask

if TYPE_CHECKING:
    from dbt_oml.transports.jetstream.config import JetStreamConfig

logger = logging.getLogger(__name__)
INSTALL_HINT: Final = "pip install 'dbt-oml[nats]'"


def nats_module() -> Any:
    """nats-py, or ConfigError with the install hint."""
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
    for i, part in enumerate(want):  # NATS calls the parts of a subject "tokens"
        if part == ">":
            return len(have) > i
        if i >= len(have) or (part != "*" and part != have[i]):
            return False
    return len(want) == len(have)


class NatsUnavailableError(TransientDeliveryError):
    """No NATS server answered, or the connection broke; retrying later may help."""

    def __init__(self, *, server: str, cause: str) -> None:
        self.server = server
        self.cause = cause
        super().__init__(target=f"NATS {server}", reason=cause)


#: What a broken connection is called, whichever failure it caused first.
LOST = "the connection was lost"


def server_label(servers: list[str]) -> str:
    """The servers as one short text, without credentials.

    >>> server_label(["nats://etl:s3cret@nats:4222"])
    'nats://***@nats:4222'
    """
    return mask(", ".join(servers))


def describe(error: BaseException, *, timeout: float) -> str:
    """A NATS failure in a few words: the cause, never a traceback or a credential.

    >>> describe(ConnectionRefusedError(111, "Connect call failed"), timeout=3)
    'connection refused'
    >>> describe(TimeoutError(), timeout=2.5)
    'no answer within 2.5 s'
    """
    from nats import errors as nats_errors

    text = str(error).removeprefix("nats: ").strip().strip("'")
    cause = _connection_cause(error)
    if cause is None:
        cause = _nats_cause(error, text)
    if cause is not None:
        return cause
    if isinstance(error, asyncio.TimeoutError | TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, ConnectionResetError | BrokenPipeError):
        return "the connection was reset"
    if isinstance(error, OSError):
        return mask(str(error.strerror or error).lower())
    if isinstance(error, nats_errors.Error) and text:
        return mask(text)
    return mask(f"{type(error).__name__}: {text}" if text else type(error).__name__)


def _connection_cause(error: BaseException) -> str | None:
    """`describe` for a failure to reach the server at all (checked before anything else)."""
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host name ({error.strerror})"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed ({error.reason or error})"
    return None


def _nats_cause(error: BaseException, text: str) -> str | None:
    """`describe` for what NATS or JetStream answered (checked before the generic OS errors)."""
    from nats import errors as nats_errors
    from nats.js import errors as js_errors

    if isinstance(error, nats_errors.AuthorizationError) or "authorization" in text.lower():
        return "not authorized (check user/password, token or credentials_file)"
    if isinstance(error, nats_errors.NoRespondersError):
        return "no JetStream there (is the server started with JetStream, -js?)"
    if isinstance(error, js_errors.APIError) and "exceeded" in str(error.description or ""):
        return f"the stream is full and refuses new messages ({error.description})"
    if isinstance(error, js_errors.NoStreamResponseError):
        return "the stream has no leader (an election, or too few of its servers are up)"
    if isinstance(error, js_errors.ServiceUnavailableError):
        return "JetStream is not available yet (a leader election, or a server catching up)"
    if isinstance(error, nats_errors.ConnectionClosedError | nats_errors.StaleConnectionError):
        return LOST
    if isinstance(error, js_errors.APIError):
        return mask(f"JetStream refused: {error.description or error}")
    return None


def quiet_loop(loop: asyncio.AbstractEventLoop) -> asyncio.AbstractEventLoop:
    """Route asyncio's unhandled-task reports (nats-py's background tasks) to one debug line."""

    def handler(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        logger.debug(
            "asyncio: %s%s",
            context.get("message", ""),
            f" ({type(error).__name__}: {mask(str(error))})" if error else "",
        )

    loop.set_exception_handler(handler)
    return loop


class _Attempt:
    """What nats-py reports while one connection attempt to one server runs (its callbacks)."""

    def __init__(self, on_lost: Callable[[], None] | None) -> None:
        self.failures: list[BaseException] = []
        self.failed = asyncio.Event()
        self.connected = False
        self._on_lost = on_lost

    async def on_error(self, error: Exception) -> None:
        if self.connected:
            logger.debug("NATS: %s", mask(f"{type(error).__name__}: {error}"))
            return
        self.failures.append(error)
        self.failed.set()

    async def on_disconnected(self) -> None:
        if self.connected and self._on_lost is not None:
            self._on_lost()


async def connect(config: JetStreamConfig, *, on_lost: Callable[[], None] | None = None) -> Any:
    """One attempt per server, in the order given, each within `connect_timeout`; the open
    connection to the first that answers.

    nats-py's own loop would retry until cancelled and print a traceback per failure, and with
    reconnecting off it gives up after the first server that accepts but does not answer; here
    each server gets its own client and bounded attempt, and its callbacks collect the failures.

    Args:
        config: the servers, credentials and timeout.
        on_lost: called once when an open connection breaks (the relay reconnects then).

    Raises:
        NatsUnavailableError: no server answered; names the servers (no credentials) and the cause.
    """
    cause: BaseException = asyncio.TimeoutError()
    for server in config.servers:
        nc, error = await _connect_one(config, server, on_lost)
        if nc is not None:
            return nc
        cause = error or cause
    raise NatsUnavailableError(
        server=server_label(config.servers),
        cause=describe(cause, timeout=config.connect_timeout),
    )


async def _connect_one(
    config: JetStreamConfig, server: str, on_lost: Callable[[], None] | None
) -> tuple[Any, BaseException | None]:
    """(the open connection, None), or (None, why not) after one attempt within the timeout."""
    from nats.aio.client import Client

    attempt = _Attempt(on_lost)
    nc = Client()
    task = asyncio.ensure_future(
        nc.connect(
            **{**config.connect_options(), "servers": [server]},
            error_cb=attempt.on_error,
            disconnected_cb=attempt.on_disconnected,
        )
    )
    failed = asyncio.ensure_future(attempt.failed.wait())
    try:
        await asyncio.wait(
            {task, failed}, timeout=config.connect_timeout, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        failed.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, failed, return_exceptions=True)
    error = None if task.cancelled() else task.exception()
    if task.cancelled() or error is not None:
        await close_quietly(nc, timeout=config.connect_timeout)
        return None, error or (attempt.failures[-1] if attempt.failures else None)
    attempt.connected = True
    return nc, None


def transient_faults() -> tuple[type[BaseException], ...]:
    """NATS faults after which another try, maybe on another server, may work: the connection
    broke or is not answering, or the stream or consumer has no leader for the moment."""
    from nats import errors
    from nats.js import errors as js_errors

    return (
        OSError,
        asyncio.TimeoutError,  # nats.errors.TimeoutError too
        errors.ConnectionClosedError,
        errors.StaleConnectionError,
        errors.NoRespondersError,
        errors.OutboundBufferLimitError,
        errors.ConnectionReconnectingError,
        errors.ConnectionDrainingError,
        js_errors.NoStreamResponseError,
        js_errors.ServiceUnavailableError,
    )


def cause_of(error: BaseException, *, timeout: float) -> str:
    if isinstance(error, NatsUnavailableError):
        return error.cause
    return describe(error, timeout=timeout)


async def close_quietly(nc: Any, *, timeout: float) -> None:
    """Close a connection that may already be broken (SIGTERM while NATS is down): never raises."""
    from nats import errors as nats_errors

    try:
        await asyncio.wait_for(nc.close(), timeout)
    except (OSError, asyncio.TimeoutError, nats_errors.Error) as e:
        logger.debug("NATS close: %s", describe(e, timeout=timeout))
