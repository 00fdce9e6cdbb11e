"""A content-addressed cache of analysed models on disk, so unchanged models are never re-analysed.

The key (lineage_batch._key) covers the engine version, the compiled SQL and the columns of every
upstream relation, so a hit is always the answer a fresh analysis would give. Corrupt or
unreadable entries are treated as misses.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from dbt_oml.lineage import ModelLineage
from dbt_oml.lineage_batch import lineage_from_json, lineage_to_json

logger = logging.getLogger(__name__)


class DiskCache:
    """One JSON file per analysed model under `root` (e.g. <target>/dbt_oml/lineage-cache)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ModelLineage | None:
        try:
            return lineage_from_json(self._path(key).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            logger.debug("lineage cache entry %s is unreadable; re-analysing", key)
            return None

    def put(self, key: str, value: ModelLineage) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(lineage_to_json(value))
            os.replace(tmp, path)
        except OSError as e:  # a read-only target must not cost the run its lineage
            logger.debug("cannot write lineage cache %s: %s", path, e)
