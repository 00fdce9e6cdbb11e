"""dbt-ol compatibility: OpenLineage's own dbt fixtures through `dbt-oml emit`, compared strictly.

The fixtures (artifacts plus the events dbt-ol emits for them; Apache-2.0, OpenLineage project)
are read from ../shared/dbt-ol-fixtures at test time and copied to a temporary directory only.
Upstream compares with a lenient matcher (subset match; for lists of named objects only the first
element). Here every field dbt-oml promises to keep compatible (`promised`) must be equal, lists
in full; the fields outside that promise are the intended differences the README lists.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED

FIXTURES = SHARED / "dbt-ol-fixtures"
CASES = [
    "alias",
    "build",
    "catalog",
    "compiled_code",
    "duckdb",
    "env_vars",
    "fail",
    "large",
    "no_test_metadata",
    "postgres",
    "singular_test",
    "small",
    "snapshot",
    "spark/odbc",
    "spark/thrift",
    "test",
]
#: What the upstream driver (test_dbt_local.py) sets up around the processor.
ORCHESTRATOR = {
    "OPENLINEAGE_DBT_JOB_NAME": "dbt-job-name",
    "OPENLINEAGE_PARENT_ID": "dbt/dbt-job-name/f99310b4-3c3c-1a1a-2b2b-c1b95c24ff11",
    "OPENLINEAGE_ROOT_PARENT_ID": (
        "root-parent-job-namespace/root-parent-job-name/f99310b4-3c3c-4d4d-2b2b-c1b95c24ff11"
    ),
}
#: The profiles' env_var() values, as the upstream case sets them.
CASE_ENV = {
    "env_vars": {
        "HOST": "foo_host",
        "PORT": "1111",
        "DB_NAME": "foo_db_name",
        "USER_NAME": "foo_user",
        "PASSWORD": "foo_password",
        "SCHEMA": "foo_schema",
    }
}
#: Known errors in the fixtures themselves (docs/reference/dbt-ol.md section 18), patched before
#: comparing.
FIXTURE_ERRATA: dict[str, list[tuple[int, str, str, str]]] = {
    # the second model's COMPLETE names the first model as its output
    "compiled_code": [
        (3, "outputs.0.name", "my_first_dbt_model", "my_second_dbt_model"),
    ],
    # START names the model, COMPLETE its alias: one relation under two names
    "alias": [(0, "outputs.0.name", "test_model", "test_model_alias")],
    # a START input named after the test job instead of the tested model
    "test": [
        (
            1,
            "inputs.0.name",
            "test_second_parallel_dbt_model.test",
            "test_second_parallel_dbt_model",
        ),
    ],
}

#: Upstream's placeholder for "any value" (the field must be there).
ANY = "{{ any(result) }}"

#: Intended differences inside promised fields, as (case, event, path, dbt-ol's, dbt-oml's).
INTENDED: dict[str, list[tuple[int, str, str, str]]] = {
    # dbt reported no failure count: dbt-ol puts dbt's message into `actual`, dbt-oml leaves
    # `actual` out (it is a count of failing rows)
    "no_test_metadata": [
        (0, "inputs.0.inputFacets.dataQualityAssertions.assertions.1.actual", "Test failure", ""),
        (9, "inputs.0.inputFacets.dataQualityAssertions.assertions.1.actual", "Test failure", ""),
    ],
}

pytestmark = pytest.mark.integration
needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"dbt-ol fixtures not found at {FIXTURES}"
)


def _set(doc: Any, path: str, old: str, new: str) -> None:
    *parents, last = path.split(".")
    for part in parents:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    key: Any = int(last) if isinstance(doc, list) else last
    assert doc[key].endswith(old), (path, doc[key])
    if new:
        doc[key] = doc[key][: -len(old)] + new
    else:
        del doc[key]


def expected_events(case: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads((FIXTURES / case / "result.json").read_text())
    for index, path, old, new in FIXTURE_ERRATA.get(case, []) + INTENDED.get(case, []):
        _set(events[index], path, old, new)
    return events


def _pick(doc: Any, *keys: str) -> dict[str, Any]:
    return {k: doc[k] for k in keys if isinstance(doc, dict) and k in doc}


def promised(event: dict[str, Any]) -> dict[str, Any]:
    """The fields dbt-oml keeps as dbt-ol has them, taken from an event of either tool."""
    job, run = event.get("job", {}), event.get("run", {}).get("facets", {})
    job_facets = job.get("facets", {})
    out: dict[str, Any] = {
        "eventType": event["eventType"],
        "job": {"namespace": job["namespace"], "name": job["name"]},
        "jobType": _pick(job_facets.get("jobType"), "processingType", "integration", "jobType"),
        # START goes out live, before dbt compiles the node: the SQL is on COMPLETE/FAIL
        "sql": {}
        if event["eventType"] == "START"
        else _pick(job_facets.get("sql"), "query", "dialect"),
        "dbt_version": _pick(run.get("dbt_version"), "version"),
        "processing_engine": _pick(run.get("processing_engine"), "name", "version"),
        "dbt_run": _pick(
            run.get("dbt_run"),
            "invocation_id",
            "project_name",
            "project_version",
            "profile_name",
            "dbt_runtime",
        ),
        "test": [
            _pick(t, "name", "status", "severity", "type", "expected", "actual")
            for t in run.get("test", {}).get("tests") or ()
        ],
        "tags": run.get("tags", {}).get("tags"),
        "parent": {
            "job_name": run.get("parent", {}).get("job", {}).get("name"),
            "root": run.get("parent", {}).get("root"),
        },
        "outputs": [_dataset(o) for o in event.get("outputs") or ()],
        "inputs": {i["name"]: _dataset(i) for i in event.get("inputs") or ()},
    }
    return out


def _dataset(ds: dict[str, Any]) -> dict[str, Any]:
    facets = ds.get("facets") or {}
    fields = (facets.get("schema") or {}).get("fields")
    assertions = ((ds.get("inputFacets") or {}).get("dataQualityAssertions") or {}).get(
        "assertions"
    )
    return {
        "name": ds["name"],
        "documentation": (facets.get("documentation") or {}).get("description"),
        "schema": [_pick(f, "name", "type", "description") for f in fields] if fields else None,
        # dbt-ol keeps run_results' (thread-dependent) order; dbt-oml sorts by test: compare
        # as multisets
        "assertions": sorted(
            (
                _pick(a, "assertion", "column", "success", "severity", "actual", "expected")
                for a in assertions
            ),
            key=lambda a: json.dumps(a, sort_keys=True),
        )
        if assertions
        else None,
    }


def mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Every place where `expected` (a projection) is set and `actual` differs; lists in full."""
    if expected is None or expected in ({}, []):
        return []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                if value not in (None, {}, []):
                    out.append(f"{path}.{key}: missing (expected {value!r})"[:300])
                continue
            out += mismatches(value, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"[:300]]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in mismatches(e, a, f"{path}[{i}]")
        ]
    if expected == ANY:
        return []
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"[:300]]


