"""Column lineage as it comes: a run's events are built while its models are still analysed.

`LineageFeed` runs the run's column lineage (`column_lineage_for`) in a thread of this process;
the analyses themselves run in the lineage worker processes (or in that thread, for a small
project). The event builder's `get(unique_id)` waits only for that one model, so the events of
the models analysed first are built and sent while the workers analyse the rest, where the
events used to wait for the last analysis. What the feed answers is what the finished lineage
holds: a model gets its lineage, or none when it is opaque or not analysed at all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from typing import TypeVar

from dbt_oml.lineage.batch import Settled
from dbt_oml.lineage.model import ModelLineage

T = TypeVar("T")


class LineageFeed:
    """The models' lineage, each model's as soon as it is settled (see the module). When the
    work fails, the next `get`, `decided` or `result` raises what it raised."""

    def __init__(self, expected: Collection[str]) -> None:
        self._expected = frozenset(expected)
        self._models: dict[str, ModelLineage] = {}
        self._settled: set[str] = set()
        self._ended = False
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._outcome: dict[str, ModelLineage] = {}
        self._error: BaseException | None = None

    @classmethod
    def start(
        cls, expected: Collection[str], work: Callable[[Settled], dict[str, ModelLineage]]
    ) -> LineageFeed:
        """`work(settled)` in a thread: it makes the lineage of (at most) the `expected`
        models, telling `settled` each model's outcome as it is known."""
        feed = cls(expected)
        feed._thread = threading.Thread(
            target=feed._run, args=(work,), name="dbt-oml-lineage", daemon=True
        )
        feed._thread.start()
        return feed

    @classmethod
    def made(
        cls, expected: Collection[str], work: Callable[[Settled], dict[str, ModelLineage]]
    ) -> LineageFeed:
        """`work` done here and now (what it raises, raised here): the feed answers at once."""
        feed = cls(expected)
        feed._outcome = work(feed.settle)
        feed._models, feed._ended = dict(feed._outcome), True
        return feed

    def _run(self, work: Callable[[Settled], dict[str, ModelLineage]]) -> None:
        try:
            self._outcome = work(self.settle)
        except BaseException as e:  # noqa: BLE001 - handed to the caller by result()
            self._error = e
        with self._changed:
            self._models = dict(self._outcome)  # what the lineage holds in the end is the truth
            self._ended = True
            self._changed.notify_all()

    def settle(self, unique_id: str, lineage: ModelLineage | None) -> None:
        with self._changed:
            if lineage is not None and unique_id in self._expected:  # (an ancestor: no event)
                self._models[unique_id] = lineage
            self._settled.add(unique_id)
            self._changed.notify_all()

    def get(self, unique_id: str, default: T | None = None) -> ModelLineage | T | None:
        """The model's lineage once it is settled (at once for a model not analysed)."""
        if unique_id not in self._expected:
            return default
        with self._changed:
            self._changed.wait_for(lambda: unique_id in self._settled or self._ended)
        self._raise()
        return self._models.get(unique_id, default)

    def decided(self) -> None:
        """Until some model has lineage or the work has ended (the run-level guard is known)."""
        with self._changed:
            self._changed.wait_for(lambda: bool(self._models) or self._ended)
        self._raise()

    def result(self) -> dict[str, ModelLineage]:
        """The finished lineage (waits for the work; raises what the work raised)."""
        if self._thread is not None:
            self._thread.join()
        self._raise()
        return self._outcome

    def _raise(self) -> None:
        """What the work raised, once it has ended: the events stop at the next model."""
        if self._error is not None:
            raise self._error
