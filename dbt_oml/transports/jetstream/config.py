"""The JetStream transport's settings (`transport:` with `type: jetstream`), checked on the way in.

Shared by the transport, the NATS connection and the relay; imports nothing of the NATS client.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Callable
from typing import Any, Final

import attr
from openlineage.client.transport.transport import Config

from dbt_oml.errors import ConfigError
from dbt_oml.transports.options import coerce, known_values

#: JetStream's limit on a stream's replicas.
MAX_REPLICAS: Final = 5


def _check_numbers(values: dict[str, Any]) -> None:
    """Numbers (text from the environment too) of the right kind and range, or ConfigError."""
    for key in ("max_age", "duplicate_window", "publish_timeout", "connect_timeout"):
        _number(values, key, float, lambda n: n > 0, "is not a number of seconds above 0")
    _number(
        values, "num_replicas", int, lambda n: 1 <= n <= MAX_REPLICAS, "is not a whole number 1-5"
    )
    _number(values, "retry_budget", float, lambda n: n >= 0, "is not a number of seconds >= 0")


def _number(
    values: dict[str, Any], key: str, kind: type[float], valid: Callable[[float], bool], what: str
) -> None:
    if key not in values:
        return
    value = values[key]
    number: float | None = None
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError):
            number = kind(value)
    if isinstance(value, float) and number != value:  # 2.5 replicas
        number = None
    if number is None or not valid(number):
        raise ConfigError(
            key=f"transport.{key}", source="jetstream transport", reason=f"{value!r} {what}"
        )
    values[key] = number


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
    #: copies of the stream in a cluster (1-5), used when the stream is created; 3 survives a
    #: lost server
    num_replicas: int = 1
    #: seconds one publish may keep retrying through a leader election or a lost server, on
    #: another connection, before events go to the outbox
    retry_budget: float = 30.0
    outbox_dir: str = "dbt-oml-outbox"

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> JetStreamConfig:
        values = known_values(cls, params, source="jetstream transport")
        if isinstance(values.get("servers"), str):
            values["servers"] = [s.strip() for s in values["servers"].split(",") if s.strip()]
        coerce(values, bools=("create_stream",))
        _check_numbers(values)
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
