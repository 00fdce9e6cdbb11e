"""Every event the bundled project produces is valid against OpenLineage's own JSON schemas.

Each event is validated against RunEvent (core 2-0-2) and each of its facets against the schema
its `_schemaURL` names, all resolved from ../shared/openlineage-spec (no network), with the `uri`,
`date-time` and `uuid` formats really checked (tests/support/spec.py). Commands: build, a failing build,
seed, test, run -s, emit, and a plain `dbt build` with the plugin.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.pipeline.run_inputs import PRODUCER
from tests.conftest import RUN_STG_ORDERS, CliRun, run_cli, run_plain_dbt
from tests.support.spec import SPEC, SpecValidator, facets

pytestmark = [
    pytest.mark.integration,
    # the first test's setup runs seven dbt commands (the `runs` fixture): more than the default
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not SPEC.is_dir(), reason=f"OpenLineage JSON schemas not found at {SPEC} (../shared)"
    ),
]
#: Facets dbt-oml sends outside the place their kind names, on purpose; the schema of each is
#: still checked.
TOLERATED = frozenset(
    {
        # DataQualityAssertionsDatasetFacet is an InputDatasetFacet: dbt-oml sends it in
        # `inputFacets`, and in `facets` too, as dbt-ol does
        ("dataset", "dataQualityAssertions"),
        # ColumnLineageDatasetFacet is a DatasetFacet: OpenMetadata 1.12 reads column lineage
        # only from `outputFacets`, so it is in both
        ("output", "columnLineage"),
    }
)
COMMANDS = ["build", "failing build", "seed", "test", "run -s", "emit", "plugin build"]


@pytest.fixture(scope="module")
def validator() -> SpecValidator:
    return SpecValidator.for_dbt_oml()


@pytest.fixture(scope="module")
def scratch(built: CliRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the built project, warehouse included, for commands that need built tables."""
    dest = tmp_path_factory.mktemp("spec") / "project"
    # the lineage cache is left out: another xdist worker may be writing it (built is shared)
    ignore = shutil.ignore_patterns("logs", "*.wal", "lineage-cache")
    shutil.copytree(built.project, dest, ignore=ignore)
    return dest


def _in_scratch(scratch: Path, args: list[str], *, plugin: bool = False) -> CliRun:
    """One command in the scratch project, with only its own events in the events file."""
    (scratch / "target" / "openlineage" / "events.jsonl").unlink(missing_ok=True)
    if plugin:
        return run_plain_dbt(args, cwd=scratch, env={"DBT_OML_PLUGIN": "1"})
    return run_cli(args, cwd=scratch)


@pytest.fixture(scope="module")
def runs(
    built: CliRun, failed: CliRun, scratch: Path
) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """(exit code, events) of every command, run once for the module, in this order."""
    out = {"build": (built.returncode, built.events), "failed": (failed.returncode, failed.events)}
    for name, args, plugin in (
        # seed and run -s without `dbt docs generate`: the build's events above already carry
        # the same nodes' catalog columns; these take the warehouse's, as `test` and the plugin do
        ("seed", ["seed", "--profiles-dir", ".", "--no-docs-generate"], False),
        ("test", ["test", "--profiles-dir", "."], False),
        ("run -s", [*RUN_STG_ORDERS, "--no-docs-generate"], False),
        ("plugin build", ["build", "--profiles-dir", "."], True),
    ):
        run = _in_scratch(scratch, args, plugin=plugin)
        out[name] = (run.returncode, run.events)
    emitted = run_cli(["--dry-run", "emit", "--profiles-dir", "."], cwd=built.project)
    out["emit"] = (
        emitted.returncode,
        json.loads(emitted.stdout)["events"] if emitted.stdout else [],
    )
    out["failing build"] = out.pop("failed")
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_event_is_valid_against_the_spec(
    command: str,
    runs: dict[str, tuple[int, list[dict[str, Any]]]],
    validator: SpecValidator,
    record_property: Any,
) -> None:
    code, events = runs[command]
    assert code == (1 if command == "failing build" else 0)
    assert events, f"{command}: no events"
    record_property("events_validated", len(events))
    problems: dict[str, int] = {}
    for event in events:
        for problem in validator.errors(event, TOLERATED):
            problems[problem] = problems.get(problem, 0) + 1
    report = [f"{n} x {p}" for p, n in sorted(problems.items())]
    assert not report, f"{command}: {len(events)} events\n" + "\n".join(report)


@pytest.mark.parametrize("command", COMMANDS)
def test_producer_is_dbt_omls_on_the_event_and_every_facet(
    command: str, runs: dict[str, tuple[int, list[dict[str, Any]]]]
) -> None:
    _, events = runs[command]
    assert {e["producer"] for e in events} == {PRODUCER}
    others = {
        (f.key, f.doc["_producer"])
        for e in events
        for f in facets(e)
        if f.doc["_producer"] != PRODUCER
        # the client's own `tags` run facet (its version), added as it sends: its producer
        and not (f.key == "tags" and {t["source"] for t in f.doc["tags"]} == {"OPENLINEAGE_CLIENT"})
    }
    assert others == set()


def test_the_facets_that_were_checked(runs: dict[str, tuple[int, list[dict[str, Any]]]]) -> None:
    """The validation above covered the facets that matter (it passes vacuously otherwise)."""
    seen = {(f.place, f.key) for _, events in runs.values() for e in events for f in facets(e)}
    for expected in [
        ("run", "dbt_run"),
        ("run", "dbt_version"),
        ("run", "parent"),
        ("run", "errorMessage"),
        ("run", "test"),
        ("job", "sql"),
        ("dataset", "dataSource"),
        ("dataset", "schema"),
        ("dataset", "columnLineage"),
        ("input", "dataQualityAssertions"),
        ("output", "outputStatistics"),
    ]:
        assert expected in seen
    uris = {
        f.doc.get("uri", "")
        for _, events in runs.values()
        for e in events
        for f in facets(e)
        if f.key == "dataSource"
    }
    # a seed's CSV and the file a model reads: their own file:// URIs
    assert any(u.startswith("file:///") and u.endswith(".csv") for u in uris), sorted(uris)
    assert "file" not in uris
