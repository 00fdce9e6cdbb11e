"""Plugin mode survives a killed dbt: what finished before SIGKILL is already in the events file.

A generated project of chained view models is built twice with plain `dbt build` and the file
transport: once to the end, once killed with SIGKILL once about half of the models finished (read
from dbt's own output, line by line; no sleeps). Every model that finished before the kill has its
COMPLETE in the file, with schema and column lineage, equal to the same model's COMPLETE of the
full run apart from run ids, times and the project's directory.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env, read_events, run_plain_dbt
from tests.support.comparison import scrub
from tests.support.parse_cache import SAVED, give_parse

pytestmark = pytest.mark.integration

#: enough for the kill to land mid-build (a model takes ~0.1 s; dbt flushes each result line)
MODELS = 80
_OK = re.compile(r"OK created sql view model main\.(m\d{4})")


def generate(project: Path, models: int) -> Path:
    """A dbt-duckdb project of `models` view models, each reading the one before it."""
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: chain\nversion: '1.0'\nprofile: chain\nmodels:\n  chain:\n    +materialized: view\n"
    )
    (project / "profiles.yml").write_text(
        "chain:\n  target: local\n  outputs:\n    local:\n      type: duckdb\n"
        "      path: chain.duckdb\n      threads: 1\n"
    )
    (project / "models" / "m0000.sql").write_text(
        "select 1 as id, 'a' as name, 2.5 as amount, date '2026-01-01' as day\n"
    )
    for i in range(1, models):
        (project / "models" / f"m{i:04d}.sql").write_text(
            f"select id, upper(name) as name, amount + {i} as amount, day,\n"
            f"    id * {i} as scaled\nfrom {{{{ ref('m{i - 1:04d}') }}}}\n"
        )
    return project


def model_completes(events: list[dict[str, Any]], project: Path) -> dict[str, str]:
    """Each model's COMPLETE, comparable across runs (model name -> canonical JSON)."""
    out = {}
    for event in events:
        name = event["job"]["name"]
        if event["eventType"] == "COMPLETE" and name.endswith(".build.run"):
            text = json.dumps(event).replace(str(project), "<project>")
            out[name.split(".")[-3]] = json.dumps(scrub(json.loads(text)), sort_keys=True)
    return out


def test_sigkill_halfway_keeps_every_finished_models_complete(tmp_path: Path) -> None:
    env = {"DBT_OML_PLUGIN": "1"}
    full_project = generate(tmp_path / "full" / "p", MODELS)
    full = run_plain_dbt(["build", "--profiles-dir", "."], cwd=full_project, env=env)
    assert full.returncode == 0, full.stderr[-2000:]
    expected = model_completes(full.events, full_project)
    assert len(expected) == MODELS

    # the same files: dbt starts from the full run's parse (tests/support/parse_cache.py)
    project = give_parse(full_project / SAVED, generate(tmp_path / "killed" / "p", MODELS))
    dbt = str(Path(sys.executable).with_name("dbt"))
    proc = subprocess.Popen(
        [dbt, "build", "--profiles-dir", "."],
        cwd=project,
        env=clean_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    finished: list[str] = []
    try:
        for line in proc.stdout:  # ends when dbt ends: bounded by the build itself
            if found := _OK.search(line):
                finished.append(found.group(1))
            if len(finished) >= MODELS // 2:
                proc.send_signal(signal.SIGKILL)
                break
        rest = proc.stdout.read()  # what dbt printed before it died
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    finished += _OK.findall(rest)
    assert MODELS // 2 <= len(finished) < MODELS

    got = model_completes(read_events(project / "target" / "openlineage" / "events.jsonl"), project)
    # dbt prints a model's result line just before its NodeFinished event: the model dbt was
    # finishing at the instant of the kill may not have had its event queued yet
    missing = [m for m in finished if m not in got]
    assert set(missing) <= set(finished[-1:]), missing
    assert len(got) >= MODELS // 2 - 1
    assert set(got) <= set(finished)
    for model, event in got.items():
        assert event == expected[model], model
        doc = json.loads(event)
        output = doc["outputs"][0]["facets"]
        assert [f["name"] for f in output["schema"]["fields"]][:2] == ["id", "name"]
        if model != "m0000":
            assert set(output["columnLineage"]["fields"]) == {
                "id",
                "name",
                "amount",
                "day",
                "scaled",
            }
