"""The live pipeline (pipeline.live) driven as dbt drives it, without dbt: a DbtContext and
NodeStarted callbacks into LiveEmitter, then `finish` with the bundled project's saved artifacts.
START events go out while "dbt runs", the rest at the end, each run once; undelivered or
unsendable events land in the outbox."""

from __future__ import annotations

import gc
import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.artifacts import read_artifacts
from dbt_oml.config import Settings
from dbt_oml.dbt.runner import DbtContext, NodeStarted
from dbt_oml.delivery.emitter import read_outbox
from dbt_oml.pipeline.live import LiveEmitter, finish
from dbt_oml.pipeline.report import Report
from dbt_oml.redaction import Redactor
from tests.conftest import PROJECT
from tests.support.live_pipeline import (
    ARTIFACTS,
    INVOCATION,
    MODEL,
    PARENT,
    STARTED,
    dbt_context,
    file_transport,
    settings_in,
)

EVENTS = 90  # what `dbt-oml build` sent for this invocation


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "p"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    shutil.copytree(ARTIFACTS, copy / "target")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    return copy


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(
    project: Path, settings: Settings, *, context: DbtContext | None = None, artifacts: bool = True
) -> tuple[LiveEmitter, list[int]]:
    """What `dbt-oml build` does around dbt; returns the emitter and the file sizes (in events)
    seen after each live callback."""
    where = (settings.transport.config or {}).get("log_file_path")
    events_file = Path(str(where)) if where and not Path(str(where)).is_dir() else None
    seen: list[int] = []
    live = LiveEmitter(settings, cwd=project.parent, report=Report(), redactor=Redactor())
    context = context or dbt_context(project)
    live.on_invocation(context)
    seen.append(len(_lines(events_file)) if events_file else 0)
    model_start = STARTED + timedelta(seconds=1)
    live.on_node_start(NodeStarted(unique_id=MODEL, started_at=model_start))
    seen.append(len(_lines(events_file)) if events_file else 0)
    finish(
        live,
        read_artifacts(context.target_path) if artifacts else None,
        node_starts={MODEL: model_start},
        ended_at=STARTED + timedelta(minutes=1),
        error=None,
    )
    return live, seen


def test_starts_go_out_live_and_every_run_is_sent_once(project: Path) -> None:
    events_file = project.parent / "events.jsonl"
    live, seen = _run(project, settings_in(project.parent, transport=file_transport(events_file)))
    assert seen == [1, 2]  # the parent START at once, the model's START when dbt starts it
    sent = _lines(events_file)
    assert (sent[0]["job"]["name"], sent[0]["eventType"]) == (PARENT, "START")
    assert sent[1]["eventType"] == "START"
    assert sent[1]["job"]["name"].endswith("stg_orders.build.run")
    assert (sent[-1]["job"]["name"], sent[-1]["eventType"]) == (PARENT, "COMPLETE")
    pairs = [(e["run"]["runId"], e["eventType"]) for e in sent]
    assert len(pairs) == len(set(pairs)), "a run event was sent twice"
    assert len(sent) == EVENTS
    assert live.report.events_built == EVENTS
    assert (live.report.delivery.delivered, live.report.delivery.failed) == (EVENTS, 0)
    model_runs = [e for e in sent if e["run"]["runId"] == sent[1]["run"]["runId"]]
    assert [e["eventType"] for e in model_runs] == ["START", "COMPLETE"]


def test_undelivered_events_land_in_the_outbox(project: Path) -> None:
    directory = project.parent / "not-a-file"
    directory.mkdir()
    live, _ = _run(project, settings_in(project.parent, transport=file_transport(directory)))
    outbox = project / "target" / "dbt_oml" / "outbox" / f"{INVOCATION}.jsonl"
    assert live.report.delivery.outbox == outbox
    assert (live.report.delivery.delivered, live.report.delivery.failed) == (0, EVENTS)
    kept = read_outbox(outbox)
    assert len(kept) == EVENTS
    assert (kept[0].job.name, kept[0].eventType.value) == (PARENT, "START")


