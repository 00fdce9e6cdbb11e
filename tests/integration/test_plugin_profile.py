"""Plugin mode switched on from the profile: a `dbt_oml.duckdb` entry in the target's `plugins:`.

Plain `dbt` runs with no DBT_OML_* variable; the entry's `config:` carries dbt-oml's settings.
Precedence: the environment variable, then the dbt var, then the profile.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliRun, copy_project, run_plain_dbt
from tests.support.parse_cache import SAVED, give_parse

pytestmark = pytest.mark.integration

_ENTRY = """      plugins:
        - module: dbt_oml.duckdb
          config:
            events_file: lineage/events.jsonl
            job_namespace: from_profile
"""


def _with_entry(project: Path) -> Path:
    profiles = project / "profiles.yml"
    text = profiles.read_text()
    anchor = "          alias: dw\n    servers:\n"
    assert anchor in text
    profiles.write_text(
        text.replace(anchor, "          alias: dw\n" + _ENTRY + "    servers:\n", 1)
    )
    return project


@pytest.fixture(scope="module")
def profiled_build(tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    """A plain `dbt build` of the project with the entry in its profile."""
    proj = _with_entry(copy_project(tmp_path_factory.mktemp("profiled") / "project"))
    return run_plain_dbt(["build", "--profiles-dir", "."], cwd=proj)


@pytest.fixture
def profiled(project: Path, profiled_build: CliRun) -> Path:
    """A fresh copy with the entry, and dbt's parse of the same files and profile (the build's;
    the bundled profile's parse would not fit): dbt skips its full parse unless the test
    changes the profile or passes --vars."""
    return _with_entry(give_parse(profiled_build.project / SAVED, project))


def _events(project: Path) -> list[dict[str, Any]]:
    path = project / "lineage" / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_plugin_switched_on_in_the_profile_with_its_settings(profiled_build: CliRun) -> None:
    run = profiled_build
    assert run.returncode == 0, run.stderr[-2000:]
    events = _events(run.project)
    assert len(events) == 90
    assert {e["job"]["namespace"] for e in events} == {"from_profile"}
    assert not (run.target / "openlineage" / "events.jsonl").exists()
    models = [
        e for e in events if e["eventType"] == "COMPLETE" and ".build.run" in e["job"]["name"]
    ]
    assert models
    assert all(e["outputs"][0]["facets"]["schema"]["fields"] for e in models)


@pytest.mark.parametrize(
    ("args", "env"),
    [
        ([], {"DBT_OML_PLUGIN": "0"}),
        (["--vars", "{dbt_oml_plugin: false}"], {}),
    ],
    ids=["env-off-wins", "var-off-wins"],
)
def test_env_and_var_win_over_the_profile(
    profiled: Path, args: list[str], env: dict[str, str]
) -> None:
    run = run_plain_dbt(
        ["run", "--profiles-dir", ".", "-s", "stg_orders", *args], cwd=profiled, env=env
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert _events(profiled) == []


def test_bad_setting_in_the_profile_leaves_dbt_alone(profiled: Path) -> None:
    profiles = profiled / "profiles.yml"
    profiles.write_text(profiles.read_text().replace("job_namespace:", "job_namespaec:", 1))
    run = run_plain_dbt(["run", "--profiles-dir", ".", "-s", "stg_orders"], cwd=profiled)
    assert run.returncode == 0
    lines = [line for line in run.stderr.splitlines() if line.startswith("dbt-oml plugin:")]
    assert len(lines) == 1
    assert "job_namespaec" in lines[0]
    assert _events(profiled) == []
