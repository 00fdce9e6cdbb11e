"""A durable outbox on an object store (fsspec: s3://, gs://, ...): what a pod keeps outlives
its disk.

Events are kept in the local outbox first, exactly as without a URL. After a run each local file
goes up whole under a new write-once name, `<stem>.<UTC time>-<random>.jsonl` (object stores have
no append), and leaves the disk once the store holds it. `dbt-oml flush`, on any machine, claims
each object with a marker (leases.py), copies it into its own local outbox and sends it as a local
file; once what was not delivered is up again under new names, the object and its marker go.

At least once, never lost: only what was delivered leaves the store. A flush killed at any point
leaves the object where it was (its claim lapses after a lease), so an event may be sent twice,
which OpenMetadata takes as the same event again; an event that is gone was delivered. A store
that cannot be reached or refuses (no such bucket, no credentials) costs one line, and the events
stay on this machine for the next run or flush to upload.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import posixpath
import re
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from dbt_oml.config.outbox_url import EXTRAS
from dbt_oml.delivery.claims import CLAIM, claim
from dbt_oml.delivery.leases import LEASE, MARKER, Claim
from dbt_oml.delivery.outbox import REJECTED_SUFFIX, write_whole
from dbt_oml.errors import ConfigError
from dbt_oml.redaction import mask

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
#: A write-once name: `<base>.<YYYYmmddTHHMMSSZ>-<8 hex>` (then `.retry`s a replay added).
_WRITE_ONCE: Final = re.compile(
    r"^(?P<base>.+?)\.(?P<unique>\d{8}T\d{6}Z-[0-9a-f]{8})(?P<retry>(?:\.retry)*)"
    r"(?P<suffix>\.rejected\.jsonl|\.jsonl)$"
)
#: A dead store must cost a run seconds, not minutes of the client's own retries.
_OPTIONS: Final[dict[str, dict[str, Any]]] = {
    scheme: {
        "config_kwargs": {
            "retries": {"max_attempts": 3, "mode": "standard"},
            "connect_timeout": 5,
            "read_timeout": 30,
        }
    }
    for scheme in ("s3", "s3a")
}
#: The roots of what each store's client raises besides OSError: (module, class names).
_CLIENT_ERRORS: Final = {
    "s3": (
        ("botocore.exceptions", ("BotoCoreError", "ClientError")),
        ("aiohttp", ("ClientError",)),
    ),
    "gs": (
        ("google.auth.exceptions", ("GoogleAuthError",)),
        ("gcsfs.retry", ("HttpError",)),
        ("aiohttp", ("ClientError",)),
    ),
}


def remote_name(local: str, unique: str) -> str:
    """The write-once name a local outbox file goes up under.

    A file that already has one (copied from the store) keeps it; any other gets `unique`,
    after its stem without the `.retry` a replay adds.

    >>> remote_name("openmetadata.jsonl", "20261202T101500Z-0a1b2c3d")
    'openmetadata.20261202T101500Z-0a1b2c3d.jsonl'
    >>> remote_name("inv.20261202T101500Z-0a1b2c3d.retry.jsonl", "20261202T111500Z-ffffffff")
    'inv.20261202T111500Z-ffffffff.jsonl'
    >>> remote_name("inv.20261202T101500Z-0a1b2c3d.rejected.jsonl", "20261202T111500Z-ffffffff")
    'inv.20261202T101500Z-0a1b2c3d.rejected.jsonl'
    """
    found = _WRITE_ONCE.match(local)
    if found is not None:
        if not found["retry"]:
            return local
        base, suffix = found["base"], found["suffix"]
    else:
        suffix = REJECTED_SUFFIX if local.endswith(REJECTED_SUFFIX) else ".jsonl"
        base = local.removesuffix(suffix)
        while base.endswith(".retry"):
            base = base.removesuffix(".retry")
    return f"{base}.{unique}{suffix}"


def store_errors(scheme: str) -> tuple[type[BaseException], ...]:
    """What a store's client raises when the store cannot be reached or refuses: OSError (fsspec
    maps missing objects, permissions and timeouts to it) and the client's own error roots."""
    found: list[type[BaseException]] = [OSError, asyncio.TimeoutError]
    family = {"s3a": "s3", "gcs": "gs"}.get(scheme, scheme)
    for module, names in _CLIENT_ERRORS.get(family, ()):
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            continue
        for name in names:
            error = getattr(loaded, name, None)
            if isinstance(error, type) and issubclass(error, BaseException):
                found.append(error)
    return tuple(found)


