"""The lineage engine's version: part of every cache key, so imports nothing (no sqlglot).

A warm run (every model a cache hit) needs this constant and nothing of the engine itself.
"""

from __future__ import annotations

from typing import Final

#: Bumped whenever answers may change, so cached results are not reused across versions.
ENGINE_VERSION: Final = "9"
