"""A build's models analysed as dbt finishes them (pipeline.running): what the workers find goes
into the run's cache; what they find opaque or never answer is left to the end of the run."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from dbt_oml.artifacts import read_manifest
from dbt_oml.lineage.codec import outcome_to_json
from dbt_oml.lineage.early import Planned
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.lineage.workers import Job, Prestarted
from dbt_oml.pipeline.running import RunningLineage
from tests.support.live_pipeline import ARTIFACTS, dbt_context, settings_in

MODEL = "model.jaffle_oml.stg_orders"


class Silent(Prestarted):
    """Workers that take every job and never answer (hung in C code, say)."""

    def __init__(self) -> None:
        super().__init__(workers=2)
        self.closed = False

    def submit(self, job: Job, done: object) -> bool:
        return True

    def close(self) -> None:
        self.closed = True


def _running(tmp_path: Path, started: Prestarted) -> RunningLineage:
    manifest = read_manifest(ARTIFACTS / "manifest.json")
    return RunningLineage(settings_in(tmp_path), manifest, dbt_context(tmp_path), started)


def test_lineage_is_cached_an_opaque_verdict_is_left_to_the_end(tmp_path: Path) -> None:
    running = _running(tmp_path, Silent())
    running.submitted = running._in_flight = 3
    found = ModelLineage(columns=())
    running._answer("found", (True, outcome_to_json(found)))
    running._answer("star", (False, "`*` over a relation whose columns are unknown"))
    running._answer("slow", (False, "analysis took longer than 30 s (given up)"))
    known = running.settle()
    assert known.cache is not None
    assert known.cache.get("found") == found
    assert known.cache.get("star") is None  # the end analyses it over every relation
    assert known.cache.get("slow") is None
    assert dict(known) == {}  # the end takes nothing but what it finds under its own keys


def test_workers_that_stop_answering_are_stopped_and_the_end_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    silent = Silent()
    running = _running(tmp_path, silent)
    running.submitted = running._in_flight = 2
    running._answer("one", (True, outcome_to_json(ModelLineage(columns=()))))
    with caplog.at_level("WARNING"):
        running.settle(patience=0.05)
    assert silent.closed
    assert "no lineage worker answered for 0.05 s; stopped" in caplog.text


def test_a_node_that_failed_or_is_no_model_is_not_planned(tmp_path: Path) -> None:
    running = _running(tmp_path, Silent())
    running.finished(MODEL, "error")
    running.finished("seed.jaffle_oml.country_codes", "success")
    running.finished("model.jaffle_oml.nowhere", "success")
    assert running._waiting == []


class Held(Prestarted):
    """Two workers that answer only when told to (`answer_next`)."""

    def __init__(self) -> None:
        super().__init__(workers=2)
        self.jobs: list[tuple[Job, Callable[[tuple[bool, str]], None]]] = []

    def submit(self, job: Job, done: Callable[[tuple[bool, str]], None]) -> bool:
        self.jobs.append((job, done))
        return True

    def answer_next(self, answered: int) -> None:
        self.jobs[answered][1]((True, outcome_to_json(ModelLineage(columns=()))))


def test_while_dbt_runs_one_core_stays_dbts_then_every_worker_takes_the_rest(
    tmp_path: Path,
) -> None:
    held = Held()
    running = _running(tmp_path, held)
    for key in ("a", "b", "c"):
        job = Job(
            unique_id=key,
            sql="select 1",
            tables={},
            case={},
            dialect="duckdb",
            default_catalog=None,
        )
        running.submitted += 1
        running._queued.append(Planned(key=key, job=job))
    running._dispatch()
    assert [j.unique_id for j, _ in held.jobs] == ["a"]  # one in flight: the other core is dbt's
    held.answer_next(0)
    assert [j.unique_id for j, _ in held.jobs] == ["a", "b"]
    held.answer_next(1)
    held.answer_next(2)
    known = running.settle(patience=0.05)
    assert known.cache is not None
    assert all(known.cache.get(k) == ModelLineage(columns=()) for k in "abc")


class Closing(Prestarted):
    """Workers whose stop waits for an answer still on its way (Pool.terminate joins the
    pool's result thread, which may be delivering one)."""

    def __init__(self) -> None:
        super().__init__(workers=2)
        self.lineage: RunningLineage | None = None
        self.delivered = False

    def submit(self, job: Job, done: object) -> bool:
        return True

    def close(self) -> None:
        assert self.lineage is not None
        entry = (True, outcome_to_json(ModelLineage(columns=())))
        late = threading.Thread(target=self.lineage._answer, args=("late", entry))
        late.start()
        late.join(timeout=10)
        self.delivered = not late.is_alive()


def test_stopping_silent_workers_never_waits_on_an_answer_it_blocks(tmp_path: Path) -> None:
    closing = Closing()
    running = _running(tmp_path, closing)
    closing.lineage = running
    running.submitted = running._in_flight = 1
    running.settle(patience=0.05)
    assert closing.delivered  # the late answer took the lock: settle had let it go
