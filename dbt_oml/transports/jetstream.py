"""JetStreamTransport: publish each OpenLineage event to a NATS JetStream stream, acknowledged.

An openlineage-python Transport (kind `jetstream`). A publish that returns means the stream stored
the event. The `Nats-Msg-Id` header is derived from the event (run id, event type, job, event
time), so publishing the same run twice stores it once (JetStream's duplicate window). When the
server cannot be reached within the connect budget, events go to the outbox (the same JSON lines
`dbt-oml replay` reads): nothing is lost. nats-py is optional (`pip install 'dbt-oml[nats]'`)
and imported only here; the transport owns a private event loop, so asyncio stays inside.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attr
from openlineage.client.serde import Serde
from openlineage.client.transport.transport import Config, Transport

from dbt_oml.errors import ConfigError, TransientDeliveryError
from dbt_oml.transports.options import coerce, known_values

logger = logging.getLogger(__name__)
INSTALL_HINT = "pip install 'dbt-oml[nats]'"


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
            import ssl

            options["tls"] = ssl.create_default_context(cafile=self.tls_ca_file)
        return options


async def ensure_stream(js: Any, config: JetStreamConfig) -> None:
    """Create the stream when it is missing (and the config allows it)."""
    from nats.js.api import StorageType, StreamConfig
    from nats.js.errors import NotFoundError

    try:
        await js.stream_info(config.stream)
    except NotFoundError:
        if not config.create_stream:
            raise
        await js.add_stream(
            StreamConfig(
                name=config.stream,
                subjects=[config.subject, f"{config.subject}.>"],
                storage=StorageType.FILE if config.storage == "file" else StorageType.MEMORY,
                max_age=config.max_age,
                duplicate_window=config.duplicate_window,
            )
        )


class JetStreamTransport(Transport):
    kind = "jetstream"
    config_class = JetStreamConfig

    def __init__(self, config: JetStreamConfig) -> None:
        self.config = config
        self._nats = _nats()
        self._loop = asyncio.new_event_loop()
        self._nc: Any = None
        self._js: Any = None
        self._dead: str | None = None
        self.delivered = 0
        self.undelivered = 0
        self.problems: list[str] = []
        self.outbox: Path | None = None

    def __repr__(self) -> str:
        return f"JetStreamTransport({self.config.servers!r}, subject={self.config.subject!r})"

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def _connect(self) -> Any:
        if self._js is None:

            async def connect() -> Any:
                nc = await self._nats.connect(**self.config.connect_options())
                js = nc.jetstream()
                await ensure_stream(js, self.config)
                return nc, js

            try:
                self._nc, self._js = self._run(
                    asyncio.wait_for(connect(), self.config.connect_timeout * 2)
                )
            except Exception as e:
                raise TransientDeliveryError(
                    target=",".join(self.config.servers),
                    reason=f"{type(e).__name__}: {e}".strip(": "),
                ) from e
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
        except TransientDeliveryError as e:
            self._dead = str(e)  # unreachable: do not pay the timeout again for every event
            self._keep(doc, self._dead)
            return
        except Exception as e:  # noqa: BLE001 - a publish without an ack is not stored
            self._keep(doc, f"{type(e).__name__}: {e}")
            return
        self.delivered += 1

    def close(self, timeout: float = -1) -> bool:  # noqa: ARG002 - publishes are synchronous
        if self._nc is not None:
            with contextlib.suppress(Exception):  # closing a broken connection is best effort
                self._run(self._nc.close())  # publishes were acknowledged one by one
        self._loop.close()
        return self.undelivered == 0

    def _keep(self, event: Mapping[str, Any], reason: str) -> None:
        folder = Path(self.config.outbox_dir)
        folder.mkdir(parents=True, exist_ok=True)
        self.outbox = folder / "jetstream.jsonl"
        with self.outbox.open("a", encoding="utf-8") as out:
            out.write(json.dumps(event, sort_keys=True) + "\n")
        self.undelivered += 1
        if reason not in self.problems:
            self.problems.append(reason)
            logger.error("JetStream: event(s) not published (%s); kept in %s", reason, self.outbox)
