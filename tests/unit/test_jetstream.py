"""The JetStream transport's cluster settings and its retries, against a scripted JetStream."""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.errors import ConfigError
from dbt_oml.transports.jetstream import JetStreamConfig, JetStreamTransport, ensure_stream

nats = pytest.importorskip("nats", reason="needs dbt-oml[nats]")
from nats.js import errors as js_errors  # noqa: E402


class TestClusterSettings:
    def test_defaults(self) -> None:
        config = JetStreamConfig.from_dict({})
        assert (config.num_replicas, config.retry_budget) == (1, 30.0)

    def test_values_from_the_environment_are_text(self) -> None:
        config = JetStreamConfig.from_dict(
            {"servers": "nats://a:4222, nats://b:4222", "num_replicas": "3", "retry_budget": "5"}
        )
        assert config.servers == ["nats://a:4222", "nats://b:4222"]
        assert (config.num_replicas, config.retry_budget) == (3, 5.0)

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("num_replicas", 0),
            ("num_replicas", 6),
            ("num_replicas", 2.5),
            ("num_replicas", "three"),
            ("num_replicas", True),
            ("retry_budget", -1),
            ("retry_budget", "soon"),
            ("publish_timeout", "soon"),
            ("connect_timeout", 0),
        ],
    )
    def test_bad_values_name_their_key(self, key: str, value: object) -> None:
        with pytest.raises(ConfigError) as caught:
            JetStreamConfig.from_dict({key: value})
        assert caught.value.key == f"transport.{key}"
        assert repr(value) in caught.value.reason


@dataclass
class ScriptedJetStream:
    """A JetStream context whose publishes fail with `faults`, in order, then succeed."""

    faults: list[BaseException] = field(default_factory=list)
    published: list[dict[str, str]] = field(default_factory=list)
    created: list[Any] = field(default_factory=list)
    streams: dict[str, Any] = field(default_factory=dict)
    add_fails: BaseException | None = None
    #: another producer created the stream just before this one tried
    raced: bool = False

    async def publish(self, subject: str, payload: bytes, **kwargs: Any) -> Any:
        if self.faults:
            raise self.faults.pop(0)
        self.published.append(kwargs["headers"])
        return type("PubAck", (), {"duplicate": len(self.published) > 1})()

    async def stream_info(self, name: str) -> Any:
        if name not in self.streams:
            raise js_errors.NotFoundError
        return self.streams[name]

    async def add_stream(self, config: Any) -> Any:
        self.created.append(config)
        if self.raced:
            self.streams[config.name] = "made by another producer"
        if self.add_fails is not None:
            raise self.add_fails
        return config


@dataclass
class Connected:
    is_connected: bool = True

    async def close(self) -> None:
        self.is_connected = False


def _transport(tmp_path: Path, js: ScriptedJetStream, **settings: Any) -> JetStreamTransport:
    config = JetStreamConfig.from_dict({"outbox_dir": str(tmp_path), **settings})
    transport = JetStreamTransport(config)
    transport._js, transport._nc, transport._reached = js, Connected(), True
    return transport


EVENT = {
    "eventTime": "2026-11-30T03:55:00.123Z",
    "eventType": "COMPLETE",
    "run": {"runId": "01a22a97-c811-7ab0-b0d7-94051423011d"},
    "job": {"namespace": "dbt", "name": "j"},
}


