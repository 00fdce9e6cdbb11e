"""Deterministic run ids: UUIDv7 whose time part is when the run started and whose random part
is derived from the dbt invocation id and the run's key, so sending the same run twice is
idempotent and joinable with dbt's artifacts. Pure.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime


def run_id(invocation_id: str, key: str, started_at: datetime) -> str:
    """A UUIDv7 for the run of `key` (a unique_id, or "" for the invocation) in one invocation.

    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 11, 30, 3, 49, 4, 189000, tzinfo=timezone.utc)
    >>> a = run_id("ba1197c0-8626-40ea-a398-58377a0be6d8", "model.p.m", t)
    >>> a == run_id("ba1197c0-8626-40ea-a398-58377a0be6d8", "model.p.m", t), a[14]
    (True, '7')
    """
    millis = int(started_at.timestamp() * 1000) & ((1 << 48) - 1)
    digest = int.from_bytes(hashlib.sha256(f"{invocation_id}\0{key}".encode()).digest()[:10], "big")
    rand_a = digest >> 68 & 0xFFF  # top 12 of the 80 bits
    rand_b = digest & ((1 << 62) - 1)
    value = millis << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=value))
