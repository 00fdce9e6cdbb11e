"""The file transport holds a local events file open: every event is in the file when `emit`
returns, and a file removed or replaced meanwhile is opened anew within `RECHECK` seconds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
from openlineage.client.serde import Serde
from openlineage.client.transport.file import FileConfig

from dbt_oml.transports.file import RECHECK, FileTransport


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _event(number: int) -> RunEvent:
    return RunEvent(
        eventType=RunState.COMPLETE,
        eventTime=f"2026-12-05T00:00:{number:02d}+00:00",
        run=Run(runId=f"01939f6a-0000-7000-8000-{number:012d}"),
        job=Job(namespace="dbt://p", name=f"model.p.m{number}"),
        producer="https://example.com/p",
    )


def _line(number: int) -> bytes:
    return (
        json.dumps(Serde.to_dict(_event(number)), sort_keys=True, separators=(",", ":")) + "\n"
    ).encode()


def _transport(path: Path, *, append: bool = True) -> tuple[FileTransport, Clock]:
    transport = FileTransport(FileConfig(log_file_path=str(path), append=append))
    transport.clock = clock = Clock()
    return transport, clock


def test_each_event_is_in_the_file_when_emit_returns(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    transport, _ = _transport(path)
    for number in range(3):
        transport.emit(_event(number))
        assert path.read_bytes() == b"".join(_line(n) for n in range(number + 1))
    assert path.stat().st_mode & 0o777 == 0o600
    assert transport.close()
    transport.emit(_event(3))  # closed: opened again, appended
    assert path.read_bytes() == b"".join(_line(n) for n in range(4))


def test_a_removed_file_is_created_again_at_the_next_check(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    transport, clock = _transport(path)
    transport.emit(_event(0))
    path.unlink()
    clock.now += RECHECK
    transport.emit(_event(1))
    assert path.read_bytes() == _line(1)
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_rotated_file_keeps_what_it_got_and_the_new_one_gets_the_rest(tmp_path: Path) -> None:
    path, rotated = tmp_path / "events.jsonl", tmp_path / "events.jsonl.1"
    transport, clock = _transport(path)
    transport.emit(_event(0))
    path.rename(rotated)
    path.touch(mode=0o640)
    path.chmod(0o640)
    transport.emit(_event(1))  # before the check: still the file it holds, now `rotated`
    clock.now += RECHECK
    transport.emit(_event(2))
    assert rotated.read_bytes() == _line(0) + _line(1)
    assert path.read_bytes() == _line(2)
    assert path.stat().st_mode & 0o777 == 0o640  # someone else's file keeps its mode


def test_a_path_that_cannot_be_written_raises_with_the_path(tmp_path: Path) -> None:
    transport, _ = _transport(tmp_path)  # a folder
    with pytest.raises(RuntimeError, match=str(tmp_path)):
        transport.emit(_event(0))


def test_one_file_per_event_mode_is_the_clients(tmp_path: Path) -> None:
    base = tmp_path / "ev"
    transport, _ = _transport(base, append=False)
    transport.emit(_event(0))
    transport.emit(_event(1))
    written = sorted(tmp_path.iterdir())
    assert len(written) == 2
    assert [p.read_bytes() for p in written] == [_line(0), _line(1)]
    assert all(p.name.startswith("ev-") for p in written)


def test_the_held_file_is_not_inherited_by_child_processes(tmp_path: Path) -> None:
    transport, _ = _transport(tmp_path / "events.jsonl")
    transport.emit(_event(0))
    held = transport._held
    assert held is not None
    assert not os.get_inheritable(held.fd)


def test_on_windows_each_event_opens_the_file_as_the_clients_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    transport, _ = _transport(path)
    monkeypatch.setattr(os, "name", "nt")  # a file held open there blocks rotation
    transport.emit(_event(0))
    transport.emit(_event(1))
    assert transport._held is None
    assert path.read_bytes() == _line(0) + _line(1)
