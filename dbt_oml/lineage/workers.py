"""Analyse one model without ever failing the run; analyse many in bounded worker processes.

Hostile SQL (2,000 nested parentheses raise RecursionError in sqlglot) or a bug in the walk
costs only that model its column lineage: it becomes opaque with the reason. In worker
processes each model also has a time limit, and a worker that stops answering (a hang no signal
interrupts, a crash) is stopped; its models become opaque and the run goes on.

The engine's one process seam, so not pure: it spawns worker processes (early, on a cold pod:
`Prestarted`), hands them the run's setup in a temporary file only this user reads, and while
they start it swaps `sys.modules["__main__"]` for a bare module (restored at once), so that
spawn does not re-import the parent's `__main__`.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import pickle
import signal
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING, Any, Final, Protocol

from dbt_oml.errors import LineageError
from dbt_oml.lineage import setup_file
from dbt_oml.lineage.codec import lineage_from_json, lineage_to_json, outcome_to_json
from dbt_oml.lineage.model import ModelLineage, build_schema, column_lineage
from dbt_oml.lineage.types import Lasting

if TYPE_CHECKING:
    from sqlglot.schema import MappingSchema  # loaded with the engine, on the first analysis

logger = logging.getLogger(__name__)

#: Seconds one model may take in a worker process before it is given up (opaque).
MODEL_TIMEOUT: Final = 30.0
#: Models per task sent to a worker: small, so a stopped worker costs few models.
CHUNK: Final = 8
#: Seconds for the workers to start (spawn imports sqlglot and builds the schema).
STARTUP: Final = 30.0
#: Seconds a chunk may take beyond CHUNK * timeout (passing results between processes).
SLACK: Final = 5.0
#: Allocations between a worker's young collector passes (Python's default: 700). One analysis
#: allocates some 100,000 objects and its parse tree (cyclic: parent links) lives through it, so
#: at the default each pass re-walks the living tree: 2,000 analyses spent 1.6-2 s of 9 s in
#: the collector, 0.8 s at this threshold (`gc.callbacks` timing, one process, sqlglot[c]).
GC_YOUNG: Final = 10_000

#: A model's lineage, or the reason it has none.
Outcome = ModelLineage | str
#: {catalog: {schema: {table: {column: type}}}}, as the setup file holds them.
Tables = setup_file.Tables
#: An outcome as it crosses from a worker: ("L", the lineage's cache entry, codec), ("O", a
#: lasting verdict) or ("R", a passing reason). Text: the parent stores the entry as it comes and
#: decodes it once, where it unpickled every object (dataclasses' slow `__setstate__`) and the
#: cache then encoded the lineage again.
Sent = tuple[str, str]
#: Hears a model's outcome and, for a lineage, its cache entry.
Hears = Callable[[str, Outcome, str | None], None]


class Analyse(Protocol):
    """Analyses one model's SQL; returns its lineage or why it is opaque, and never raises."""

    def __call__(
        self,
        sql: str,
        *,
        schema: MappingSchema,
        dialect: str,
        unique_id: str,
        default_catalog: str | None,
        case: Mapping[str, str],
        own_columns: Sequence[str] = (),
    ) -> Outcome: ...


def analyse_one(
    sql: str,
    *,
    schema: MappingSchema,
    dialect: str,
    unique_id: str,
    default_catalog: str | None,
    case: Mapping[str, str],
    own_columns: Sequence[str] = (),
) -> Outcome:
    """One model's column lineage, or the reason it is opaque. Never raises.

    >>> analyse_one("select " + "(" * 2000 + "1" + ")" * 2000, schema=build_schema({},
    ...     dialect="duckdb"), dialect="duckdb", unique_id="m", default_catalog=None, case={})
    'SQL nested too deeply to analyse (RecursionError)'
    """
    try:
        return column_lineage(
            sql,
            schema=schema,
            dialect=dialect,
            unique_id=unique_id,
            default_catalog=default_catalog,
            default_schema="main",
            case=case,
            own_columns=own_columns,
        )
    except LineageError as e:
        return Lasting(e.reason)
    except RecursionError:
        return Lasting("SQL nested too deeply to analyse (RecursionError)")
    except Exception as e:
        logger.debug("analysing %s failed", unique_id, exc_info=True)
        first = str(e).strip().splitlines()
        return f"analysis failed ({type(e).__name__}: {first[0][:200] if first else ''})"


