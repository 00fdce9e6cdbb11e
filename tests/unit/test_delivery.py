from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import RunEvent

from dbt_oml.config.settings import changed
from dbt_oml.delivery.emitter import (
    MAX_CONSECUTIVE_FAILURES,
    Delivery,
    from_dict,
    read_outbox,
    to_dict,
)
from dbt_oml.errors import ArtifactError
from dbt_oml.redaction import Redactor, mask
from tests.support.events import run_events


class RefusedError(Exception):
    """What requests raises for a closed port: the socket's error is only in the chain."""


class Flaky:
    """Fails its first `fail` sends: with a server error, or (`refused`) unable to connect."""

    def __init__(self, fail: int, *, refused: bool = False) -> None:
        self.fail = fail
        self.refused = refused
        self.calls = 0
        self.sent: list[RunEvent] = []

    def emit(self, event: RunEvent) -> None:
        self.calls += 1
        if self.calls > self.fail:
            self.sent.append(event)
            return
        url = "https://bot:SECRET@om:8585/api/v1/lineage"
        if not self.refused:
            raise RuntimeError(f"POST {url}: 500 Internal Server Error")
        refused = ConnectionRefusedError(111, "Connection refused")
        raise RefusedError(f"POST {url}: max retries exceeded") from refused

    def close(self, timeout: float = -1.0) -> bool:
        return True


def test_a_dead_transport_is_tried_a_bounded_number_of_times(
    mini_target: Path, tmp_path: Path
) -> None:
    events = run_events(mini_target)
    flaky = Flaky(fail=10**6)
    delivery = Delivery(
        flaky, outbox=tmp_path / "outbox" / "x.jsonl", target="om", redactor=Redactor()
    )
    delivery.send_all(events)
    report = delivery.close()
    assert flaky.calls == MAX_CONSECUTIVE_FAILURES
    assert report.delivered == 0
    assert report.failed == len(events)
    kept = read_outbox(tmp_path / "outbox" / "x.jsonl")
    assert [to_dict(e) for e in kept] == [to_dict(e) for e in events]
    assert all("SECRET" not in err for err in report.errors)


def test_an_unreachable_backend_is_tried_once(
    mini_target: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Connection refused after the client's own retries: the rest goes to the outbox untried."""
    events = run_events(mini_target)
    flaky = Flaky(fail=10**6, refused=True)
    delivery = Delivery(flaky, outbox=tmp_path / "x.jsonl", target="om", redactor=Redactor())
    with caplog.at_level("WARNING", logger="dbt_oml.delivery.emitter"):
        delivery.send_all(events)
    report = delivery.close()
    assert (flaky.calls, report.delivered, report.failed) == (1, 0, len(events))
    assert len(report.errors) == 1
    assert "SECRET" not in report.errors[0]
    assert [r.getMessage() for r in caplog.records] == [
        f"om cannot be reached; keeping the remaining events in {tmp_path / 'x.jsonl'}"
    ]
    kept = read_outbox(tmp_path / "x.jsonl")
    assert [to_dict(e) for e in kept] == [to_dict(e) for e in events]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ConnectionResetError(104, "reset"), True),
        (TimeoutError("timed out"), True),
        (socket.gaierror(-2, "Name or service not known"), True),
        (OSError(-2, "Name or service not known"), False),  # not gaierror: not known to be DNS
        (ValueError("HTTP 400"), False),
    ],
)
def test_unreachable_reads_the_chain(error: Exception, expected: bool) -> None:
    from dbt_oml.delivery.emitter import unreachable

    wrapped = RuntimeError("wrapped")
    wrapped.__cause__ = error  # what `raise ... from error` sets
    assert unreachable(wrapped) is expected
    assert unreachable(error) is expected


def test_a_passing_failure_keeps_only_the_failed_event(mini_target: Path, tmp_path: Path) -> None:
    events = run_events(mini_target)
    flaky = Flaky(fail=1)
    delivery = Delivery(flaky, outbox=tmp_path / "o.jsonl", target="om", redactor=Redactor())
    delivery.send_all(events)
    assert delivery.report.delivered == len(events) - 1
    assert [e.run.runId for e in read_outbox(tmp_path / "o.jsonl")] == [events[0].run.runId]