def _kept_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.jsonl") if p.is_file()) if folder.is_dir() else []


@dataclass(slots=True)
class Synced:
    """What a push, pull or settle did: notes for the run's summary, problems (one line each)."""

    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class RemoteOutbox:
    """The objects under one store prefix, and this process's claims on them."""

    def __init__(
        self, url: str, *, fs: Any, root: str, clock: Clock = time.time, lease: float = LEASE
    ) -> None:
        self.url = url
        self._fs = fs
        self._root = root.rstrip("/")
        self._clock = clock
        self._lease = lease
        self._errors = store_errors(url.partition("://")[0].lower())

    @classmethod
    def open(cls, url: str, *, clock: Clock = time.time, lease: float = LEASE) -> RemoteOutbox:
        """The durable outbox at `url`, a URL the configuration checked (config/outbox_url.py).

        Raises:
            ConfigError: the package its protocol needs cannot be imported.
        """
        from fsspec.core import url_to_fs

        scheme = url.partition("://")[0].lower()
        try:
            fs, root = url_to_fs(url, skip_instance_cache=True, **_OPTIONS.get(scheme, {}))
        except ImportError as e:
            extra = EXTRAS.get(scheme, ("", ""))[1]
            raise ConfigError(
                key="outbox_dir",
                source=mask(url),
                reason=f"{scheme}:// cannot be used ({e})",
                hint=f"pip install 'dbt-oml[{extra}]'" if extra else "install what it names",
            ) from e
        return cls(url, fs=fs, root=root, clock=clock, lease=lease)

    @property
    def display(self) -> str:
        return mask(self.url)

    # -- after a run: up -------------------------------------------------------------------

    def push(self, local_dir: Path) -> Synced:
        """Every outbox file of `local_dir` up to the store under a write-once name, and off the
        disk once the store holds it; at the first failure the rest stays (one problem)."""
        done, counts = Synced(), {"send": 0, "rejected": 0}
        for path in _kept_files(local_dir):
            taken = claim([path])  # no writer appends to a file on its way up
            if not taken:
                continue
            name = remote_name(path.name, self._unique())
            try:
                data = taken[0].read_bytes()
                if data.strip():
                    self._fs.pipe_file(self._key(name), data)
            except self._errors as e:
                self._give_back(taken[0], path)
                left = len(_kept_files(local_dir))
                done.problems.append(
                    self._problem(
                        "cannot be written",
                        e,
                        f"{left} outbox file(s) stay in {local_dir}, on this machine's disk only",
                        "then run `dbt-oml flush` here (it uploads them)",
                    )
                )
                break
            taken[0].unlink()
            counts["rejected" if name.endswith(REJECTED_SUFFIX) else "send"] += data.count(b"\n")
        if counts["send"] or counts["rejected"]:
            note = (
                f"{counts['send']} kept event(s) are in {self.display}: `dbt-oml flush "
                f"--outbox-dir {self.display}` sends them from any machine"
            )
            if counts["rejected"]:
                note += f"; {counts['rejected']} refused for good in *{REJECTED_SUFFIX} there"
            done.notes.append(note)
        return done

    def _give_back(self, taken: Path, path: Path) -> None:
        """A local claim whose upload failed, back under its name (a new file of that name came
        meanwhile: under a new one), for the next run or flush."""
        target = (
            path if not path.exists() else path.with_name(remote_name(path.name, self._unique()))
        )
        taken.replace(target)

    # -- a flush: down, then settled -------------------------------------------------------

    def pull(self, local_dir: Path) -> Synced:
        """Claim every object waiting in the store and copy it into `local_dir`, to be sent as a
        local outbox file; an object a live flush claimed is left to it. Never *.rejected.jsonl."""
        done, pulled = Synced(), 0
        try:
            names = self._names()
            waiting = [n for n in names if n.endswith(".jsonl") and not n.endswith(REJECTED_SUFFIX)]
            for name in (n for n in waiting if not _WRITE_ONCE.match(n)):
                logger.warning(
                    "%s: not a name dbt-oml writes (<stem>.<YYYYmmddTHHMMSSZ>-<8 hex>.jsonl): "
                    "left alone, as a flush could not tell when to remove it; rename it to one",
                    self._where(name),
                )
            for name in sorted(n for n in waiting if _WRITE_ONCE.match(n)):
                if self._take(name, marked=f"{name}{MARKER}" in names) and self._fetch(
                    name, local_dir
                ):
                    pulled += 1
            self._sweep(
                n for n in names if n.endswith(MARKER) and n.removesuffix(MARKER) not in names
            )
        except self._errors as e:
            done.problems.append(
                self._problem(
                    "cannot be read",
                    e,
                    "only the events kept on this machine are sent now",
                    "then flush again",
                )
            )
        if pulled:
            done.notes.append(f"{pulled} outbox file(s) taken from {self.display}")
        return done

    def settle(self, local_dir: Path, claimed: Iterable[Path]) -> Synced:
        """After a flush sent its claims of `local_dir`: what is kept again goes up (push), then
        the objects those claims were copied from go, and their markers. When the push fails they
        stay, to be sent again by a later flush (a duplicate, never a loss)."""
        here = local_dir.resolve()
        names = [
            name
            for path in claimed
            if path.parent.resolve() == here
            and _WRITE_ONCE.match(name := path.name.partition(CLAIM)[0])
        ]
        done = self.push(local_dir)
        if done.problems:
            with contextlib.suppress(*self._errors):
                for name in names:  # the next flush need not wait for the lease
                    self._drop_claim(name)
            return done
        try:
            for name in names:
                with contextlib.suppress(FileNotFoundError):
                    self._fs.rm_file(self._key(name))
                self._drop_claim(name)
        except self._errors as e:
            done.problems.append(
                self._problem(
                    "cannot be cleaned up",
                    e,
                    "what was delivered from it will be sent again (a duplicate, harmless)",
                    "then flush again",
                )
            )
        return done

    def _take(self, name: str, *, marked: bool) -> bool:
        """Claim the object `name`: unless a live flush holds it, write this process's marker
        and read it back (of two flushes writing at once, the one whose marker stays goes on)."""
        now = self._clock()
        held = self._claim_of(name) if marked else None
        if held is not None and not held.mine:
            if not held.lapsed(now, self._lease):
                logger.info(
                    "%s: being sent by another flush (%s)", self._where(name), held.describe()
                )
                return False
            logger.warning(
                "%s: a flush that did not finish left it (%s); taken over",
                self._where(name),
                held.describe(),
            )
        mine = Claim.new(now)
        self._fs.pipe_file(self._key(f"{name}{MARKER}"), mine.dump())
        back = self._claim_of(name)
        if back is None or back.nonce != mine.nonce:
            logger.info("%s: claimed by another flush at the same moment", self._where(name))
            return False
        return True

    def _fetch(self, name: str, local_dir: Path) -> bool:
        try:
            data = self._fs.cat_file(self._key(name))
        except FileNotFoundError:  # sent and removed by another flush meanwhile
            self._drop_claim(name)
            return False
        write_whole(local_dir / name, data)
        return True

    def _claim_of(self, name: str) -> Claim | None:
        """The claim on the object `name`; None without a marker (or with one that holds none)."""
        try:
            return Claim.parse(self._fs.cat_file(self._key(f"{name}{MARKER}")))
        except FileNotFoundError:
            return None

    def _drop_claim(self, name: str) -> None:
        held = self._claim_of(name)
        if held is not None and held.mine:
            with contextlib.suppress(FileNotFoundError):
                self._fs.rm_file(self._key(f"{name}{MARKER}"))

    def _sweep(self, markers: Iterable[str]) -> None:
        """Markers whose object is gone: removed, unless a live flush still holds them."""
        now = self._clock()
        for marker in markers:
            held = self._claim_of(marker.removesuffix(MARKER))
            if held is None or held.mine or held.lapsed(now, self._lease):
                with contextlib.suppress(FileNotFoundError):
                    self._fs.rm_file(self._key(marker))

    # -- names and messages ----------------------------------------------------------------

    def _names(self) -> set[str]:
        """The names of the objects right under the prefix (a missing bucket raises)."""
        self._fs.invalidate_cache(self._root)
        found = self._fs.find(self._root, maxdepth=1, withdirs=False)
        return {posixpath.basename(str(p)) for p in found}

    def _key(self, name: str) -> str:
        return f"{self._root}/{name}"

    def _where(self, name: str) -> str:
        return f"{self.display}/{name}"

    def _unique(self) -> str:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._clock()))
        return f"{stamp}-{secrets.token_hex(4)}"

    def _problem(self, doing: str, error: BaseException, kept: str, then: str) -> str:
        """One line: what failed, where, why, where the events are, and what to do."""
        why = " ".join(f"{type(error).__name__}: {error}".split())[:300]
        return mask(
            f"durable outbox {self.url} {doing} ({why}): {kept}; check the bucket, its endpoint "
            f"and credentials, {then}"
        )
