"""The JetStream stream our events go to: checked (or created) before the first publish, and
the de-duplication id of each event.

Shared by the transport and the relay; nats-py is imported only inside these functions.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Mapping
from typing import Any

from dbt_oml.errors import ConfigError
from dbt_oml.transports.jetstream.config import JetStreamConfig
from dbt_oml.transports.jetstream.connection import server_label, subject_matches


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


async def ensure_stream(js: Any, config: JetStreamConfig) -> Any:
    """The stream's info; the stream is created when missing (and the config allows it).

    Raises:
        ConfigError: the stream is missing and create_stream is off.
    """
    from nats.js.api import StorageType, StreamConfig
    from nats.js.errors import BadRequestError, NotFoundError

    try:
        return check_stream(await js.stream_info(config.stream), config)
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
        num_replicas=config.num_replicas,
    )
    try:
        return await js.add_stream(stream)
    except BadRequestError as e:  # another stream holds the subject; replicas > servers; ...
        with contextlib.suppress(NotFoundError):  # another producer created it meanwhile
            return await js.stream_info(config.stream)
        raise ConfigError(
            key="transport.stream",
            source="jetstream transport",
            reason=f"stream {config.stream!r} ({config.num_replicas} replica(s)) cannot be "
            f"created for {config.subject!r}: {e.description or e}",
            hint="create it yourself, or choose another subject, stream name or num_replicas",
        ) from e


def check_stream(info: Any, config: JetStreamConfig) -> Any:
    """An existing stream's info, or ConfigError at once when it cannot take our events: its
    subjects do not cover ours, or it is full and discards new messages (a publish would
    otherwise wait out its timeout on every event, and look like an election)."""
    stream = getattr(info, "config", None)
    subjects = list(getattr(stream, "subjects", None) or [])
    where = f"stream {config.stream!r} on {server_label(config.servers)}"
    if subjects and not any(subject_matches(s, config.subject) for s in subjects):
        raise ConfigError(
            key="transport.subject",
            source="jetstream transport",
            reason=f"{where} takes {', '.join(subjects)}, not {config.subject!r}",
            hint="add the subject to the stream, or set subject/stream to a pair that match",
        )
    state = getattr(info, "state", None)
    full = [
        f"{what} {have} of {limit}"
        for what, have, limit in (
            ("messages", getattr(state, "messages", 0), getattr(stream, "max_msgs", None)),
            ("bytes", getattr(state, "bytes", 0), getattr(stream, "max_bytes", None)),
        )
        if limit is not None and limit > 0 and (have or 0) >= limit
    ]
    discard = getattr(stream, "discard", None)  # nats-py gives the enum or its string
    if full and str(getattr(discard, "value", discard)) == "new":
        raise ConfigError(
            key="transport.stream",
            source="jetstream transport",
            reason=f"{where} is full ({', '.join(full)}) and refuses new messages (discard: new)",
            hint="raise its max_msgs/max_bytes, let the relay drain it, or use discard: old",
        )
    return info
