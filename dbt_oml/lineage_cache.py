"""A content-addressed cache of analysed models on disk, so unchanged models are never re-analysed.

The key (lineage_batch._key) covers the engine version, the compiled SQL and the columns of every
upstream relation, so a hit is always the answer a fresh analysis would give. Corrupt or
unreadable entries are treated as misses.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

from dbt_oml.lineage import ModelLineage
from dbt_oml.lineage_batch import lineage_from_json, lineage_to_json

logger = logging.getLogger(__name__)


class DiskCache:
    """One JSON file per analysed model under `root` (e.g. <target>/dbt_oml/lineage-cache).

    Remembers the keys this run used (hits and new entries), so `prune` can drop the others.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.used: set[str] = set()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ModelLineage | None:
        try:
            found = lineage_from_json(self._path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            logger.debug("lineage cache entry %s is unreadable; re-analysing", key)
            return None
        if key not in self.used:
            self.used.add(key)
            with contextlib.suppress(OSError):  # last use, for `prune`'s least recently used
                os.utime(self._path(key))
        return found

    def prune(self, *, keep_at_most: int) -> int:
        """Remove entries this run did not use, least recently used first, until at most
        `keep_at_most` entries remain (entries this run used always stay). Returns how many went.

        After a run over every model of the manifest, `keep_at_most=0` drops every stale entry;
        after a partial run (`--select`), a bound keeps the other models' entries but stops each
        edit from leaving its old entry behind forever.
        """
        try:
            entries = [
                p for folder in self.root.iterdir() if folder.is_dir() for p in folder.iterdir()
            ]
        except OSError:
            return 0
        stale = []
        for path in entries:
            if path.stem in self.used:
                continue
            try:
                stale.append((path.stat().st_mtime, path))
            except OSError:
                continue
        excess = len(self.used) + len(stale) - max(keep_at_most, len(self.used))
        removed = 0
        for _, path in sorted(stale)[: max(excess, 0)]:
            try:
                path.unlink()
                removed += 1
            except OSError as e:
                logger.debug("cannot remove stale lineage cache entry %s: %s", path, e)
        return removed

    def put(self, key: str, value: ModelLineage) -> None:
        self.used.add(key)
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(lineage_to_json(value))
            os.replace(tmp, path)
        except OSError as e:  # a read-only target must not cost the run its lineage
            logger.debug("cannot write lineage cache %s: %s", path, e)
