"""A build's models analysed as dbt finishes them (pipeline.running): what the workers find goes
into the run's cache; what they find opaque or never answer is left to the end of the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt_oml.artifacts import read_manifest
from dbt_oml.lineage.early import Planned
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.lineage.types import Lasting
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


def _planned(key: str) -> Planned:
    job = Job(
        unique_id=MODEL, sql="select 1", tables={}, case={}, dialect="duckdb", default_catalog=None
    )
    return Planned(key=key, job=job)


def test_lineage_is_cached_an_opaque_verdict_is_left_to_the_end(tmp_path: Path) -> None:
    running = _running(tmp_path, Silent())
    running.submitted = 3
    found = ModelLineage(columns=())
    running._answer(_planned("found"), found)
    running._answer(_planned("star"), Lasting("`*` over a relation whose columns are unknown"))
    running._answer(_planned("slow"), "analysis took longer than 30 s (given up)")
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
    running.submitted = 2
    running._answer(_planned("one"), ModelLineage(columns=()))
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