class _TimeoutError(BaseException):
    """Raised by the worker's alarm; a BaseException, so no `except Exception` swallows it."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the block after `seconds` (worker processes only: they own their signals)."""

    def expire(_signum: int, _frame: types.FrameType | None) -> None:
        raise _TimeoutError

    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds <= 0 or not usable:
        yield
        return
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True, slots=True)
class _Worker:
    schema: MappingSchema
    case: Mapping[str, str]
    dialect: str
    default_catalog: str | None
    timeout: float
    analyse: Analyse
    own_columns: Mapping[str, tuple[str, ...]]
    sql: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class WorkerSetup:
    """What the worker processes analyse with (through the run's setup file)."""

    tables: Tables
    case: Mapping[str, str]
    dialect: str
    default_catalog: str | None
    timeout: float = MODEL_TIMEOUT
    analyse: Analyse = analyse_one
    own_columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sql: Mapping[str, str] = field(default_factory=dict)
    """Each job's SQL, by unique_id: in the setup file, so that a task is a few unique_ids
    (the pool's feeder thread then never waits on a full pipe for the GIL)."""


#: In each worker process: the run's setup file (path, open file, index), opened once.
_FILE: list[tuple[str, IO[bytes], setup_file.Index]] = []


def _prepare(dialect: str | None = None) -> None:
    """A worker's start: the engine and the run's sqlglot dialect imported before there is
    work (see Prestarted), where the first chunk took 0.035 s longer for them."""
    import dbt_oml.lineage.engine  # noqa: F401 - the imports are the point

    if dialect is not None:
        from sqlglot.dialects.dialect import Dialect

        # never raising here: a pool's initializer that raises is started again and again.
        # An unknown dialect is each analysis' to report
        with contextlib.suppress(Exception):
            Dialect.get_or_raise(dialect)
    gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One model analysed alone in a worker, over the few relations it reads: a model dbt has
    just finished (`Prestarted.submit`), while the rest of the run goes on."""

    unique_id: str
    sql: str
    tables: Tables
    case: Mapping[str, str]
    dialect: str
    default_catalog: str | None
    own_columns: tuple[str, ...] = ()
    timeout: float = MODEL_TIMEOUT


def analyse_job_text(job: Job) -> tuple[bool, str]:
    """In a worker process: `job`'s model as (True, its lineage cache entry) or (False, why it
    is opaque). The entry goes back as one string: the parent, whose other threads run dbt,
    stores it as it comes, with no objects to unpickle or encode."""
    outcome = analyse_job(job)
    if isinstance(outcome, str):
        return False, str(outcome)
    return True, outcome_to_json(outcome)


def analyse_job(job: Job) -> Outcome:
    """In a worker process: `job`'s model, within its time limit (never raises for the model)."""
    worker = _Worker(
        build_schema(job.tables, dialect=job.dialect),
        job.case,
        job.dialect,
        job.default_catalog,
        job.timeout,
        analyse_one,
        {job.unique_id: job.own_columns} if job.own_columns else {},
        {job.unique_id: job.sql},
    )
    return _bounded(worker, job.unique_id, job.sql)


def _opened(path: str) -> tuple[IO[bytes], setup_file.Index]:
    """The setup file `path` (open, and its index read, once per worker and run)."""
    if not _FILE or _FILE[0][0] != path:
        for _, f, _ in _FILE:
            f.close()
        f = open(path, "rb")  # noqa: SIM115 - open while the worker serves this run
        _FILE[:] = [(path, f, setup_file.read_index(f))]
        gc.freeze()  # the index lives as long as the worker: no pass walks it again
    return _FILE[0][1], _FILE[0][2]


def _chunk_worker(path: str, uids: list[str]) -> _Worker:
    """What a chunk is analysed with: its models, over a schema of the relations they name."""
    f, index = _opened(path)
    setup: WorkerSetup = index.head
    models = setup_file.read_models(f, index, uids)
    tables = setup_file.tables_for(f, index, (sql for sql, _ in models.values()))
    return _Worker(
        build_schema(tables, dialect=setup.dialect),
        setup.case,
        setup.dialect,
        setup.default_catalog,
        setup.timeout,
        setup.analyse,
        {uid: own for uid, (_, own) in models.items() if own},
        {uid: sql for uid, (sql, _) in models.items()},
    )