def test_outbox_replays_through_a_real_client(mini_target: Path, tmp_path: Path) -> None:
    events = run_events(mini_target)
    outbox = tmp_path / "o.jsonl"
    delivery = Delivery(Flaky(fail=10**6), outbox=outbox, target="x", redactor=Redactor())
    delivery.send_all(events)
    sink = tmp_path / "sink.jsonl"
    client = OpenLineageClient(
        config={"transport": {"type": "file", "log_file_path": str(sink), "append": True}}
    )
    Delivery(client, outbox=tmp_path / "again.jsonl", target="file", redactor=Redactor()).send_all(
        read_outbox(outbox)
    )
    replayed = [json.loads(line) for line in sink.read_text().splitlines()]
    assert [e["run"]["runId"] for e in replayed] == [e.run.runId for e in events]
    assert replayed[3]["inputs"] == to_dict(events[3])["inputs"]


def test_dry_run_collects(mini_target: Path, tmp_path: Path) -> None:
    delivery = Delivery(None, outbox=tmp_path / "o.jsonl", target="stdout", redactor=Redactor())
    delivery.send_all(run_events(mini_target))
    assert len(delivery.report.collected) > 2
    assert not (tmp_path / "o.jsonl").exists()


def test_a_torn_last_line_is_skipped_with_a_warning(
    mini_target: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    events = run_events(mini_target)
    path = tmp_path / "o.jsonl"
    Delivery(Flaky(fail=10**6), outbox=path, target="x", redactor=Redactor()).send_all(events)
    whole = path.read_text()
    path.write_text(whole + whole.splitlines()[0][:40])  # a crash in the middle of a write
    caplog.clear()
    kept = read_outbox(path)
    assert [e.run.runId for e in kept] == [e.run.runId for e in events]
    [warning] = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"{path}:{len(events) + 1}: skipped" in warning
    assert "torn" in warning


def test_a_line_that_is_not_an_event_is_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "o.jsonl"
    path.write_text('{"eventType": "START"}\n[1]\n')
    assert read_outbox(path) == []
    warnings = sorted(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert [w.split(": ")[0] for w in warnings] == [f"{path}:1", f"{path}:2"]


def test_a_missing_outbox_is_an_artifact_error(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError) as err:
        read_outbox(tmp_path / "none.jsonl")
    assert err.value.path.endswith("none.jsonl")


def test_the_outbox_is_private_and_redacted(mini_target: Path, tmp_path: Path) -> None:
    redactor = Redactor()  # the run's
    redactor.add("outbox-SECRET-77")
    event = to_dict(run_events(mini_target)[-1])
    event["run"]["facets"]["errorMessage"] = {"message": "passwd=outbox-SECRET-77 refused"}
    path = tmp_path / "box" / "o.jsonl"
    Delivery(Flaky(fail=1), outbox=path, target="x", redactor=redactor).send(from_dict(event))
    assert path.stat().st_mode & 0o777 == 0o600
    assert "SECRET" not in path.read_text()


def test_mask() -> None:
    assert "pw" not in mask("https://u:pw@h/x?api_key=pw")


def test_each_append_is_whole_lines_in_one_write(
    mini_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11, item 12: a crash can tear at most the line being written, never an earlier one,
    and a reader never sees half a line of an append that went through."""
    import os

    from dbt_oml.delivery import outbox

    real_write = os.write
    writes: list[tuple[str, bytes]] = []

    def write(fd: int, data: bytes) -> int:
        target = os.readlink(f"/proc/self/fd/{fd}")
        if target.startswith(str(tmp_path)):
            writes.append((Path(target).name, bytes(data)))
        return real_write(fd, data)

    monkeypatch.setattr(outbox.os, "write", write)
    events = [to_dict(e) for e in run_events(mini_target)]
    assert outbox.append_events(tmp_path / "o.jsonl", events[:3], Redactor()) == 3
    outbox.append_reason(tmp_path / "o.reasons.log", 3, "POST /api\n  refused\n", Redactor())
    Delivery(Flaky(fail=2), outbox=tmp_path / "d.jsonl", target="x", redactor=Redactor()).send_all(
        from_dict(e) for e in events
    )
    assert [(name, data.count(b"\n")) for name, data in writes] == [
        ("o.jsonl", 3),
        ("o.reasons.log", 1),
        ("d.jsonl", 1),
        ("d.jsonl", 1),
    ]
    for name, data in writes:
        assert data.endswith(b"\n"), name
        if name.endswith(".jsonl"):  # every line of it a whole event
            assert all(json.loads(line)["eventType"] for line in data.splitlines())
    assert (tmp_path / "o.jsonl").read_bytes() == writes[0][1]


def test_a_line_nested_too_deep_costs_that_line_only(tmp_path: Path) -> None:
    """'[' * 100000 in an outbox file: that line is a problem, the others are read."""
    from dbt_oml.delivery.outbox import read_numbered

    path = tmp_path / "kept.jsonl"
    path.write_text("[" * 100_000 + "\n" + json.dumps({"eventType": "COMPLETE"}) + "\n")
    events, problems = read_numbered(path)
    assert [number for number, _ in events] == [2]
    assert problems == [f"{path}:1: skipped, not a JSON line (nested too deep)"]


def test_a_directory_named_like_an_outbox_file_is_left_alone(tmp_path: Path) -> None:
    from dbt_oml.config import Settings
    from dbt_oml.pipeline.offline import outbox_files

    (tmp_path / "odd.jsonl").mkdir()
    (tmp_path / "kept.jsonl").write_text("{}\n")
    (tmp_path / "gone.rejected.jsonl").write_text("{}\n")
    _, files = outbox_files(changed(Settings(), outbox_dir=tmp_path), tmp_path)
    assert files == [tmp_path / "kept.jsonl"]


def test_read_kept_names_the_lines_that_are_no_event(tmp_path: Path, mini_target: Path) -> None:
    """Not JSON, nested too deep, JSON but not an object, an object but not an event: each is
    skipped, and its number is given so that the line can be kept (set aside, not lost)."""
    from dbt_oml.delivery.emitter import read_kept

    event = json.dumps(to_dict(run_events(mini_target)[0]))
    path = tmp_path / "kept.jsonl"
    lines = ["{not json", "[" * 100_000, "[1]", '{"eventType": "COMPLETE"}', event, ""]
    path.write_text("\n".join(lines) + "\n")
    events, skipped = read_kept(path)
    assert len(events) == 1
    assert skipped == (1, 2, 3, 4)


def test_set_aside_keeps_skipped_lines_as_they_were_in_a_rejected_file(tmp_path: Path) -> None:
    from dbt_oml.delivery.claims import claim, set_aside

    (tmp_path / "inv.jsonl").write_text('{"a": 1}\n[[[\n{"b": 2}\ntorn')
    (tmp_path / "inv.rejected.jsonl").write_text('{"refused": 1}\n')
    (claimed,) = claim([tmp_path / "inv.jsonl"])
    assert set_aside(claimed, (2, 4), Redactor()) == tmp_path / "inv.rejected.jsonl"
    assert (tmp_path / "inv.rejected.jsonl").read_text() == '{"refused": 1}\n[[[\ntorn\n'
    assert set_aside(claimed, (), Redactor()) is None
    # a rejected file replayed by name keeps its own skipped lines under its own name
    (again,) = claim([tmp_path / "inv.rejected.jsonl"])
    assert set_aside(again, (2,), Redactor()) == tmp_path / "inv.rejected.jsonl"


def test_recover_skips_a_claim_another_flush_gave_back_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two flushes start at once and both see a killed flush's claim: one gives it back, the
    other goes on (no FileNotFoundError, exit 5), and the file is given back once."""
    from dbt_oml.delivery import claims

    (tmp_path / "old.jsonl.replaying").write_text("{}\n")
    real = Path.replace

    def the_other_flush_first(self: Path, target: Path) -> Path:
        real(self, tmp_path / "old.jsonl")
        return real(self, target)

    monkeypatch.setattr(Path, "replace", the_other_flush_first)
    assert claims.recover(tmp_path) == []
    assert [p.name for p in tmp_path.iterdir()] == ["old.jsonl"]