class TestRetries:
    def test_a_leader_election_is_waited_out_and_the_event_stored_once(
        self, tmp_path: Path
    ) -> None:
        no_leader = [js_errors.NoStreamResponseError(), nats.errors.TimeoutError()]
        js = ScriptedJetStream(faults=no_leader)
        transport = _transport(tmp_path, js)
        transport.emit(EVENT)
        transport.emit(EVENT)  # the same event again: the same id (JetStream stores one)
        assert transport.close() is True
        assert transport.delivered == 2
        assert len({h["Nats-Msg-Id"] for h in js.published}) == 1
        [note] = transport.notes
        assert note.startswith("JetStream: 1 event(s) published again after a NATS fault (the ")
        assert "the stream has no leader" in note
        assert not (tmp_path / "jetstream.jsonl").exists()

    def test_a_spent_budget_sends_the_rest_to_the_outbox_without_waiting_again(
        self, tmp_path: Path
    ) -> None:
        js = ScriptedJetStream(faults=[js_errors.NoStreamResponseError()] * 100)
        transport = _transport(tmp_path, js, retry_budget=0.3)
        transport.emit(EVENT)
        tries = 100 - len(js.faults)
        transport.emit({**EVENT, "eventType": "START"})
        assert 100 - len(js.faults) == tries  # no second budget
        assert transport.close() is False
        [problem] = transport.problems
        assert problem.startswith("delivery to NATS nats://127.0.0.1:4222 failed: the stream ")
        assert problem.endswith("of retries: retry_budget)")
        assert len((tmp_path / "jetstream.jsonl").read_text().splitlines()) == 2

    def test_a_refused_publish_is_kept_at_once(self, tmp_path: Path) -> None:
        refused = js_errors.BadRequestError(description="expected stream does not match")
        js = ScriptedJetStream(faults=[refused])
        transport = _transport(tmp_path, js)
        transport.emit(EVENT)
        transport.emit(EVENT)  # not given up on: the next event is published
        assert transport.close() is False
        assert (transport.delivered, transport.undelivered) == (1, 1)
        assert transport.notes == []
        assert "expected stream does not match" in transport.problems[0]


class TestStream:
    def test_created_with_the_replica_count(self) -> None:
        js = ScriptedJetStream()
        asyncio.run(ensure_stream(js, JetStreamConfig.from_dict({"num_replicas": 3})))
        [created] = js.created
        assert (created.name, created.num_replicas) == ("OPENLINEAGE", 3)

    def test_created_meanwhile_by_another_producer(self) -> None:
        js = ScriptedJetStream(
            add_fails=js_errors.BadRequestError(description="in use"), raced=True
        )
        info = asyncio.run(ensure_stream(js, JetStreamConfig.from_dict({})))
        assert info == "made by another producer"

    def test_refused_names_the_replicas(self) -> None:
        refused = js_errors.BadRequestError(description="replicas > 1 not supported")
        js = ScriptedJetStream(add_fails=refused)
        with pytest.raises(ConfigError) as caught:
            asyncio.run(ensure_stream(js, JetStreamConfig.from_dict({"num_replicas": 3})))
        assert caught.value.key == "transport.stream"
        assert "(3 replica(s))" in caught.value.reason
        assert "replicas > 1 not supported" in caught.value.reason


class SilentServer:
    """A TCP listener that accepts connections and never says a word (no NATS INFO).

    A thread accepts until `close()`, which also takes what is still queued: `close()` returns
    how many connections were made to it in all.
    """

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.sock.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.05)
            if ready:
                self.accepted.append(self.sock.accept()[0])

    def close(self) -> int:
        self._stop.set()
        self._thread.join(timeout=5)
        assert not self._thread.is_alive()
        self.sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:  # connections the kernel completed but the thread did not take yet
                self.accepted.append(self.sock.accept()[0])
        for conn in self.accepted:
            conn.close()
        self.sock.close()
        return len(self.accepted)


class TestUnreachable:
    @pytest.mark.parametrize("count", [1, 2])
    def test_a_silent_server_is_one_line_and_one_attempt_per_server(self, count: int) -> None:
        """Issue 11, item 7: nats-py reconnected once (2 x connect_timeout) and printed
        tracebacks; with reconnecting off it gave up on the first silent server of a list."""
        from dbt_oml.transports.jetstream.connection import NatsUnavailableError, connect

        silent = [SilentServer() for _ in range(count)]
        servers = [f"nats://relay:n4ts-S3cret@127.0.0.1:{s.port}" for s in silent]
        config = JetStreamConfig.from_dict({"servers": servers, "connect_timeout": 0.5})
        try:
            with pytest.raises(NatsUnavailableError) as caught:
                asyncio.run(connect(config))
        finally:
            attempts = [s.close() for s in silent]
        assert attempts == [1] * count
        assert caught.value.cause == "no answer within 0.5 s"
        labels = ", ".join(f"nats://***@127.0.0.1:{s.port}" for s in silent)
        assert str(caught.value) == f"delivery to NATS {labels} failed: no answer within 0.5 s"
        assert "n4ts-S3cret" not in str(caught.value)
