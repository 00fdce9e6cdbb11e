"""Hostile SQL and hung workers cost one model its column lineage, never the run."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest
from sqlglot.schema import MappingSchema

from dbt_oml.artifacts import RunArtifacts, read_artifacts
from dbt_oml.lineage import batch as lineage_batch
from dbt_oml.lineage import workers as lineage_workers
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.lineage.cache import DiskCache
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.lineage.types import Lasting
from dbt_oml.lineage.workers import Outcome, analyse_one
from tests.support.mini_models import MODELS

HOSTILE = "select " + "(" * 2000 + "1" + ")" * 2000 + " as x"
VICTIM = "model.jaffle_oml.stg_orders"
MARK = "/* hang here */"


def _with_sql(target: Path, unique_id: str, sql: str) -> RunArtifacts:
    """The mini artifacts, with one model's compiled SQL replaced."""
    for name, section in (("manifest.json", "nodes"), ("run_results.json", "results")):
        doc = json.loads((target / name).read_text())
        entries = doc[section].values() if isinstance(doc[section], dict) else doc[section]
        for entry in entries:
            if entry["unique_id"] == unique_id:
                entry["compiled_code"] = sql
        (target / name).write_text(json.dumps(doc))
    return read_artifacts(target)


def hang_when_marked(sql: str, **kw: object) -> Outcome:
    """A model whose analysis never ends (until the worker's alarm interrupts it)."""
    if MARK in sql:
        threading.Event().wait()
    return analyse_one(sql, **kw)  # type: ignore[arg-type]


def hang_deaf_when_marked(sql: str, **kw: object) -> Outcome:
    """A hang no alarm interrupts (like one inside C code): only stopping the worker helps."""
    if MARK in sql:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        threading.Event().wait()
    return analyse_one(sql, **kw)  # type: ignore[arg-type]


def test_deep_nesting_is_opaque_with_the_reason() -> None:
    schema = MappingSchema({}, dialect="duckdb")
    outcome = analyse_one(
        HOSTILE, schema=schema, dialect="duckdb", unique_id="m", default_catalog=None, case={}
    )
    assert outcome == "SQL nested too deeply to analyse (RecursionError)"


def test_a_bug_in_the_analysis_is_opaque_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object, **__: object) -> None:
        raise KeyError("walk")

    monkeypatch.setattr(lineage_workers, "column_lineage", broken)
    schema = MappingSchema({}, dialect="duckdb")
    outcome = analyse_one(
        "select 1", schema=schema, dialect="duckdb", unique_id="m", default_catalog=None, case={}
    )
    assert outcome == "analysis failed (KeyError: 'walk')"


