"""A cold pod's `dbt-oml build`: each model analysed in the lineage workers as dbt finishes it.

dbt runs its nodes in its own threads and, on two cores, leaves much of the second one idle; the
lineage workers (`lineage.workers.Prestarted`, started when dbt loaded the manifest) analyse each
model there as soon as it is built, so that after dbt's `Done.` the column lineage is mostly
cache lookups (issue 31 item 3).

In the dbt thread that finished a model, once a second (and once more as dbt's command
completes): the columns of the models finished since and of the relations they read, in one
query through that thread's connection (each relation read once per run; never from a thread of
ours: dbt closes every connection as its run ends, and a query still running on one fails dbt);
then per model its compiled SQL from target/compiled, its plan and cache key
(`lineage.early.plan_alone`), and the job to a worker.
Each lineage found goes into the run's lineage cache under that key. The end of the run computes
every key again from catalog.json and takes an analysis only under its own key, so nothing here
can change an event: a model whose SQL or columns came out otherwise, found opaque, or not
answered yet, is analysed there, as before. Anything that goes wrong here costs only speed: a
debug line, and the end does the work.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from dbt_oml.artifacts import Manifest, Node
from dbt_oml.dbt.relation_columns import dbt_adapter
from dbt_oml.dbt.runner import compiled_file
from dbt_oml.lineage.early import Planned, file_read_sources, plan_alone
from dbt_oml.lineage.workers import MODEL_TIMEOUT, SLACK, Prestarted
from dbt_oml.pipeline.ends import place_of
from dbt_oml.pipeline.lineage import NodeLineage, RelationsRead, analysable, lineage_cache

if TYPE_CHECKING:
    from dbt_oml.config import Settings
    from dbt_oml.dbt.runner import DbtContext

logger = logging.getLogger(__name__)

#: Seconds between two reads of the finished models' columns while dbt runs. One query per
#: model, through dbt's adapter, held dbt's own threads up (+6 s on a build of 500 models).
BATCH: Final = 1.0
#: Seconds `settle` waits for the next answer: each job has its own time limit in the worker,
#: so a longer silence is a worker that stopped answering.
PATIENCE: Final = MODEL_TIMEOUT + SLACK


class RunningLineage:
    """The models of one `dbt-oml build` analysed as dbt finishes them, into the run's cache."""

    def __init__(
        self,
        settings: Settings,
        manifest: Manifest,
        context: DbtContext,
        started: Prestarted,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.manifest = manifest
        self.context = context
        self.started = started
        self.known = NodeLineage()
        """Given to the end of the run as `known`: no lineage of its own, only the cache."""
        self.known.cache = lineage_cache(
            context.target_path, settings, project=context.project_name
        )
        self.submitted = 0
        self.answered = 0
        self._analysable = analysable(manifest)
        self._files = file_read_sources(manifest)
        self._place = place_of(context)
        self._relations = RelationsRead()
        self._lock = threading.Condition()
        self._reading = threading.Lock()
        self._waiting: list[Node] = []
        self._clock = clock
        self._read_at = -BATCH
        self._queued: deque[Planned] = deque()
        self._in_flight = 0
        self._limit = max(started.workers - 1, 1)
        """Analyses in flight while dbt runs: a core stays dbt's (its threads and DuckDB's)."""

    def finished(self, unique_id: str, status: str) -> None:
        """In the dbt thread that ran the node, as it finishes. Never raises."""
        with self._lock:
            if status == "success" and unique_id in self._analysable:
                self._waiting.append(self.manifest.nodes[unique_id])
            due = bool(self._waiting) and self._clock() - self._read_at >= BATCH
        if due and self._reading.acquire(blocking=False):  # else another dbt thread reads now
            try:
                self._read_waiting()
            finally:
                self._reading.release()

    def read_waiting(self) -> None:
        """The models dbt finished last, as its command completes (in dbt's thread, while it
        still holds its adapter). Never raises."""
        with self._reading:
            self._read_waiting()

    def _read_waiting(self) -> None:
        """Read the columns of the models waiting and of the relations they read (one query
        through the adapter, in a dbt thread) and hand the models to the workers."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
            self._read_at = self._clock()
        if not waiting:
            return
        reads = {node.unique_id: [node, *self.manifest.relations_read(node)] for node in waiting}
        try:
            adapter = dbt_adapter()
            if adapter is None:
                return
            self._relations.read_now(adapter, self.manifest, (n for r in reads.values() for n in r))
        except Exception:  # the end of the run analyses them
            logger.debug("columns not read while dbt ran", exc_info=True)
            return
        for node in waiting:
            try:
                self._submit(node, reads[node.unique_id])
            except Exception:  # the end of the run analyses it
                logger.debug("column lineage of %s: at the end", node.unique_id, exc_info=True)

    def settle(self, patience: float = PATIENCE) -> NodeLineage:
        """Wait for the analyses under way; when no answer comes for `patience` seconds, the
        workers are stopped (the end of the run analyses what did not come back)."""
        with self._lock:
            self._limit = self.started.workers  # dbt is done: every worker
        self._dispatch()
        stopped = False
        with self._lock:
            while self.answered < self.submitted:
                if not self._lock.wait_for(functools.partial(self._heard, self.answered), patience):
                    stopped, self.submitted = True, self.answered
                    self._queued.clear()
        if stopped:  # outside the lock: stopping waits for the answers' thread, which takes it
            logger.warning("column lineage: no lineage worker answered for %g s; stopped", patience)
            self.started.close()
        logger.debug("column lineage: %d models answered while dbt ran", self.answered)
        return self.known

    def _heard(self, answers: int) -> bool:
        """An answer came, or nothing is awaited any more (a submission that found no worker)."""
        return self.answered != answers or self.answered >= self.submitted

    def _submit(self, node: Node, relations: list[Node]) -> None:
        """`node` to the workers; `relations`: it and what it reads, their columns read."""
        sql = compiled_file(self.context.target_path, node)
        if sql is None:
            return
        found = self._relations.columns
        columns = {n.unique_id: found[n.unique_id] for n in relations if n.unique_id in found}
        with self._lock:  # the cache is shared with the answers' thread
            planned = plan_alone(
                self.manifest,
                node,
                sql=sql,
                columns=columns,
                file_reads=self._files,
                dialect=self._place.dialect,
                default_catalog=self._place.default_catalog,
                spelling=self._relations.spelling(relations),
                cache=self.known.cache,
            )
            if planned is None:
                return
            self.submitted += 1
            self._queued.append(planned)
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand queued models to the workers, up to the limit in flight."""
        while True:
            with self._lock:
                if self._in_flight >= self._limit or not self._queued:
                    return
                planned = self._queued.popleft()
                self._in_flight += 1
            if not self.started.submit(planned.job, functools.partial(self._answer, planned.key)):
                with self._lock:  # no workers any more: the end of the run analyses them
                    self.submitted -= 1 + len(self._queued)
                    self._in_flight -= 1
                    self._queued.clear()
                    self._lock.notify_all()
                return

    def _answer(self, key: str, answer: tuple[bool, str]) -> None:
        """In the pool's result thread: cache the lineage found (an entry the worker encoded).
        A model found opaque is left to the end of the run, which analyses it over the schema
        of every relation: a verdict over the few relations it was seen to read here (say, `*`
        over a table it names without ref()) must not stand for the end's."""
        found, entry = answer
        with self._lock:
            cache = self.known.cache
            if cache is not None and found:
                cache.put_entry(key, entry)
            self.answered += 1
            self._in_flight -= 1
            self._lock.notify_all()
        self._dispatch()
