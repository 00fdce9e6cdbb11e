"""Outbox files claimed by the flush that sends them, crash-safely.

A flush renames each file it sends to `<name>.replaying-<host>-<pid>` before reading it (a
rename is atomic: two flushes never send the same file), and removes it once its events are
delivered or kept again. A flush killed in between (SIGKILL, a CronJob's timeout, an evicted
pod) leaves its claims; the next flush gives back every claim whose owner is gone (its process
no longer runs on this host, or a claim of another host older than STALE_AFTER) under the
file's own name, so nothing kept is stranded. Events of a claim given back may be sent twice;
OpenLineage consumers take a run's event again as the same event. Two flushes that give back the
same claim at once: the first one's rename wins, the other leaves it.

The lines of a claim that are no event (torn, nested too deep, edited by hand) are set aside in
`<stem>.rejected.jsonl` before the claim goes, as they were: flush never sends them, and nothing
is lost.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Final

from dbt_oml.delivery.outbox import REJECTED_SUFFIX, copy_lines
from dbt_oml.redaction import Redactor

logger = logging.getLogger(__name__)

CLAIM: Final = ".replaying"
#: A claim of another host (a shared, durable outbox) is given back after this many seconds.
STALE_AFTER: Final = 3600.0


def _owner() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def claim(files: Iterable[Path]) -> list[Path]:
    """Each file renamed to this process's claim; a file another flush took meanwhile is
    skipped."""
    claimed = []
    for path in files:
        mine = path.with_name(f"{path.name}{CLAIM}-{_owner()}")
        try:
            claimed.append(path.replace(mine))
        except FileNotFoundError:
            logger.info("%s: taken by another flush", path)
    return claimed


def _gone(owner: str, claimed: Path, *, now: float) -> bool:
    host, _, pid = owner.rpartition("-")
    if not pid.isdigit() or host != socket.gethostname():  # an older release's, or another host's
        return not pid.isdigit() or now - claimed.stat().st_mtime > STALE_AFTER
    if int(pid) == os.getpid():
        return True  # this process runs no other flush: an earlier one of it failed
    return process_gone(int(pid))


def process_gone(pid: int) -> bool:
    """Whether no process of this id runs on this host (one that is someone else's runs)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    return False


def recover(outbox: Path, *, now: float | None = None) -> list[Path]:
    """Give back the claims in `outbox` whose flush is gone; the files given back."""
    now = time.time() if now is None else now
    back = []
    for claimed in sorted(outbox.glob(f"*.jsonl{CLAIM}*")):
        try:
            target = _give_back(claimed, now=now)
        except FileNotFoundError:  # another flush gave it back (or finished it) first
            continue
        if target is not None:
            logger.warning(
                "%s: a flush that did not finish left it; given back as %s", claimed, target.name
            )
            back.append(target)
    return back


def _give_back(claimed: Path, *, now: float) -> Path | None:
    """A claim whose flush is gone, renamed back to its file's name; None for a live one."""
    name, _, owner = claimed.name.partition(CLAIM)
    if not claimed.is_file() or not _gone(owner.lstrip("-"), claimed, now=now):
        return None
    target = claimed.with_name(name)
    if target.exists():  # a new file of the same name meanwhile: keep both
        target = claimed.with_name(
            f"{Path(name).stem}.recovered-{owner.lstrip('-') or 'old'}.jsonl"
        )
    return claimed.replace(target)


def set_aside(claimed: Path, numbers: Collection[int], redactor: Redactor) -> Path | None:
    """The lines `numbers` of a claim (lines that are no event) appended to its file's
    `<stem>.rejected.jsonl` (a rejected file's own name), as they were; that file, or None."""
    if not numbers:
        return None
    name = claimed.name.partition(CLAIM)[0]
    rejected = name if name.endswith(REJECTED_SUFFIX) else f"{Path(name).stem}{REJECTED_SUFFIX}"
    dest = claimed.with_name(rejected)
    copy_lines(claimed, numbers, dest, redactor)
    return dest


def release(claimed: Path, *, all_delivered: bool) -> None:
    """A claim whose events are delivered or kept again: removed. When all were delivered and no
    file of its name holds kept events again, its reasons log (`<stem>.reasons.log`) goes too:
    it explained events that are no longer kept."""
    name = claimed.name.partition(CLAIM)[0]
    claimed.unlink()
    original = claimed.with_name(name)
    if all_delivered and not original.exists():
        original.with_name(f"{Path(name).stem}.reasons.log").unlink(missing_ok=True)
