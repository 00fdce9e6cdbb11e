"""Outbox files: JSON lines of events that were not delivered, and their reasons.

Every writer of an outbox goes through here, under one naming scheme (`Keeper`): a sender's
`<stem>.jsonl` (flush sends it again), `<stem>.rejected.jsonl` (refused for good) and
`<stem>.reasons.log`. Files are created 0600 (events may carry SQL and
error texts), each append is whole lines in one write, and reasons are redacted. Reading skips a
torn or corrupt line with a warning naming the file and line, so one bad line never costs the
rest of the file; `copy_lines` keeps such lines, as they were, where they are not sent again.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dbt_oml.redaction import Redactor

logger = logging.getLogger(__name__)

FILE_MODE = 0o600
#: Events refused for good, and lines that are no event: `dbt-oml replay FILE` sends them on
#: purpose, flush never.
REJECTED_SUFFIX = ".rejected.jsonl"


def _append_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    data = text.encode("utf-8")
    try:
        os.fchmod(fd, FILE_MODE)
        written = os.write(fd, data)
        while written < len(data):  # a short write (signal, full disk): finish the line
            written += os.write(fd, data[written:])
    finally:
        os.close(fd)


def write_whole(path: Path, data: bytes) -> None:
    """`data` as the file `path` (0600), all or nothing: written aside, then renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.part-{os.getpid()}")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    part.replace(path)


def append_events(path: Path, events: Iterable[Mapping[str, Any]], redactor: Redactor) -> int:
    """Append events as JSON lines (one write, error texts redacted); returns how many."""
    lines = [json.dumps(redactor.event(e), sort_keys=True) + "\n" for e in events]
    if lines:
        _append_text(path, "".join(lines))
    return len(lines)


def append_reason(
    path: Path, count: int, reason: str, redactor: Redactor, *, now: datetime | None = None
) -> None:
    """One line `<UTC time> <n> event(s): <reason>` in a reasons log (redacted)."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    one_line = " ".join(redactor(reason).split())
    _append_text(path, f"{stamp} {count} event(s): {one_line}\n")


@dataclass
class Keeper:
    """Where one sender keeps what it could not deliver, and what it says about it.

    Events are written at once (a crash after `keep` loses none); the reasons are counted and
    go to `<stem>.reasons.log` by `log_reasons()`, one line per reason, so a dead server that
    costs a thousand events writes one line, not a thousand.
    """

    folder: Path
    stem: str
    redactor: Redactor
    """The run's: what it writes is redacted with every secret the run knows."""
    undelivered: int = 0
    #: the file a later flush sends (or the rejected one, when nothing else was kept)
    outbox: Path | None = None
    #: (reason, file) -> events, for the run summary
    reasons: Counter[tuple[str, Path]] = field(default_factory=Counter)
    _unlogged: Counter[str] = field(default_factory=Counter)

    def path(self, *, rejected: bool = False) -> Path:
        return self.folder / (f"{self.stem}{REJECTED_SUFFIX}" if rejected else f"{self.stem}.jsonl")

    def keep(
        self, events: Iterable[Mapping[str, Any]], reason: str, *, rejected: bool = False
    ) -> Path:
        """Append `events` to this sender's outbox (refused for good: the rejected file)."""
        path = self.path(rejected=rejected)
        count = append_events(path, events, self.redactor)
        self.outbox = self.outbox if rejected and self.outbox else path
        self.undelivered += count
        self.reasons[(self.redactor(reason), path)] += count
        self._unlogged[reason] += count
        return path

    def log_reasons(self, *, now: datetime | None = None) -> None:
        """One line per reason counted since the last call, in `<stem>.reasons.log`."""
        for reason, count in self._unlogged.items():
            log = self.folder / f"{self.stem}.reasons.log"
            append_reason(log, count, reason, self.redactor, now=now)
        self._unlogged.clear()


def copy_lines(source: Path, numbers: Collection[int], dest: Path, redactor: Redactor) -> int:
    """Append the lines of `source` numbered `numbers` to `dest` as they were (redacted, each
    ended by a newline), in one write; returns how many."""
    wanted = set(numbers)
    with source.open(encoding="utf-8", errors="replace") as lines:
        kept = [line for number, line in enumerate(lines, 1) if number in wanted]
    if kept:
        _append_text(dest, "".join(redactor(line.rstrip("\n")) + "\n" for line in kept))
    return len(kept)


@dataclass(frozen=True)
class OutboxLines:
    """An outbox file as read: (number, JSON object) of each good line, one problem per bad
    line, and the numbers of the bad lines (skipped, to be kept elsewhere)."""

    events: list[tuple[int, dict[str, Any]]]
    problems: list[str]
    skipped: tuple[int, ...]


def read_events(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The events of an outbox file, and one problem per line that is not a JSON object."""
    numbered, problems = read_numbered(path)
    return [doc for _, doc in numbered], problems


def read_numbered(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """(line number, JSON object) of every good line, and one problem per bad line."""
    read = read_lines(path)
    return read.events, read.problems


def read_lines(path: Path) -> OutboxLines:
    """Every line of an outbox file, good or bad.

    A bad line (torn by a crash mid-write, not JSON, nested too deep, not an object) is skipped;
    its problem names the file and the line.
    """
    events: list[tuple[int, dict[str, Any]]] = []
    problems: list[str] = []
    skipped: list[int] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except (ValueError, RecursionError) as e:
                torn = "" if line.endswith("\n") else ", torn (no end of line)"
                why = e.msg if isinstance(e, json.JSONDecodeError) else _why(e)
                problems.append(f"{path}:{number}: skipped, not a JSON line{torn} ({why})")
                skipped.append(number)
                continue
            if not isinstance(doc, dict):
                problems.append(f"{path}:{number}: skipped, not a JSON object")
                skipped.append(number)
                continue
            events.append((number, doc))
    return OutboxLines(events, problems, tuple(skipped))


def _why(error: Exception) -> str:
    return "nested too deep" if isinstance(error, RecursionError) else str(error)
