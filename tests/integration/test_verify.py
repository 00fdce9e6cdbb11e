"""`dbt-oml verify`: what a run's events should have made in OpenMetadata, read back from the OM
stand-in after a real `dbt-oml build` into it, then with parts of it taken away."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import CliRun, copy_project, run_cli
from tests.support.fakes.openmetadata import FakeOpenMetadata, serve, transport_env

pytestmark = pytest.mark.integration

NAMESPACES = ["--duckdb-namespace", "duckdb://pod/{alias}"]


@pytest.fixture(scope="module")
def om_built(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[FakeOpenMetadata, Path, dict[str, str]]]:
    om = FakeOpenMetadata.with_bot()
    project = copy_project(tmp_path_factory.mktemp("verify") / "project")
    with serve(om) as url:
        env = transport_env(url, project)
        built = run_cli(["build", "--profiles-dir", ".", *NAMESPACES], cwd=project, env=env)
        assert built.returncode == 0, built.stderr[-2000:]
        yield om, project, env


def _verify(project: Path, env: dict[str, str], *extra: str) -> CliRun:
    return run_cli(["verify", "--profiles-dir", ".", *NAMESPACES, *extra], cwd=project, env=env)


def _lines(run: CliRun, state: str) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith(state)]


def test_a_delivered_run_reads_back_with_what_om_dropped_itself(
    om_built: tuple[FakeOpenMetadata, Path, dict[str, str]],
) -> None:
    """After a build OM took whole, every table and edge is there. One thing is not, and it is
    OM's doing: the external_location source `api.matches` (JSON files, columns unknown to dbt)
    is a table without columns in OM, so OM keeps its edge but drops the column lineage the
    event carried (ref §2.5). verify says so, with the columns."""
    om, project, env = om_built
    before = len(om.requests)
    run = _verify(project, env)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    present = _lines(run, "present")
    assert any(" table " in line for line in present)
    assert any(" edge " in line and " -> " in line for line in present)
    assert _lines(run, "MISSING") == []
    (different,) = _lines(run, "DIFFERENT")
    assert "warehouse.api.matches -> " in different
    assert "stg_match_events" in different
    assert "holds none of the columns it reads: _meta, events, response, season" in different
    assert f"dbt-oml verify: {len(present)} present, 0 missing, 1 different" in run.stderr
    writes = [r for r in om.requests[before:] if r.method in ("POST", "PUT", "PATCH", "DELETE")]
    assert writes == []  # it reads only


def test_what_om_lost_is_named_with_the_reason(
    om_built: tuple[FakeOpenMetadata, Path, dict[str, str]],
) -> None:
    om, project, env = om_built
    names = {t["id"]: fqn for fqn, t in om.entities["table"].items()}
    with_lineage = [k for k, d in om.edges.items() if d.get("columnsLineage")]
    dropped, emptied = with_lineage[0], with_lineage[1]
    saved = {k: dict(om.edges[k]) for k in (dropped, emptied)}
    del om.edges[dropped]
    om.edges[emptied] = {**om.edges[emptied], "columnsLineage": []}
    targets = {names[dropped[1]], names[emptied[1]]}  # their edges must still be read
    gone = next(
        f for f in om.entities["table"] if f.endswith(".marts.dim_customers") and f not in targets
    )
    table = om.entities["table"].pop(gone)  # someone deleted it in OM
    try:
        run = _verify(project, env)
    finally:
        om.edges.update(saved)
        om.entities["table"][gone] = table
    assert run.returncode == 1, run.stderr[-2000:]
    missing = _lines(run, "MISSING")
    assert any(
        f"{names[dropped[0]]} -> {names[dropped[1]]}: OpenMetadata holds no such edge" in x
        for x in missing
    ), missing
    assert any(f"table          {gone}: OpenMetadata has no such table" in x for x in missing)
    emptied_line = [
        x for x in _lines(run, "DIFFERENT") if f"{names[emptied[0]]} -> {names[emptied[1]]}" in x
    ]
    assert emptied_line
    assert "the edge holds no column lineage" in emptied_line[0]


def test_a_namespace_om_has_no_service_for_is_said_so(
    om_built: tuple[FakeOpenMetadata, Path, dict[str, str]],
) -> None:
    _, project, env = om_built
    run = _verify(project, env, "--namespaces", "crm=mssql://nowhere:1433")
    assert run.returncode == 1, run.stderr[-2000:]
    unmapped = [
        line for line in _lines(run, "MISSING") if "unmapped namespace mssql://nowhere:1433" in line
    ]
    assert unmapped


def test_without_openmetadata_it_is_one_line_and_exit_3(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "project")
    run = run_cli(["verify", "--profiles-dir", "."], cwd=project)
    assert run.returncode == 3
    assert "no openmetadata transport is configured" in run.stderr
    assert "Traceback" not in run.stderr


def test_verify_true_reads_back_after_the_delivery(
    om_built: tuple[FakeOpenMetadata, Path, dict[str, str]],
) -> None:
    """`verify: true`: the run's own summary says what OM holds after its delivery; the exit
    code is the delivery's, not the read-back's."""
    _, project, env = om_built
    run = run_cli(
        ["emit", "--profiles-dir", ".", *NAMESPACES],
        cwd=project,
        env={**env, "DBT_OML_VERIFY": "1"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    (summary,) = [x for x in run.stderr.splitlines() if x.startswith("dbt-oml: verify: ")]
    assert summary.endswith(
        "present, 1 missing or different in OpenMetadata; `dbt-oml verify` lists them"
    )
    (problem,) = [x for x in run.stderr.splitlines() if "WARNING: verify: different" in x]
    assert "warehouse.api.matches -> " in problem


def test_verify_true_reads_back_after_a_replay(
    om_built: tuple[FakeOpenMetadata, Path, dict[str, str]], tmp_path: Path
) -> None:
    """Events kept in a file, then sent with `dbt-oml replay`: with `verify: true` the replay's
    summary says what OpenMetadata holds after it, as emit's does."""
    _, project, env = om_built
    kept = tmp_path / "kept.jsonl"
    made = run_cli(  # no OpenMetadata here: the events go to the file
        ["emit", "--profiles-dir", ".", *NAMESPACES, "--events-file", str(kept)], cwd=project
    )
    assert made.returncode == 0, made.stderr[-2000:]
    assert kept.is_file(), made.stderr[-2000:]
    run = run_cli(["replay", str(kept)], cwd=project, env={**env, "DBT_OML_VERIFY": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    said = [x for x in run.stderr.splitlines() if x.startswith("dbt-oml: verify: ")]
    assert len(said) == 1, run.stderr[-3000:]
    summary = said[0]
    assert summary.endswith(
        "present, 1 missing or different in OpenMetadata; `dbt-oml verify` lists them"
    )
