from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbt_oml.artifacts import (
    KEPT_RUN_RESULTS,
    read_artifacts,
    read_catalog,
    read_manifest,
    read_run_results,
)
from dbt_oml.errors import ArtifactError


def test_reads_the_mini_artifacts(mini_target: Path) -> None:
    arts = read_artifacts(mini_target)
    man = arts.manifest
    assert man.project_name == "jaffle_oml"
    assert man.adapter_type == "duckdb"
    src = man.nodes["source.jaffle_oml.crm.customers"]
    assert (src.database, src.schema, src.identifier) == ("crm", "sales", "Customers")
    eph = man.nodes["model.jaffle_oml.stg_payments"]
    assert eph.materialized == "ephemeral"
    assert not eph.is_relation
    assert arts.run_results is not None
    assert arts.run_results.command == "build"
    statuses = {r.unique_id: r.status for r in arts.run_results.results}
    assert statuses["model.jaffle_oml.core_order_audit"] == "error"
    assert arts.catalog is not None
    cols = arts.catalog.columns["model.jaffle_oml.stg_orders"]
    assert [c.name for c in cols][:2] == ["order_id", "customer_id"]
    assert cols[0].type == "INTEGER"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError) as err:
        read_manifest(tmp_path / "manifest.json")
    assert err.value.path.endswith("manifest.json")
    assert err.value.reason == "not found"


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "run_results.json"
    path.write_text('{"metadata": {')
    with pytest.raises(ArtifactError) as err:
        read_run_results(path)
    assert err.value.path == str(path)
    assert "not valid JSON" in err.value.reason


def test_not_an_artifact(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text("[1, 2]")
    with pytest.raises(ArtifactError) as err:
        read_catalog(path)
    assert err.value.path == str(path)
    assert "no metadata" in err.value.reason


@pytest.mark.parametrize(
    ("version", "hint"),
    [("v13", "upgrade dbt-oml"), ("v1", "upgrade dbt")],
)
def test_unsupported_schema_version(tmp_path: Path, version: str, hint: str) -> None:
    path = tmp_path / "manifest.json"
    url = f"https://schemas.getdbt.com/dbt/manifest/{version}.json"
    path.write_text(json.dumps({"metadata": {"dbt_schema_version": url}, "nodes": {}}))
    with pytest.raises(ArtifactError) as err:
        read_manifest(path)
    assert err.value.hint == hint


def test_wrong_kind_of_artifact(tmp_path: Path, mini_target: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text((mini_target / "run_results.json").read_text())
    with pytest.raises(ArtifactError) as err:
        read_manifest(path)
    assert err.value.path == str(path)
    assert "no manifest dbt_schema_version" in err.value.reason


def test_malformed_node(tmp_path: Path, mini_target: Path) -> None:
    doc = json.loads((mini_target / "manifest.json").read_text())
    doc["nodes"]["model.x.broken"] = {"name": "broken"}  # no unique_id
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError) as err:
        read_manifest(path)
    assert err.value.path == str(path)
    assert "malformed node" in err.value.reason


def test_unknown_fields_are_ignored(tmp_path: Path, mini_target: Path) -> None:
    doc = json.loads((mini_target / "run_results.json").read_text())
    doc["brand_new_field"] = {"x": 1}
    doc["results"][0]["another_new_field"] = [1]
    path = tmp_path / "run_results.json"
    path.write_text(json.dumps(doc))
    assert read_run_results(path).results[0].unique_id == doc["results"][0]["unique_id"]


def test_docs_generate_results_are_replaced_by_the_kept_copy(mini_target: Path) -> None:
    build = json.loads((mini_target / "run_results.json").read_text())
    (mini_target / KEPT_RUN_RESULTS).parent.mkdir(parents=True)
    (mini_target / KEPT_RUN_RESULTS).write_text(json.dumps(build))  # left by a killed build
    docs = dict(build, args={"which": "generate"}, results=[])
    (mini_target / "run_results.json").write_text(json.dumps(docs))
    arts = read_artifacts(mini_target)
    assert arts.run_results is not None
    assert arts.run_results.command == "build"
    assert len(arts.run_results.results) == len(build["results"])


def test_catalog_is_optional(mini_target: Path) -> None:
    (mini_target / "catalog.json").unlink()
    assert read_artifacts(mini_target).catalog is None


# -- hostile artifacts: optional ones warn, required ones name the file, nothing is dropped -------


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "is not valid JSON"),
        (
            json.dumps(
                {
                    "metadata": {
                        "dbt_schema_version": "https://schemas.getdbt.com/dbt/catalog/v1.json"
                    },
                    "nodes": [{"unique_id": "model.jaffle_oml.stg_orders", "columns": {}}],
                }
            ),
            "`nodes` is a list, not an object",
        ),
    ],
    ids=["corrupt", "nodes-list"],
)
def test_an_unreadable_catalog_is_a_warning(mini_target: Path, content: str, reason: str) -> None:
    path = mini_target / "catalog.json"
    path.write_text(content)
    with pytest.raises(ArtifactError) as err:
        read_catalog(path)
    assert err.value.path == str(path)
    arts = read_artifacts(mini_target)
    assert arts.catalog is None
    [problem] = arts.problems
    assert problem.startswith(str(path))
    assert reason in problem
    assert problem.endswith("schema facets use the declared columns")