def test_an_unusable_transport_keeps_every_event_and_dbt_goes_on(project: Path) -> None:
    settings = settings_in(project.parent, transport={"type": "no-such-transport"})
    live, _ = _run(project, settings)
    assert live.report.destination == "nowhere (transport not configured)"
    outbox = project / "target" / "dbt_oml" / "outbox" / f"{INVOCATION}.jsonl"
    assert len(read_outbox(outbox)) == EVENTS
    assert live.report.delivery.delivered == 0


def test_without_artifacts_only_the_invocation_run_is_ended(project: Path) -> None:
    events_file = project.parent / "events.jsonl"
    _run(
        project, settings_in(project.parent, transport=file_transport(events_file)), artifacts=False
    )
    sent = _lines(events_file)
    kinds = [(e["job"]["name"].rsplit(".", 1)[-1], e["eventType"]) for e in sent]
    # parent START, the model's live START, parent COMPLETE: no node end without artifacts
    assert kinds == [(PARENT, "START"), ("run", "START"), (PARENT, "COMPLETE")]


def test_a_manifest_of_another_invocation_is_not_used_for_live_starts(project: Path) -> None:
    events_file = project.parent / "events.jsonl"
    other = dbt_context(project, invocation_id="00000000-0000-0000-0000-000000000000")
    live, seen = _run(
        project, settings_in(project.parent, transport=file_transport(events_file)), context=other
    )
    assert seen == [1, 1]  # no live START for the model
    assert any("live START events skipped" in p for p in live.report.problems)
    # the model's START still goes out at the end, once
    starts = [
        e
        for e in _lines(events_file)
        if e["eventType"] == "START" and e["job"]["name"].endswith("stg_orders.build.run")
    ]
    assert len(starts) == 1


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, []),  # dbt chose profile and target: docs generate lets it choose them again
        (
            {"profile_flag": "jaffle_oml", "target_flag": "servers"},
            ["--profile", "jaffle_oml", "--target", "servers"],
        ),
    ],
)
def test_docs_generate_is_given_the_runs_own_flags(
    project: Path, flags: dict[str, str], expected: list[str]
) -> None:
    """dbt's partial parsing hashes --profile/--target as given: passing the resolved names
    (jaffle_oml, local) to a run given neither made `docs generate` parse everything again."""
    from dbt_oml.dbt.runner import docs_generate_args

    args = docs_generate_args(dbt_context(project, cli_vars={"fail_model": True}, **flags))
    given = [a for a in args if a in ("--profile", "--target") or a in flags.values()]
    assert given == expected
    assert args[args.index("--vars") + 1] == '{"fail_model": true}'
    assert args[args.index("--target-path") + 1] == str(project / "target")


@pytest.mark.parametrize(
    ("changes", "compiles"),
    [
        ({}, False),  # a build of the whole project compiled every node: the catalog needs no more
        ({"select": ("stg_orders",)}, True),  # a partial run: impact/lineage need the rest's SQL
        ({"selector": "nightly"}, True),
        ({"exclude": ("core_orders",)}, True),
        ({"command": "run"}, True),  # tests were not compiled (impact reads singular tests)
    ],
)
def test_docs_generate_compiles_only_what_the_run_did_not(
    project: Path, changes: dict[str, object], compiles: bool
) -> None:
    from dbt_oml.dbt.runner import docs_generate_args

    args = docs_generate_args(dbt_context(project, **changes))
    assert ("--no-compile" not in args) is compiles


@pytest.mark.parametrize("own_process", [True, False])
def test_what_dbt_holds_leaves_the_collector_in_dbt_omls_own_process(
    project: Path, own_process: bool
) -> None:
    """`dbt-oml build` (prestart: dbt runs in dbt-oml's process) freezes what is alive as the
    first node starts, so the collector's full passes stop walking dbt's parsed project; the
    plugin, a guest in a plain dbt, leaves dbt's collector as it is."""
    settings = settings_in(project.parent, transport=file_transport(project.parent / "e.jsonl"))
    live = LiveEmitter(
        settings, cwd=project.parent, report=Report(), redactor=Redactor(), prestart=own_process
    )
    live.on_invocation(dbt_context(project))
    before = gc.get_freeze_count()
    try:
        live.on_node_start(NodeStarted(unique_id=MODEL, started_at=STARTED))
        frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()
    assert (frozen > before) is own_process
    assert live.builder is not None
    assert live.builder.manifest.nodes  # the manifest was read
