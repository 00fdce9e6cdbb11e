"""A mapping that keeps only its most recently used entries. Pure.

The event builder remembers per node what several events of a run share (a dataset's facets,
its columns, the files a SQL text reads). Kept for every node, they were the main process'
growth through a 2,000-model `dbt-oml emit` (11 MiB). A run's events name a node close
together (its START, its end, its children's inputs), so a few hundred recent nodes hold almost
every repeat: a node forgotten and named again is built again, equal to what it was.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Recent(Generic[K, V]):
    """At most `size` entries; setting one beyond that forgets the least recently used.

    >>> r = Recent[str, int](2)
    >>> r["a"] = 1; r["b"] = 2; r.get("a"); r["c"] = 3
    1
    >>> r.get("b"), r.get("a"), r.get("c")
    (None, 1, 3)
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The entry (now the most recently used), or None."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def __setitem__(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
