"""The shared lineage cache in a JetStream key-value bucket (the NATS path's own server).

Each entry is its own key, `lineage.<sha256>`, zlib-compressed; the project's index,
`index.<project>`, lists the keys its last runs used, most recent first. A new pod reads the index
and fetches those entries concurrently; a run that changed anything puts its new entries, then
the index (compare-and-set on the index's revision: two pods that end together merge their
indexes instead of losing one), then deletes the entries no index of this project lists any more.
Entries are content-addressed, so any project's entry is right for any other that asks for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from dbt_oml.errors import SharedCacheError
from dbt_oml.transports.jetstream.config import JetStreamConfig
from dbt_oml.transports.jetstream.connection import (
    NatsUnavailableError,
    cause_of,
    close_quietly,
    connect,
    quiet_loop,
    server_label,
    transient_faults,
)

logger = logging.getLogger(__name__)
_T = TypeVar("_T")
#: Requests in flight at once while fetching or putting entries.
CONCURRENCY: Final = 256
#: What one call (index, fetch, save) may take in all before the run goes on without it.
BUDGET: Final = 60.0
_UNSAFE = re.compile(r"[^-_=a-zA-Z0-9]")


def index_key(scope: str) -> str:
    """The index's key for a project.

    >>> index_key("jaffle shop")
    'index.jaffle_shop'
    """
    return f"index.{_UNSAFE.sub('_', scope) or 'project'}"


class KeyValueStore:
    """A project's shared entries in the JetStream key-value bucket `bucket`."""

    def __init__(self, config: JetStreamConfig, *, bucket: str, scope: str) -> None:
        self.config = config
        self.bucket = bucket
        self.index_key = index_key(scope)
        self.where = f"{server_label(config.servers)} bucket {bucket}"
        self._revision: int | None = None  # of the index as read (None: no index yet)

    def _run(self, work: Callable[[Any], Awaitable[_T]]) -> _T:
        """`work(kv)` on a new connection, within BUDGET seconds; SharedCacheError otherwise."""

        async def session() -> _T:
            nc = await connect(self.config)
            try:
                return await work(await self._bucket(nc.jetstream()))
            finally:
                await close_quietly(nc, timeout=self.config.connect_timeout)

        faults: tuple[type[BaseException], ...] = (
            NatsUnavailableError,
            *transient_faults(),
            _nats_error(),
        )
        loop = quiet_loop(asyncio.new_event_loop())
        try:
            return loop.run_until_complete(asyncio.wait_for(session(), BUDGET))
        except SharedCacheError:
            raise
        except faults as e:
            reason = cause_of(e, timeout=self.config.publish_timeout)
            raise SharedCacheError(where=self.where, reason=reason) from None
        finally:
            loop.close()

    async def _bucket(self, js: Any) -> Any:
        from nats.js.errors import BucketNotFoundError

        try:
            return await js.key_value(self.bucket)
        except BucketNotFoundError:
            logger.info("lineage cache: creating the key-value bucket %s", self.bucket)
            return await js.create_key_value(
                bucket=self.bucket,
                history=1,
                description="dbt-oml's column lineage of analysed models, by content",
                replicas=self.config.num_replicas,
            )

    def keys(self) -> Sequence[str]:
        async def read(kv: Any) -> list[str]:
            keys, self._revision = await _index(kv, self.index_key)
            return keys

        return self._run(read)

    def fetch(self, keys: Iterable[str]) -> dict[str, str]:
        wanted = list(keys)

        async def read(kv: Any) -> dict[str, str]:
            out: dict[str, str] = {}
            for start in range(0, len(wanted), CONCURRENCY):
                chunk = wanted[start : start + CONCURRENCY]
                got = await asyncio.gather(*(_entry(kv, k) for k in chunk))
                out.update((k, t) for k, t in zip(chunk, got, strict=True) if t is not None)
            return out

        return self._run(read)

    def save(self, new: Mapping[str, str], index: Sequence[str], drop: Iterable[str]) -> None:
        gone = list(drop)

        async def write(kv: Any) -> None:
            items = list(new.items())
            stored: set[str] = set()
            for start in range(0, len(items), CONCURRENCY):
                chunk = items[start : start + CONCURRENCY]
                done = await asyncio.gather(*(_put(kv, k, v) for k, v in chunk))
                stored.update(k for (k, _), ok in zip(chunk, done, strict=True) if ok)
            listed = [k for k in index if k in stored or k not in new]
            final = await self._put_index(kv, listed)
            keep = set(final)
            await asyncio.gather(*(_delete(kv, k) for k in gone if k not in keep))

        self._run(write)

    async def _put_index(self, kv: Any, keys: list[str]) -> list[str]:
        """Put the index over the revision read; when another run put one meanwhile, merge its
        keys after ours (a few tries). Returns the index as stored."""
        from nats.js.errors import KeyWrongLastSequenceError

        for _ in range(5):
            body = zlib.compress(json.dumps(keys).encode(), 1)
            try:
                if self._revision is None:
                    self._revision = await kv.create(self.index_key, body)
                else:
                    self._revision = await kv.update(self.index_key, body, last=self._revision)
            except KeyWrongLastSequenceError:
                theirs, self._revision = await _index(kv, self.index_key)
                keys = keys + [k for k in theirs if k not in set(keys)]
            else:
                return keys
        raise SharedCacheError(
            where=self.where, reason=f"{self.index_key} kept changing under this run"
        )


def _nats_error() -> type[BaseException]:
    from nats.errors import Error

    return Error


async def _index(kv: Any, key: str) -> tuple[list[str], int | None]:
    """The keys an index lists and its revision; ([], None) when there is none."""
    from nats.js.errors import KeyNotFoundError

    try:
        entry = await kv.get(key)
    except KeyNotFoundError as e:
        # a deleted index has a revision to update over (create would be refused)
        revision = getattr(getattr(e, "entry", None), "revision", None)
        return [], revision
    try:
        keys = json.loads(zlib.decompress(entry.value))
    except (zlib.error, ValueError, TypeError):
        logger.warning("lineage cache: the index %s is damaged; it is written anew", key)
        return [], entry.revision
    if not isinstance(keys, list):
        return [], entry.revision
    return [k for k in keys if isinstance(k, str)], entry.revision


async def _entry(kv: Any, key: str) -> str | None:
    from nats.js.errors import KeyNotFoundError

    try:
        entry = await kv.get(f"lineage.{key}")
        return zlib.decompress(entry.value).decode("utf-8")
    except KeyNotFoundError:
        return None
    except (zlib.error, UnicodeDecodeError, TypeError):
        return None  # damaged: analysed again, and put again


async def _put(kv: Any, key: str, text: str) -> bool:
    """Whether the entry was stored (one too large for the server is left out, not fatal)."""
    from nats.errors import MaxPayloadError

    try:
        await kv.put(f"lineage.{key}", zlib.compress(text.encode("utf-8"), 1))
    except MaxPayloadError:
        logger.debug("lineage cache: the entry %s is larger than the server takes", key)
        return False
    return True


async def _delete(kv: Any, key: str) -> None:
    from nats.js.errors import KeyNotFoundError

    with contextlib.suppress(KeyNotFoundError):
        await kv.delete(f"lineage.{key}")