def _bounded(worker: _Worker, unique_id: str, sql: str) -> Outcome:
    try:
        own = worker.own_columns.get(unique_id)
        with _deadline(worker.timeout):
            return worker.analyse(
                sql,
                schema=worker.schema,
                dialect=worker.dialect,
                unique_id=unique_id,
                default_catalog=worker.default_catalog,
                case=worker.case,
                **({"own_columns": own} if own else {}),
            )
    except _TimeoutError:
        return f"analysis took longer than {worker.timeout:g} s (given up)"


def _run_chunk(path: str, uids: list[str]) -> list[tuple[str, Sent]]:
    worker = _chunk_worker(path, uids)
    sent = [(uid, _sent(_bounded(worker, uid, worker.sql[uid]))) for uid in uids]
    del worker
    # the chunk's parse trees (cyclic) freed now, not after they reached the oldest generation:
    # a worker peaks 3 MiB lower (65 -> 62 at 2,000 models), and the pass is cheap, as what
    # lives on (the engine's modules, the setup file's index) is frozen (`_opened`). A pass of
    # the younger generations only takes 3-4 % less of a worker's time, but peaks 0.2-0.5 MiB
    # higher: the summed peak of a cold emit went from 1.49x dbt-ol's to the 1.5x limit
    gc.collect()
    return sent


def _sent(outcome: Outcome) -> Sent:
    if isinstance(outcome, Lasting):
        return ("O", str(outcome))
    if isinstance(outcome, str):
        return ("R", outcome)
    try:
        return ("L", lineage_to_json(outcome))
    except (TypeError, ValueError, AttributeError) as e:  # not a lineage (an `analyse` seam's)
        return ("R", f"analysis failed ({type(e).__name__}: {str(e)[:200]})")


def _received(sent: Sent) -> tuple[Outcome, str | None]:
    """A worker's outcome (`_sent`) and, for a lineage, its cache entry."""
    kind, text = sent
    if kind == "L":
        return lineage_from_json(text), text
    return (Lasting(text) if kind == "O" else text), None


@contextmanager
def _main_not_imported() -> Iterator[None]:
    """Spawned workers import the parent's `__main__` first; they need only this module.

    Under the dbt plugin `__main__` is dbt's CLI (about 2 s of imports per worker), so while the
    workers start, `__main__` is a bare module that spawn has nothing to import for.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


class Prestarted:
    """Worker processes started before their work is known: on a cold pod, while dbt runs or
    the artifacts are read, so that the run does not wait for their start (spawn, imports).
    `analyse_parallel` takes them; `close` stops them when it did not."""

    def __init__(self, workers: int, dialect: str | None = None) -> None:
        self.workers = workers
        self.dialect = dialect
        """The run's sqlglot dialect, imported as the workers start."""
        self._pool: Any = None
        self.dispatched = threading.Event()
        """Set once a run's models are handed to the workers (`analyse_parallel`), or once the
        run's lineage ended without them: the end of a build waits for it before it goes on
        with its own work (pipeline.ends.start_early)."""

    def start(self) -> Prestarted:
        import multiprocessing

        try:
            with _main_not_imported():
                self._pool = multiprocessing.get_context("spawn").Pool(
                    self.workers, _prepare, (self.dialect,)
                )
        except OSError as e:
            logger.debug("lineage worker processes unavailable (%s)", e)
        return self

    @property
    def running(self) -> bool:
        """Whether the workers started and are still this object's."""
        return self._pool is not None

    def take(self) -> Any:
        pool, self._pool = self._pool, None
        return pool

    def submit(self, job: Job, done: Callable[[tuple[bool, str]], None]) -> bool:
        """Analyse `job` in a worker; `done` hears `analyse_job_text`'s answer, in the pool's
        result thread. False when no worker runs (never started, taken, closed): nothing will
        be heard."""
        pool = self._pool
        if pool is None:
            return False

        def failed(error: BaseException) -> None:  # e.g. the job did not pickle
            done((False, f"analysis failed ({type(error).__name__}: {str(error)[:200]})"))

        try:
            pool.apply_async(analyse_job_text, (job,), callback=done, error_callback=failed)
        except (ValueError, OSError) as e:  # the pool is closing
            logger.debug("lineage worker unavailable for %s (%s)", job.unique_id, e)
            return False
        return True

    def close(self) -> None:
        self.dispatched.set()
        pool = self.take()
        if pool is not None:
            pool.terminate()
            pool.join()


