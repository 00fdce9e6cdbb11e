"""A content-addressed cache of analysed models on disk, so unchanged models are never re-analysed.

The key (lineage.batch._key) covers the engine version, the compiled SQL and the columns of every
upstream relation, so a hit is always the answer a fresh analysis would give. Corrupt or
unreadable entries are treated as misses.

Entries live in pack files (`*.pack`, one `key<TAB>json` line per model), each written whole and
renamed into place: a cold run of 2,000 models writes one file, not 2,000 (creating them took
0.5-2.7 s on this project's disks). Entries of older versions (one file per model, `xx/key.json`)
are still read, and pruned like the rest.

A shared tier (`SharedStore`: a folder or object store, or a JetStream key-value bucket; see
dbt_oml.stores) makes a new pod warm: on the first miss on this disk the entries the project's
last run used are fetched from it, and at the end of a run what this run used goes back to it.
A shared store that fails costs one warning: the run analyses what its own disk lacks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from dbt_oml.errors import SharedCacheError
from dbt_oml.lineage.codec import outcome_from_json, outcome_to_json
from dbt_oml.lineage.types import Lasting, ModelLineage

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

#: More pack files than this and `prune` merges them into one even when nothing is stale.
MAX_PACKS = 16


class SharedStore(Protocol):
    """Entries shared between pods, for one project (its scope). Every method raises
    SharedCacheError when the store cannot be read or written."""

    where: str
    """The store, for messages (no credentials)."""

    def keys(self) -> Sequence[str]:
        """The keys of the scope's entries, most recently used first."""

    def fetch(self, keys: Iterable[str]) -> dict[str, str]:
        """The entries of `keys` the store holds (key -> JSON text)."""

    def save(self, new: Mapping[str, str], index: Sequence[str], drop: Iterable[str]) -> None:
        """Store `new` entries and `index` as the scope's keys; `drop` keys are no longer listed
        (the store may delete their entries)."""