def test_results_that_are_not_a_list_name_the_file(mini_target: Path) -> None:
    path = mini_target / "run_results.json"
    doc = json.loads(path.read_text())
    doc["results"] = {"model.x": {}}
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError) as err:
        read_run_results(path)
    assert err.value.path == str(path)
    assert err.value.hint == "re-run dbt to rewrite it"


def _damage_results(target: Path) -> None:
    path = target / "run_results.json"
    doc = json.loads(path.read_text())
    for result in doc["results"]:
        if result["unique_id"] == "model.jaffle_oml.stg_orders":
            result["timing"][0]["started_at"] = "yesterday"
            result["timing"][1]["started_at"] = 17
            result["timing"][1]["completed_at"] = "soon"
        if result["unique_id"] == "model.jaffle_oml.stg_customers":
            result["status"] = "Weird"
        if result["unique_id"] == "test.jaffle_oml.not_null_core_orders_order_id.bc02f3a29c":
            result["timing"] = "later"
    path.write_text(json.dumps(doc))


def test_bad_timing_and_unknown_status_are_read_with_warnings(mini_target: Path) -> None:
    _damage_results(mini_target)
    problems = read_artifacts(mini_target).problems
    assert problems == (
        "run_results.json: model.jaffle_oml.stg_orders: unreadable started_at='yesterday', "
        "started_at=17, completed_at='soon' (its events use the run's times)",
        "run_results.json: model.jaffle_oml.stg_customers: unknown status 'weird' "
        "(its run ends as FAIL)",
        "run_results.json: test.jaffle_oml.not_null_core_orders_order_id.bc02f3a29c: "
        "unreadable timing='later' (its events use the run's times)",
    )


def test_no_event_is_dropped_for_bad_timing_or_status(mini_target: Path) -> None:
    from tests.support.events import event_by, events_of

    intact = events_of(mini_target)
    _damage_results(mini_target)
    damaged = events_of(mini_target)
    assert len(damaged) == len(intact)
    orders = event_by(damaged, "stg_orders.build.run", "START")
    assert orders["eventTime"] == "2026-11-30T03:55:00.000Z"  # the invocation's start
    failed = event_by(damaged, "stg_customers.build.run", "FAIL")
    message = failed["run"]["facets"]["errorMessage"]["message"]
    assert message == "dbt reported status 'weird', which dbt-oml does not know: OK"


@pytest.mark.parametrize("name", ["run_results.json", "manifest.json", "catalog.json"])
def test_an_artifact_nested_too_deep_is_one_line(mini_target: Path, name: str) -> None:
    """JSON nested 100,000 deep: the same one-line ArtifactError as invalid JSON (a required
    artifact: exit 3), or a problem for the optional catalog; never a RecursionError."""
    (mini_target / name).write_text("[" * 100_000)
    if name == "catalog.json":
        assert read_artifacts(mini_target).catalog is None
        return
    with pytest.raises(ArtifactError) as refused:
        read_artifacts(mini_target)
    assert "nested too deep" in str(refused.value)
    assert name in str(refused.value)


@pytest.mark.parametrize("name", ["run_results.json", "manifest.json"])
def test_an_artifact_too_large_to_load_is_one_line(
    mini_target: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MemoryError while loading a required artifact is the same one-line ArtifactError."""
    import json as json_module

    big = (mini_target / name).read_bytes()
    real = json_module.loads

    def out_of_memory(raw: bytes, **kwargs: object) -> object:
        if raw == big:
            raise MemoryError
        return real(raw, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(json_module, "loads", out_of_memory)
    with pytest.raises(ArtifactError) as refused:
        read_artifacts(mini_target)
    assert str(refused.value).startswith(f"{mini_target / name}: is too large to load")
