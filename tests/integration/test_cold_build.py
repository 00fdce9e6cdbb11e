"""A cold pod's `dbt-oml build` of a project large enough for the lineage workers (issue 31):
they start while dbt runs (lineage.workers.Prestarted) and analyse the models after dbt, or
with --lineage-during-run each model as dbt finishes it (pipeline.running); either way the
events carry the column lineage a fresh analysis of the catalog gives (`dbt-oml emit` on a copy
without the cache)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRun, read_events, run_cli, run_script

pytestmark = pytest.mark.integration
#: Enough models for the lineage workers (lineage.batch.PARALLEL_THRESHOLD is 200).
MODELS = 210


def _project(root: Path) -> Path:
    import duckdb

    root.mkdir()
    with duckdb.connect(str(root / "raw.duckdb")) as con:
        con.execute("create table t (id integer, a varchar, b double, c date)")
    (root / "dbt_project.yml").write_text(
        "name: early\nversion: '1.0'\nconfig-version: 2\nprofile: early\n"
        "models:\n  early:\n    +materialized: view\n"
    )
    (root / "profiles.yml").write_text(
        "early:\n  target: local\n  outputs:\n    local:\n      type: duckdb\n"
        "      path: warehouse.duckdb\n      threads: 2\n      attach:\n"
        "        - path: raw.duckdb\n          alias: raw\n"
    )
    models = root / "models"
    models.mkdir()
    (models / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: raw\n    database: raw\n    schema: main\n"
        "    tables:\n      - name: t\n"
    )
    for i in range(MODELS):
        body = (
            "select id, a || 'x' as a, b * 2 as b, c from {{ source('raw', 't') }}"
            if i % 3
            else "select * from {{ source('raw', 't') }} where id > " + str(i)
        )
        (models / f"m_{i:03d}.sql").write_text(body)
    # the source named without source(): the workers see a model that reads nothing
    (models / "hard_star.sql").write_text("select * from raw.main.t")
    (models / "hard_named.sql").write_text("select id, a from raw.main.t")
    return root


def _lineage(events: list[dict[str, Any]], project: Path) -> dict[str, Any]:
    return {
        o["name"]: o["facets"]["columnLineage"]["fields"]
        for e in events
        for o in e.get("outputs", [])
        if "columnLineage" in o.get("facets", {})
    }


def _same_as_a_fresh_analysis(build: CliRun, project: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("lineage-cache", "logs"))
    emit = run_cli(["emit", "--profiles-dir", "."], cwd=copy)
    assert emit.returncode == 0, emit.stderr[-3000:]
    assert _lineage(build.events, project) == _lineage(emit.events, copy)
    assert len(_lineage(build.events, project)) == MODELS + 2


def test_a_cold_large_build_analyses_after_dbt_by_default(tmp_path: Path) -> None:
    """The default: no query of dbt-oml's while dbt runs, every model analysed after it."""
    project = _project(tmp_path / "early")
    build = run_cli(["build", "--profiles-dir", ".", "--oml-log-level", "DEBUG"], cwd=project)
    assert build.returncode == 0, build.stderr[-3000:]
    assert f"column lineage for {MODELS + 2} model(s); 0 opaque" in build.stderr
    assert "answered while dbt ran" not in build.stderr
    # the workers got the models as the catalog's rows came in, before catalog.json was written
    assert "column lineage: started on the catalog's rows" in build.stderr
    log = (project / "logs" / "dbt.log").read_text(encoding="utf-8")
    assert "dbt_oml_columns" not in log
    _same_as_a_fresh_analysis(build, project, tmp_path)


def test_a_cold_large_build_during_the_run_gives_the_lineage_a_fresh_analysis_gives(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path / "early")
    args = ["build", "--profiles-dir", ".", "--oml-log-level", "DEBUG", "--lineage-during-run"]
    build = run_cli(args, cwd=project)
    assert build.returncode == 0, build.stderr[-3000:]
    assert f"column lineage for {MODELS + 2} model(s); 0 opaque" in build.stderr
    # each model analysed by the workers as dbt finished it, over the relations it reads (the
    # `*` over the table named without source() from the model's own columns); the end only
    # looked them up, and its lineage is a fresh analysis's over every relation (below)
    assert f"column lineage: {MODELS + 2} models answered while dbt ran" in build.stderr
    assert f"column lineage: {MODELS + 2} models from the cache, 0 analysed here" in build.stderr
    # the columns were read in dbt's own threads: dbt closes every connection as its run ends,
    # and a query of a dbt-oml thread still running then failed the dbt command itself
    log = (project / "logs" / "dbt.log").read_text(encoding="utf-8").splitlines()
    queries = [line for line in log if "dbt_oml_columns" in line]
    assert queries
    assert not [line for line in queries if "[dbt-oml-" in line]
    _same_as_a_fresh_analysis(build, project, tmp_path)


#: `dbt-oml build` whose own catalog.json fails once dbt's catalog objects are to be made: after
#: the lineage workers got the models (dbt.catalog_file hands the catalog out first).
_OBJECTS_FAIL_ONCE = """
import sys
import dbt_oml.dbt.catalog_file as catalog_file
from dbt_oml.cli import run

made, failed = catalog_file.catalog_document, []


def fails_once(*args, **kwargs):
    if not failed:
        failed.append(True)
        raise RuntimeError("dbt's catalog objects failed")
    return made(*args, **kwargs)


catalog_file.catalog_document = fails_once
run()
"""


def test_a_catalog_that_fails_after_the_lineage_started_comes_from_docs_generate(
    tmp_path: Path,
) -> None:
    """The workers start on the catalog's rows before dbt's catalog objects are made; when those
    then fail, catalog.json comes from `dbt docs generate` as before, and the lineage the
    workers made is still every model's, as a fresh analysis of that file gives it."""
    project = _project(tmp_path / "early")
    args = ["build", "--profiles-dir", ".", "--oml-log-level", "DEBUG"]
    proc = run_script(_OBJECTS_FAIL_ONCE, args, cwd=project, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "column lineage: started on the catalog's rows" in proc.stderr
    assert "catalog.json by dbt docs generate: RuntimeError" in proc.stderr
    log = (project / "logs" / "dbt.log").read_text(encoding="utf-8")
    assert log.count("Running with dbt=") == 2  # the build, then docs generate
    catalog = json.loads((project / "target" / "catalog.json").read_text())
    assert len(catalog["nodes"]) == MODELS + 2
    target = project / "target"
    events = read_events(target / "openlineage" / "events.jsonl")
    build = CliRun(proc.returncode, proc.stdout, proc.stderr, events, project, target)
    assert f"column lineage for {MODELS + 2} model(s); 0 opaque" in proc.stderr
    _same_as_a_fresh_analysis(build, project, tmp_path)
