"""Column lineage as it comes: a run's events are built while its models are still analysed.

`LineageFeed` runs the run's column lineage (`column_lineage_for`) in a thread of this process;
the analyses themselves run in the lineage worker processes (or in that thread, for a small
project). The event builder's `get(unique_id)` waits only for that one model, so the events of
the models analysed first are built and sent while the workers analyse the rest, where the
events used to wait for the last analysis. What the feed answers is what the finished lineage
holds: a model gets its lineage, or none when it is opaque or not analysed at all.

Each model's lineage is handed out once and then forgotten: its event is built from it and
sent, and nothing else reads it again. Held until the end, the lineage of 2,000 models (some
23 MiB of objects) was the main process' growth through a cold `dbt-oml emit`.
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
        self._models: dict[str, ModelLineage] = {}  # settled, not handed out yet
        self._settled: set[str] = set()
        self._taken: set[str] = set()
        self._any = False  # some expected model has lineage
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
        feed._ended_with(feed._outcome)
        return feed

    def _run(self, work: Callable[[Settled], dict[str, ModelLineage]]) -> None:
        try:
            self._outcome = work(self.settle)
        except BaseException as e:  # noqa: BLE001 - handed to the caller by result()
            self._error = e
        with self._changed:
            self._ended_with(self._outcome)
            self._changed.notify_all()

    def _ended_with(self, outcome: dict[str, ModelLineage]) -> None:
        """The work's end: what it returned joins what it settled, for every model not handed
        out yet; a model neither settled with lineage nor returned gets none."""
        self._models.update(
            (uid, lin)
            for uid, lin in outcome.items()
            if uid in self._expected and uid not in self._taken
        )
        self._any = self._any or bool(self._models)
        self._ended = True

    def settle(self, unique_id: str, lineage: ModelLineage | None) -> None:
        with self._changed:
            if lineage is not None and unique_id in self._expected:  # (an ancestor: no event)
                self._models[unique_id] = lineage
                self._any = True
            self._settled.add(unique_id)
            self._changed.notify_all()

    def get(self, unique_id: str, default: T | None = None) -> ModelLineage | T | None:
        """The model's lineage once it is settled (at once for a model not analysed), handed
        out once: the feed forgets it (a second call for the model gets `default`)."""
        if unique_id not in self._expected:
            return default
        with self._changed:
            self._changed.wait_for(lambda: unique_id in self._settled or self._ended)
            self._raise()
            self._taken.add(unique_id)
            return self._models.pop(unique_id, default)

    def decided(self) -> None:
        """Until some model has lineage or the work has ended (the run-level guard is known)."""
        with self._changed:
            self._changed.wait_for(lambda: self._any or self._ended)
        self._raise()

    def result(self) -> dict[str, ModelLineage]:
        """What the work returned (waits for it; raises what it raised). A work that settles
        each model as it comes need not return their lineage again (column_lineage_for)."""
        if self._thread is not None:
            self._thread.join()
        self._raise()
        return self._outcome

    def _raise(self) -> None:
        """What the work raised, once it has ended: the events stop at the next model."""
        if self._error is not None:
            raise self._error
