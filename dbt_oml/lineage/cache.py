"""A content-addressed cache of analysed models on disk, so unchanged models are never re-analysed.

The key (lineage.batch._key) covers the engine version, the compiled SQL and the columns of every
upstream relation, so a hit is always the answer a fresh analysis would give. Corrupt or
unreadable entries are treated as misses.

Entries live in pack files (`*.pack`, one `key<TAB>json` line per model), each written whole and
renamed into place: a cold run of 2,000 models writes one file, not 2,000 (creating them took
0.5-2.7 s on this project's disks). Entries of older versions (one file per model, `xx/key.json`)
are still read, and pruned like the rest.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

from dbt_oml.lineage.codec import lineage_from_json, lineage_to_json
from dbt_oml.lineage.types import ModelLineage

logger = logging.getLogger(__name__)

#: More pack files than this and `prune` merges them into one even when nothing is stale.
MAX_PACKS = 16


class DiskCache:
    """Analysed models under `root` (e.g. <target>/dbt_oml/lineage-cache).

    New entries are kept in memory until `flush` (which `prune` calls first). Remembers the keys
    this run used (hits and new entries), so `prune` can drop the others.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.used: set[str] = set()
        self._packed: dict[str, tuple[str, float]] | None = None  # key -> (json, pack mtime)
        self._new: dict[str, str] = {}

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

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

    def get(self, key: str) -> ModelLineage | None:
        packed = self._index().get(key)
        text = self._new.get(key) or (packed[0] if packed is not None else None)
        try:
            if text is not None:
                found = lineage_from_json(text)
            else:
                found = lineage_from_json(self._path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            logger.debug("lineage cache entry %s is unreadable; re-analysing", key)
            return None
        self.used.add(key)
        return found

    def put(self, key: str, value: ModelLineage) -> None:
        self.used.add(key)
        self._new[key] = lineage_to_json(value)

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