class DiskCache:
    """Analysed models under `root` (e.g. <target>/dbt_oml/lineage-cache), over an optional
    `shared` store.

    New entries are kept in memory until `flush` (which `prune` calls first). Remembers the keys
    this run used (hits and new entries), so `prune` can drop the others.
    """

    def __init__(self, root: Path, shared: SharedStore | None = None) -> None:
        self.root = root
        self.shared = shared
        self.used: set[str] = set()
        self.from_shared = 0
        """Entries this run took from the shared store."""
        self._packed: dict[str, tuple[str, float]] | None = None  # key -> (json, pack mtime)
        self._new: dict[str, str] = {}
        self._remote: dict[str, str] | None = None  # the shared store's entries, once fetched
        self._remote_keys: Sequence[str] | None = None
        self._analysed: set[str] = set()  # put this run: analysed here
        self._folders: bool | None = None  # whether the one-file-per-model layout is here

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def empty(self) -> bool:
        """Whether this folder holds no entry at all (a new pod's)."""
        try:
            return not any(self.root.iterdir())
        except OSError:
            return True

    def _packs(self) -> list[Path]:
        try:
            return sorted(self.root.glob("*.pack"))
        except OSError:
            return []

    def _index(self) -> dict[str, tuple[str, float]]:
        if self._packed is None:
            self._packed = {}
            for pack in self._packs():  # oldest name first; any copy of a key is the same
                try:
                    mtime = pack.stat().st_mtime
                    lines = pack.read_text(encoding="utf-8").splitlines()
                except (OSError, UnicodeDecodeError):
                    continue  # pruned by another run meanwhile, or unreadable: misses
                for line in lines:
                    key, _, text = line.partition("\t")
                    if text:
                        self._packed[key] = (text, mtime)
        return self._packed

    def get(self, key: str) -> ModelLineage | Lasting | None:
        packed = self._index().get(key)
        text = self._new.get(key) or (packed[0] if packed is not None else None)
        shared = False
        if text is None:
            text = self._file_entry(key)
        if text is None:
            text, shared = self._shared_entries().get(key), True
            if text is None:
                return None
        try:
            found = outcome_from_json(text)
        except (ValueError, KeyError, TypeError, IndexError):
            logger.debug("lineage cache entry %s is unreadable; re-analysing", key)
            return None
        if shared:
            self._new[key] = text  # kept on this disk too: the next run here is warm
            self.from_shared += 1
        self.used.add(key)
        return found

    def _file_entry(self, key: str) -> str | None:
        """`key`'s entry in the one-file-per-model layout: None when there is none ("" when it
        cannot be read: a miss, said as a damaged entry). A folder without that layout's
        folders (every cold pod's) is not asked 2,000 times."""
        if self._folders is None:
            try:
                self._folders = any(p.is_dir() for p in self.root.iterdir())
            except OSError:
                self._folders = False
        if not self._folders:
            return None
        try:
            return self._path(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError:
            return ""

    def _shared_keys(self) -> Sequence[str]:
        if self._remote_keys is None:
            empty: Sequence[str] = ()
            self._remote_keys = self._shared_call(lambda store: store.keys(), empty)
        return self._remote_keys

    def _shared_entries(self) -> dict[str, str]:
        """The shared store's entries of this project, fetched on the first miss here."""
        if self._remote is None:
            keys = self._shared_keys()
            none: dict[str, str] = {}
            self._remote = self._shared_call(lambda store: store.fetch(keys), none) if keys else {}
        return self._remote

    def _shared_call(self, call: Callable[[SharedStore], _T], failed: _T) -> _T:
        """`call` on the shared store; a failure warns once and drops the store for the run."""
        if self.shared is None:
            return failed
        try:
            return call(self.shared)
        except SharedCacheError as e:
            logger.warning("%s; models are analysed here and nothing is shared this run", e)
            self.shared = None
            return failed

    def share(self, *, keep_at_most: int) -> None:
        """Give the shared store what this run used, first in its index, then the entries it
        listed before up to `keep_at_most`; entries it lacks or gave damaged (analysed here) go
        with it. Nothing is written when neither the index nor an entry would change.
        """
        store = self.shared
        if store is None or not self.used:
            return
        before = self._shared_keys()
        if self.shared is not store:
            return  # the store failed just now
        used = sorted(self.used)
        rest = [k for k in before if k not in self.used]
        index = used + rest[: max(keep_at_most - len(used), 0)]
        listed, local = set(before), self._index()
        new = {}
        for key in used:
            text = self._new.get(key) or (local[key][0] if key in local else None)
            if (key not in listed or key in self._analysed) and text is not None:
                new[key] = text
        if not new and set(index) == listed:
            return
        kept = set(index)
        self._shared_call(
            lambda store: store.save(new, index, [k for k in before if k not in kept]), None
        )

    def put(self, key: str, value: ModelLineage | Lasting) -> None:
        self.put_entry(key, outcome_to_json(value))

    def put_entry(self, key: str, text: str) -> None:
        """`put` of an entry already encoded (codec.outcome_to_json), as a worker made it."""
        self.used.add(key)
        self._analysed.add(key)
        self._new[key] = text

    def flush(self) -> None:
        """Write the entries added since the last flush, as one new pack file."""
        if not self._new:
            return
        self._write_pack(self._new)
        for key, text in self._new.items():
            self._index()[key] = (text, float("inf"))
        self._new = {}

    def _write_pack(self, entries: dict[str, str]) -> Path | None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.writelines(f"{key}\t{text}\n" for key, text in entries.items())
            pack = Path(tmp.removesuffix(".tmp") + ".pack")
            os.replace(tmp, pack)
        except OSError as e:  # a read-only target must not cost the run its lineage
            logger.debug("cannot write lineage cache in %s: %s", self.root, e)
            return None
        return pack

    def _loose(self) -> dict[str, tuple[Path, float]]:
        """Entries of the one-file-per-model layout (older dbt-oml)."""
        out = {}
        with contextlib.suppress(OSError):
            for folder in self.root.iterdir():
                if folder.is_dir():
                    for path in folder.glob("*.json"):
                        with contextlib.suppress(OSError):
                            out[path.stem] = (path, path.stat().st_mtime)
        return out

    def prune(self, *, keep_at_most: int) -> int:
        """Remove entries this run did not use, least recently written first, until at most
        `keep_at_most` entries remain (entries this run used always stay). Returns how many went.

        After a run over every model of the manifest, `keep_at_most=0` drops every stale entry;
        after a partial run (`--select`), a bound keeps the other models' entries but stops each
        edit from leaving its old entry behind forever. What stays is rewritten as one pack.
        """
        self.flush()
        packed, loose = self._index(), self._loose()
        everything = {k: v[1] for k, v in loose.items()} | {k: v[1] for k, v in packed.items()}
        others = sorted((k for k in everything if k not in self.used), key=everything.__getitem__)
        room = max(keep_at_most - len(self.used), 0)
        stale = others[: max(len(others) - room, 0)]
        packs = self._packs()
        if not stale and len(packs) <= MAX_PACKS:
            return 0
        drop = set(stale)
        kept = {}
        for key in everything:
            if key in drop:
                continue
            if key in packed:
                kept[key] = packed[key][0]
            else:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    kept[key] = loose[key][0].read_text(encoding="utf-8")
        if self._write_pack(kept) is None:
            return 0
        for path in [*packs, *(p for p, _ in loose.values())]:
            with contextlib.suppress(OSError):
                path.unlink()
        for folder in {p.parent for p, _ in loose.values()}:
            with contextlib.suppress(OSError):
                folder.rmdir()  # the old layout's folders, once empty
        self._packed = None
        return len(drop)
