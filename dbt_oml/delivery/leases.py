"""Claims on the objects of a durable outbox: who sends an object, since when, and when that
claim has lapsed.

Object stores have no atomic rename, so a flush claims an object by writing a marker beside it,
`<name>.claim`, holding its host, process id, the time (its own clock) and a nonce, then reading
the marker back: only the flush whose nonce it reads goes on. A claim lapses when its flush is
gone: LEASE seconds after it was made, or at once when its process no longer runs on this very
host. Nothing here talks to a store; `remote` reads and writes the markers.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from dbt_oml.delivery.claims import STALE_AFTER, process_gone

#: A claim marker's name: the claimed object's name and this.
MARKER: Final = ".claim"
#: Seconds after which another flush may take over a claim whose owner it cannot see (another
#: pod): the same hour as a local claim of another host (claims.STALE_AFTER).
LEASE: Final = STALE_AFTER


@dataclass(frozen=True, slots=True)
class Claim:
    """One flush's claim on an object: where it runs, since when, and its nonce."""

    host: str
    pid: int
    at: float
    nonce: str

    @classmethod
    def new(cls, at: float) -> Claim:
        """This process's claim, made at `at`."""
        return cls(socket.gethostname(), os.getpid(), at, secrets.token_hex(8))

    @classmethod
    def parse(cls, data: bytes) -> Claim | None:
        """A marker's claim; None when the marker holds no claim (written by hand, damaged)."""
        try:
            doc: Any = json.loads(data)
        except (ValueError, RecursionError):
            return None
        if not isinstance(doc, Mapping):
            return None
        host, pid, at, nonce = (doc.get(k) for k in ("host", "pid", "at", "nonce"))
        if not (
            isinstance(host, str)
            and isinstance(pid, int)
            and isinstance(at, int | float)
            and isinstance(nonce, str)
        ):
            return None
        return cls(host, pid, float(at), nonce)

    def dump(self) -> bytes:
        return json.dumps(
            {"host": self.host, "pid": self.pid, "at": self.at, "nonce": self.nonce}
        ).encode()

    @property
    def mine(self) -> bool:
        """Made by this process (or by an earlier one of this host with its pid, now gone)."""
        return self.host == socket.gethostname() and self.pid == os.getpid()

    def lapsed(self, now: float, lease: float = LEASE) -> bool:
        """Whether its flush is gone: `lease` seconds are over, or it ran here and runs no more."""
        if now - self.at > lease:
            return True
        if self.host != socket.gethostname() or self.pid <= 0:
            return self.pid <= 0
        return process_gone(self.pid)

    def describe(self) -> str:
        try:
            since = datetime.fromtimestamp(self.at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):  # a time no clock gives
            since = repr(self.at)
        return f"host {self.host}, pid {self.pid}, since {since}"