def analyse_parallel(
    jobs: list[tuple[str, str]],
    *,
    setup: WorkerSetup,
    workers: int,
    each: Hears,
    started: Prestarted | None = None,
) -> set[str]:
    """(unique_id, sql) jobs analysed in spawned worker processes (`started` ones if given):
    the unique_ids answered, every job's, or none when no pool can start. `each` hears every
    outcome (and a lineage's cache entry) as its chunk comes back (those of stopped workers'
    models at the end); it is their only holder (a run's lineage is not kept here to the end).

    Every job gets an outcome. When no chunk finishes for `CHUNK * timeout + SLACK` seconds
    (plus STARTUP for the first) the workers are stopped and the unfinished models are opaque.
    The setup goes to the workers as a file of this run's (0600): each reads its index once
    and, for each chunk, the SQL of its models and the columns of the relations they name.
    """
    import multiprocessing

    chunks = [[uid for uid, _ in jobs[i : i + CHUNK]] for i in range(0, len(jobs), CHUNK)]
    pool = started.take() if started is not None else None
    try:
        if pool is None:
            with _main_not_imported():
                context = multiprocessing.get_context("spawn")  # never fork after dbt's threads
                pool = context.Pool(min(workers, len(chunks)), _prepare, (setup.dialect,))
    except OSError as e:  # e.g. no importable __main__ (embedded Python), no semaphores
        logger.debug("lineage worker processes unavailable (%s); analysing serially", e)
        return set()
    path = _setup_file(replace(setup, sql=dict(jobs)))
    if path is None:  # no temporary folder to write to: this process analyses them
        pool.terminate()
        return set()
    patience = CHUNK * setup.timeout + SLACK
    try:
        with pool:  # leaving terminates the workers, a hung one included
            results = pool.imap_unordered(functools.partial(_run_chunk, path), chunks)
            if started is not None:
                started.dispatched.set()
            done = _collect(results, len(chunks), patience, each)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    stopped = f"analysis did not finish (its worker failed or hung for {patience:g} s)"
    for uid in (uid for uid, _ in jobs if uid not in done):
        each(uid, stopped, None)
    return {uid for uid, _ in jobs}


def _collect(results: Any, chunks: int, patience: float, each: Hears) -> set[str]:
    """The `chunks` answers of `imap_unordered`'s `results`, each model's outcome to `each` as
    its chunk comes: the unique_ids heard. Stops when none comes for `patience` seconds (plus
    STARTUP for the first); a failed task costs its models only."""
    import multiprocessing

    done: set[str] = set()
    for number in range(chunks):
        try:
            chunk = results.next(timeout=patience + (0 if number else STARTUP))
        except multiprocessing.TimeoutError:
            logger.warning("column lineage: no worker answered for %g s; stopped", patience)
            break
        except Exception as e:  # noqa: BLE001 - a failed task costs its models only
            logger.debug("a lineage worker task failed: %r", e)
            continue
        for uid, sent in chunk:
            outcome, entry = _received(sent)
            done.add(uid)
            each(uid, outcome, entry)
    return done


def _setup_file(setup: WorkerSetup) -> str | None:
    """The setup written into a file only this user reads, in records a worker reads as its
    chunks need them (setup_file; the caller removes it); None, and a debug line, when it
    cannot be written."""
    try:
        fd, path = tempfile.mkstemp(prefix="dbt-oml-lineage-", suffix=".pickle")
    except OSError as e:
        logger.debug("no temporary file for the lineage workers (%s); analysing serially", e)
        return None
    head = replace(setup, tables={}, case=dict(setup.case), own_columns={}, sql={})
    models = {uid: (sql, tuple(setup.own_columns.get(uid, ()))) for uid, sql in setup.sql.items()}
    try:
        with os.fdopen(fd, "wb") as f:
            setup_file.write(f, head, models=models, tables=setup.tables)
    except (OSError, pickle.PicklingError, TypeError, AttributeError) as e:
        logger.debug("the lineage workers' setup was not written (%s); analysing serially", e)
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None
    return path
