"""dbt.quick_project resolves a DuckDB project as dbt's own loaders do (issue 31: they cost a
cold emit 0.9 s and 80 MiB): on the bundled project's targets, on hand-picked profiles, and on
generated ones, it gives dbt's answer or none (then dbt's loaders decide)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbt_oml.dbt.project import ProjectOptions, ResolvedProject, dbt_resolved, quick_resolved
from dbt_oml.errors import DbtOmlError

BUNDLED = Path(__file__).resolve().parents[2] / "integration_project"


def _both(options: ProjectOptions, profiles: Path) -> tuple[ResolvedProject | None, Any]:
    """(the quick answer, dbt's answer or the exception dbt raised)."""
    quick = quick_resolved(options, profiles)
    try:
        slow: Any = dbt_resolved(options, profiles)
    except (DbtOmlError, Exception) as e:  # noqa: BLE001 - dbt's refusal is an answer here
        slow = e
    return quick, slow


@pytest.mark.parametrize("target", ["local", "servers"])
@pytest.mark.parametrize(
    "environ",
    [{}, {"DBT_OML_PG_PASSWORD": "s3cret", "DBT_OML_MYSQL_HOST": "db.internal"}],
)
def test_the_bundled_project_is_resolved_quickly_and_as_dbt_does(
    target: str, environ: dict[str, str]
) -> None:
    options = ProjectOptions(project_dir=BUNDLED, target=target, environ=environ)
    quick, slow = _both(options, BUNDLED)
    assert quick is not None
    assert quick == slow
    if environ:
        assert "s3cret" in quick.secrets or target == "local"


def _write(root: Path, project: dict[str, Any], profiles: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(yaml.safe_dump(project))
    (root / "profiles.yml").write_text(yaml.safe_dump(profiles))
    return root


CASES: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {
    # name: (target output, cli vars, resolved quickly)
    "memory": ({"type": "duckdb"}, {}, True),
    "file with attachments": (
        {
            "type": "duckdb",
            "path": "{{ env_var('WH', 'wh.duckdb') }}",
            "attach": [{"path": "/srv/a.duckdb"}, {"path": "s3://b/c.duckdb", "alias": "c"}],
        },
        {},
        True,
    ),
    "lone var keeps its type": (
        {"type": "duckdb", "path": "x.duckdb", "threads": "{{ var('threads') }}"},
        {"threads": 4},
        True,
    ),
    "database as its file": ({"type": "duckdb", "path": "dw.duckdb", "database": "dw"}, {}, True),
    "database as an attachment's alias": (
        {
            "type": "duckdb",
            "path": "a.duckdb",
            "database": "b",
            "attach": [{"path": "b.duckdb", "alias": "b"}],
        },
        {},
        False,
    ),
    "database apart from its file": (
        {"type": "duckdb", "path": "a.duckdb", "database": "zz"},
        {},
        False,
    ),
    "two dots": ({"type": "duckdb", "path": "my.db.duckdb"}, {}, False),
    "motherduck": ({"type": "duckdb", "path": "md:my_db"}, {}, False),
    "a missing variable": ({"type": "duckdb", "path": "{{ env_var('NOPE') }}"}, {}, False),
    "another jinja name": ({"type": "duckdb", "path": "{{ target_name }}.duckdb"}, {}, False),
    "a filter": ({"type": "duckdb", "path": "{{ 'x' | upper }}.duckdb"}, {}, False),
    "a secret variable": (
        {"type": "duckdb", "path": "{{ env_var('DBT_ENV_SECRET_P', 'x.duckdb') }}"},
        {},
        False,
    ),
    "postgres": (
        {"type": "postgres", "host": "h", "user": "u", "dbname": "d", "schema": "s"},
        {},
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_picked_profiles(case: str, tmp_path: Path) -> None:
    output, cli_vars, quickly = CASES[case]
    root = _write(
        tmp_path / "p",
        {"name": "proj", "version": "1.0", "profile": "prof", "config-version": 2},
        {"prof": {"target": "dev", "outputs": {"dev": output}}},
    )
    options = ProjectOptions(project_dir=root, cli_vars=cli_vars, environ={"WH": "env.duckdb"})
    quick, slow = _both(options, root)
    assert (quick is not None) == quickly, slow
    if quick is not None:
        assert quick == slow


_NAMES = st.sampled_from(["a", "b", "wh", "raw", "x"])
_PATHS = st.sampled_from(
    [":memory:", "a.duckdb", "dir/b.duckdb", "/abs/wh.duckdb", "x.db.duckdb", ".h.duckdb",
     "md:my_db", "s3://bucket/raw.duckdb", "host=h port=5432", "{{ env_var('P', 'e.duckdb') }}",
     "{{ env_var('SET') }}/c.duckdb", "{{ env_var('UNSET') }}.duckdb"]
)  # fmt: skip
_ATTACH = st.fixed_dictionaries(
    {"path": _PATHS},
    optional={
        "alias": _NAMES,
        "type": st.sampled_from(["duckdb", "postgres", "mysql", "sqlite", "ducklake"]),
        "read_only": st.booleans(),
    },
)
_OUTPUT = st.fixed_dictionaries(
    {"type": st.just("duckdb")},
    optional={
        "path": _PATHS,
        "database": _NAMES,
        "threads": st.integers(1, 8),
        "attach": st.lists(_ATTACH, max_size=3),
        "external_root": st.just("out"),
        "remote": st.just({"host": "h", "port": 1}),
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(output=_OUTPUT, target_by_env=st.booleans())
def test_generated_profiles_are_dbts_answer_or_left_to_dbt(
    output: dict[str, Any], target_by_env: bool, tmp_path: Path
) -> None:
    profile = {
        "target": "{{ env_var('TGT', 'dev') }}" if target_by_env else "dev",
        "outputs": {"dev": output, "other": {"type": "duckdb", "path": "{{ env_var('UNSET') }}"}},
    }
    root = _write(
        tmp_path / "g",
        {"name": "gen", "profile": "prof", "config-version": 2, "target-path": "tgt"},
        {"prof": profile},
    )
    options = ProjectOptions(project_dir=root, environ={"SET": "/set"})
    quick, slow = _both(options, root)
    if quick is not None:
        assert quick == slow, json.dumps(output)
