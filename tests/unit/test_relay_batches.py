"""The relay's batch logic without a server: an in-process JetStream, messages and a stub OM.

`Relay._batch` is the seam (the NATS session around it needs a server; see
tests/integration/test_relay_delivery.py). Each message gets exactly one of ack, nak or dead
letter.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from dbt_oml.errors import TransientDeliveryError, status_error
from dbt_oml.relay import Relay
from dbt_oml.relay.verdicts import REASON_HEADER
from dbt_oml.transports.jetstream.config import JetStreamConfig

pytest.importorskip("nats", reason="needs dbt-oml[nats]")


def _event(n: int) -> dict[str, Any]:
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/dbt-oml",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": f"01a22a97-c811-7ab0-b0d7-{n:012d}"},
        "job": {"namespace": "dbt", "name": f"job{n}"},
    }


@dataclass
class Message:
    """A JetStream message as the relay uses it: data, metadata, ack_sync, nak."""

    data: bytes
    sequence: int
    delivered: int = 1
    settled: list[tuple[str, float | None]] = field(default_factory=list)
    ack_fails: BaseException | None = None

    @property
    def metadata(self) -> Any:
        return SimpleNamespace(
            sequence=SimpleNamespace(stream=self.sequence), num_delivered=self.delivered
        )

    async def ack_sync(self, timeout: float) -> None:
        if self.ack_fails is not None:
            raise self.ack_fails
        self.settled.append(("ack", None))

    async def nak(self, delay: float) -> None:
        self.settled.append(("nak", delay))


@dataclass
class JetStream:
    published: list[tuple[str, bytes, dict[str, str], str]] = field(default_factory=list)

    async def publish(
        self, subject: str, payload: bytes, *, headers: dict[str, str], stream: str
    ) -> None:
        self.published.append((subject, payload, headers, stream))


@dataclass(frozen=True)
class Outcome:
    delivered: tuple[int, ...] = ()
    kept: tuple[tuple[int, str], ...] = ()
    rejected: tuple[tuple[int, str], ...] = ()


@dataclass
class StubOM:
    """Answers each batch with `answer(events)`; records what it was given."""

    answer: Callable[[list[dict[str, Any]]], Outcome]
    batches: list[list[dict[str, Any]]] = field(default_factory=list)
    budget_resets: int = 0

    def deliver(self, events: list[dict[str, Any]]) -> Outcome:
        self.batches.append(events)
        return self.answer(events)

    def reset_budget(self) -> None:
        self.budget_resets += 1


def _takes_all(events: list[dict[str, Any]]) -> Outcome:
    return Outcome(delivered=tuple(range(len(events))))


def _relay(om: StubOM, **kw: Any) -> Relay:
    return Relay(source=JetStreamConfig.from_dict({}), om=om, **kw)


def _messages(*payloads: bytes, first: int = 1) -> list[Message]:
    return [Message(p, first + i) for i, p in enumerate(payloads)]


def _json(n: int) -> bytes:
    return json.dumps(_event(n)).encode()


def _batch(relay: Relay, js: JetStream, messages: list[Message]) -> int:
    return asyncio.run(relay._batch(js, messages))


class TestVerdicts:
    def test_only_what_om_took_is_acked(self) -> None:
        om = StubOM(
            lambda _: Outcome(delivered=(0,), kept=((1, "input unknown"),), rejected=((2, "bad"),))
        )
        relay, js = _relay(om), JetStream()
        messages = _messages(_json(0), _json(1), _json(2))
        assert _batch(relay, js, messages) == 1
        assert messages[0].settled == [("ack", None)]
        assert messages[1].settled == [("nak", 1.0)]  # backoff(0): comes back later
        assert messages[2].settled == [("ack", None)]  # acked once dead-lettered
        [(subject, payload, headers, stream)] = js.published
        assert (subject, payload, stream) == ("openlineage.events.dead", _json(2), "OPENLINEAGE")
        assert headers[REASON_HEADER] == "OpenMetadata rejected it: bad"
        assert headers["Nats-Msg-Id"] == "dbt-oml-dead-OPENLINEAGE-3"
        report = relay.report
        assert (report.received, report.delivered, report.retried, report.dead_lettered) == (
            3,
            1,
            1,
            1,
        )
        assert report.batches == 1
        assert om.budget_resets == 1

    def test_an_index_om_forgot_is_retried_not_acked(self) -> None:
        relay, js = _relay(StubOM(lambda _: Outcome(delivered=(1,)))), JetStream()
        messages = _messages(_json(0), _json(1))
        _batch(relay, js, messages)
        assert [m.settled[0][0] for m in messages] == ["nak", "ack"]

    def test_the_nak_delay_grows_with_the_deliveries(self) -> None:
        relay = _relay(StubOM(lambda _: Outcome(kept=((0, "later"),))), backoff=lambda n: n * 10.0)
        message = Message(_json(0), 7, delivered=4)
        _batch(relay, JetStream(), [message])
        assert message.settled == [("nak", 30.0)]

    def test_a_custom_dead_letter_subject(self) -> None:
        om = StubOM(lambda _: Outcome(rejected=((0, "no"),)))
        relay, js = _relay(om, dead_letter_subject="graveyard"), JetStream()
        _batch(relay, js, _messages(_json(0)))
        assert js.published[0][0] == "graveyard"


class TestMalformed:
    def test_a_malformed_message_costs_only_itself(self) -> None:
        om = StubOM(_takes_all)
        relay, js = _relay(om), JetStream()
        messages = _messages(b"not json", _json(1), b"[]", b"\xff\xfe")
        assert _batch(relay, js, messages) == 0
        assert om.batches == [[_event(1)]]  # OM saw only the event
        assert all(m.settled == [("ack", None)] for m in messages)
        reasons = {p: h[REASON_HEADER] for _, p, h, _ in js.published}
        assert set(reasons) == {b"not json", b"[]", b"\xff\xfe"}
        assert reasons[b"not json"].startswith("not JSON (JSONDecodeError")
        assert reasons[b"[]"] == "not an OpenLineage RunEvent: not a JSON object"
        assert (relay.report.delivered, relay.report.dead_lettered) == (1, 3)

    def test_a_batch_of_only_malformed_messages_never_calls_om(self) -> None:
        om = StubOM(_takes_all)
        relay = _relay(om)
        _batch(relay, JetStream(), _messages(b"{}"))
        assert om.batches == []
        assert om.budget_resets == 0
        assert relay.report.dead_lettered == 1


class TestFailures:
    def test_om_unavailable_retries_the_whole_batch(self) -> None:
        def down(_: list[dict[str, Any]]) -> Outcome:
            raise TransientDeliveryError(target="OpenMetadata https://om", reason="503")

        relay, js = _relay(StubOM(down)), JetStream()
        messages = _messages(_json(0), _json(1))
        assert _batch(relay, js, messages) == 2
        assert [m.settled for m in messages] == [[("nak", 1.0)], [("nak", 1.0)]]
        assert js.published == []
        assert relay.report.last_error == "delivery to OpenMetadata https://om failed: 503"

    def test_a_payload_om_refuses_for_good_is_dead_lettered_alone(self) -> None:
        """A 400 for the whole batch (a bootstrap write, issue 27.12): one by one, the event at
        fault becomes a dead letter with OM's reason; before, every message was nak'ed forever."""

        def picky(events: list[dict[str, Any]]) -> Outcome:
            if any(e["job"]["name"] == "job1" for e in events):
                raise status_error(400, target="PUT om/api/v1/pipelines", reason="400 bad name")
            return _takes_all(events)

        relay, js = _relay(StubOM(picky)), JetStream()
        messages = _messages(_json(0), _json(1), _json(2))
        assert _batch(relay, js, messages) == 0
        assert [m.settled for m in messages] == [[("ack", None)]] * 3
        [(_, payload, headers, _)] = js.published
        assert payload == _json(1)
        assert headers[REASON_HEADER].endswith("failed: 400 bad name")

    @pytest.mark.parametrize("status", [401, 403, 404])
    def test_a_refusal_of_the_sender_or_the_address_waits_for_a_fix(self, status: int) -> None:
        def refusing(_: list[dict[str, Any]]) -> Outcome:
            raise status_error(status, target="om", reason=f"{status} no")

        relay, js = _relay(StubOM(refusing)), JetStream()
        messages = _messages(_json(0), _json(1))
        assert _batch(relay, js, messages) == 2
        assert js.published == []

    def test_an_unexpected_error_is_isolated_to_its_event(self) -> None:
        def fragile(events: list[dict[str, Any]]) -> Outcome:
            if any(e["job"]["name"] == "job1" for e in events):
                raise KeyError("boom")
            return _takes_all(events)

        om = StubOM(fragile)
        relay = _relay(om)
        messages = _messages(_json(0), _json(1), _json(2))
        assert _batch(relay, JetStream(), messages) == 1
        assert [len(b) for b in om.batches] == [3, 1, 1, 1]  # then one by one
        assert [m.settled[0][0] for m in messages] == ["ack", "nak", "ack"]
        assert relay.report.last_error == "delivery failed unexpectedly (KeyError: 'boom')"

    @pytest.mark.parametrize(("deliveries", "settled"), [(4, "nak"), (5, "ack")])
    def test_a_poison_event_is_dead_lettered_after_poison_after_deliveries(
        self, deliveries: int, settled: str
    ) -> None:
        def broken(_: list[dict[str, Any]]) -> Outcome:
            raise RuntimeError("a bug")

        relay, js = _relay(StubOM(broken), poison_after=5), JetStream()
        message = Message(_json(0), 1, delivered=deliveries)
        _batch(relay, js, [message])
        assert message.settled[0][0] == settled
        assert len(js.published) == (settled == "ack")

    def test_a_failed_ack_is_not_counted_and_the_relay_goes_on(self) -> None:
        relay = _relay(StubOM(_takes_all))
        messages = _messages(_json(0), _json(1))
        messages[0].ack_fails = ValueError("odd reply")
        assert _batch(relay, JetStream(), messages) == 0
        assert messages[1].settled == [("ack", None)]
        assert relay.report.delivered == 1

    def test_a_nats_fault_while_settling_ends_the_session(self) -> None:
        relay = _relay(StubOM(_takes_all))
        message = Message(_json(0), 1, ack_fails=ConnectionResetError("gone"))
        with pytest.raises(ConnectionResetError):
            _batch(relay, JetStream(), [message])


class TestReport:
    def test_a_redelivered_message_is_received_once(self) -> None:
        answers = iter([Outcome(kept=((0, "later"),)), Outcome(delivered=(0,))])
        relay = _relay(StubOM(lambda _: next(answers)))
        _batch(relay, JetStream(), [Message(_json(0), 42)])
        _batch(relay, JetStream(), [Message(_json(0), 42, delivered=2)])
        report = relay.report
        assert (report.received, report.retried, report.delivered, report.batches) == (1, 1, 1, 2)

    def test_a_stop_before_the_first_session_ends_cleanly_without_connecting(self) -> None:
        # servers that nothing listens on: a connection attempt would fail, not hang
        relay = Relay(
            source=JetStreamConfig.from_dict({"servers": "nats://127.0.0.1:1"}),
            om=StubOM(_takes_all),
        )

        async def stopped() -> Any:
            stop = asyncio.Event()
            stop.set()  # what SIGTERM does (run_relay's signal handler)
            return await relay.run(once=False, stop=stop)

        report = asyncio.run(stopped())
        assert report.stopped is True
        assert (report.received, report.batches, report.last_error) == (0, 0, None)


def test_the_batch_line_says_why_om_kept_events(caplog: pytest.LogCaptureFixture) -> None:
    """Before: 'retried 1 ... (None)': the reason came only from exceptions (issue 27.12)."""
    om = StubOM(lambda _: Outcome(delivered=(0,), kept=((1, "OpenMetadata drew 0 of 1 edges"),)))
    relay = _relay(om)
    with caplog.at_level("INFO", logger="dbt_oml.relay"):
        _batch(relay, JetStream(), _messages(_json(0), _json(1)))
    assert relay.report.last_error == "OpenMetadata drew 0 of 1 edges"
    (line,) = [r.getMessage() for r in caplog.records if "relay batch" in r.getMessage()]
    assert line.endswith("(OpenMetadata drew 0 of 1 edges)")
    assert "None" not in line