@pytest.mark.parametrize("workers", [1, 2], ids=["serial", "worker processes"])
def test_hostile_sql_costs_only_its_model(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    report = analyse_models(
        _with_sql(mini_target, VICTIM, HOSTILE), wanted=MODELS, dialect="duckdb", workers=workers
    )
    assert report.opaque[VICTIM] == "SQL nested too deeply to analyse (RecursionError)"
    assert MODELS & set(report.models) == MODELS - {VICTIM}


def _hung(target: Path, monkeypatch: pytest.MonkeyPatch, analyse: object) -> Mapping[str, str]:
    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(lineage_workers, "CHUNK", 1)  # the hung model's task is its own
    monkeypatch.setattr(lineage_workers, "SLACK", 2.0)
    arts = read_artifacts(target)
    sql = arts.manifest.nodes[VICTIM].compiled_code
    report = analyse_models(
        _with_sql(target, VICTIM, f"{sql}\n{MARK}"),
        wanted=MODELS,
        dialect="duckdb",
        workers=2,
        timeout=1.0,
        analyse=analyse,  # type: ignore[arg-type]
    )
    assert MODELS & set(report.models) == MODELS - {VICTIM}
    return report.opaque


def test_a_model_that_hangs_in_a_worker_is_given_up(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opaque = _hung(mini_target, monkeypatch, hang_when_marked)
    assert opaque[VICTIM] == "analysis took longer than 1 s (given up)"


def test_a_worker_deaf_to_its_alarm_is_stopped(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opaque = _hung(mini_target, monkeypatch, hang_deaf_when_marked)
    assert opaque[VICTIM].startswith("analysis did not finish (its worker failed or hung")


def test_prestarted_workers_give_the_answers_of_new_ones_and_leave_nothing(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cold pod's workers, started before the work was known (issue 31), analyse as workers
    started for the work do; their setup file goes with the run, and closing stops them."""
    import tempfile

    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    arts = read_artifacts(mini_target)
    fresh = analyse_models(arts, wanted=MODELS, dialect="duckdb", workers=2)
    started = lineage_workers.Prestarted(2, "duckdb").start()
    assert not started.dispatched.is_set()
    early = analyse_models(arts, wanted=MODELS, dialect="duckdb", workers=2, started=started)
    assert early.models == fresh.models
    assert early.opaque == fresh.opaque
    assert started.dispatched.is_set()  # the end of a build waits for the hand-over
    assert started.take() is None  # taken by the run, and stopped when it ended
    assert list(scratch.iterdir()) == []

    unused = lineage_workers.Prestarted(2).start()
    processes = list(unused._pool._pool)  # the processes themselves
    unused.close()
    assert [p.is_alive() for p in processes] == [False, False]
    assert unused.dispatched.is_set()  # no one waits on workers that are gone


def test_a_workers_start_imports_the_engine_and_the_dialect_and_never_raises() -> None:
    """What a worker's first chunk imported (0.035 s) is imported as it starts, while dbt runs;
    an unknown dialect is left for each analysis to report: an initializer that raised would
    have the pool start its workers again and again."""
    import subprocess
    import sys

    script = (
        "import sys; from dbt_oml.lineage.workers import _prepare; _prepare('no such dialect'); "
        "_prepare('duckdb'); print('dbt_oml.lineage.engine' in sys.modules, "
        "'sqlglot.dialects.duckdb' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


def test_no_temporary_folder_means_this_process_analyses(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The workers' setup file cannot be written (a read-only or missing TMPDIR): every model is
    still analysed, serially, and the run says nothing louder than a debug line."""
    import tempfile

    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    arts = read_artifacts(mini_target)
    report = analyse_models(arts, wanted=MODELS, dialect="duckdb", workers=2)
    serial = analyse_models(arts, wanted=MODELS, dialect="duckdb", workers=1)
    assert report.models == serial.models
    assert report.opaque == serial.opaque == {}


def test_worker_processes_store_the_cache_entries_a_serial_run_stores(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker sends each lineage as its cache entry (text); the run stores it as it came,
    encoding nothing again, and records the lineage it decodes to: both what analysing here
    gives."""
    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    arts = read_artifacts(mini_target)
    entries, reports, caches = [], [], []
    for workers in (1, 2):
        cache = _Counting(tmp_path / f"cache-{workers}")
        report = analyse_models(arts, wanted=MODELS, dialect="duckdb", workers=workers, cache=cache)
        entries.append(_packed(cache.root))  # flushed at the end of the analysis
        reports.append(report)
        caches.append(cache)
    assert reports[1].analysed == reports[0].analysed > 0
    assert reports[1].models == reports[0].models
    assert reports[1].opaque == reports[0].opaque
    assert entries[1] == entries[0]
    assert caches[1].encoded == 0  # every analysed lineage stored as the worker sent it
    assert caches[1].as_sent == reports[1].analysed
    assert caches[0].encoded == reports[0].analysed


class _Counting(DiskCache):
    """A disk cache counting lineages it encodes (`put`) and entries stored as given."""

    encoded = as_sent = 0
    putting = False

    def put(self, key: str, value: ModelLineage | Lasting) -> None:
        self.encoded += not isinstance(value, str)
        self.putting = True  # DiskCache.put stores through put_entry
        super().put(key, value)
        self.putting = False

    def put_entry(self, key: str, text: str) -> None:
        self.as_sent += not self.putting
        super().put_entry(key, text)


def _packed(root: Path) -> dict[str, str]:
    lines = (line for pack in root.glob("*.pack") for line in pack.read_text().splitlines())
    return dict(line.split("\t", 1) for line in lines)