def emit(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, Any]]:
    """`dbt-oml emit --dry-run` on the case, in this process: emit runs no dbt command (it reads
    artifacts and renders the profile), so no dbt state outlives it; the environment is the
    test's own (tests/conftest.py clears DBT_*, OPENLINEAGE* and DBT_OML_* first)."""
    from dbt_oml.cli import main

    project = tmp_path / case.replace("/", "_")
    shutil.copytree(FIXTURES / case, project)
    namespace = expected_events(case)[0]["job"]["namespace"]
    for key, value in {**ORCHESTRATOR, "OPENLINEAGE_NAMESPACE": namespace}.items():
        monkeypatch.setenv(key, value)
    for key, value in CASE_ENV.get(case, {}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(project)
    capsys.readouterr()
    code = main(["emit", "--dry-run", "--profiles-dir", ".", "--allow-empty-column-lineage"])
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    events: list[dict[str, Any]] = json.loads(out)["events"]
    return events


def test_the_comparator_is_strict() -> None:
    # upstream's matcher accepts this (it compares a named list's first element only)
    assert mismatches([{"name": "a", "v": 1}], [{"name": "zzz", "v": 5}])
    assert mismatches({"a": [1, 2]}, {"a": [1]})
    assert mismatches({"a": {"b": "x"}}, {"a": {}})
    assert not mismatches({"a": ANY, "b": None}, {"a": "anything"})
    assert mismatches({"a": ANY}, {})


@needs_fixtures
@pytest.mark.parametrize("case", CASES)
def test_fixture(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ours = emit(case, tmp_path, monkeypatch, capsys)
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for event in ours:
        by_key.setdefault((event["job"]["name"], event["eventType"]), event)
    problems = []
    for expected in expected_events(case):
        key = (expected["job"]["name"], expected["eventType"])
        if key not in by_key:
            problems.append(f"{key}: no such event; ours: {sorted(by_key)}")
            continue
        want, got = promised(expected), promised(by_key[key])
        # dbt-oml names more inputs (seeds, snapshots, tables behind ephemeral models): every
        # input dbt-ol names must be there, with the same facets
        got_inputs = got.pop("inputs")
        for name, dataset in want.pop("inputs").items():
            if name not in got_inputs:
                problems.append(f"{key} input {name}: missing; ours: {sorted(got_inputs)}")
            else:
                problems += mismatches(dataset, got_inputs[name], f"{key} input {name}")
        problems += mismatches(want, got, str(key))
    assert not problems, "\n".join(problems)
