"""Settings from the profile's `dbt_oml.duckdb` plugin entry: over dbt-oml.yml, under DBT_OML_*."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbt_oml.config import load_settings
from dbt_oml.errors import ConfigError
from dbt_oml.plugin import switched_on


def test_profile_settings_sit_between_the_file_and_the_environment(tmp_path: Path) -> None:
    (tmp_path / "dbt-oml.yml").write_text("job_namespace: from_file\nparent_job_name: file_job\n")
    profile = {"job_namespace": "from_profile", "parent_job_name": "profile_job"}
    settings = load_settings(
        cli={}, environ={"DBT_OML_PARENT_JOB_NAME": "env_job"}, cwd=tmp_path, profile=profile
    )
    assert settings.emit.job_namespace == "from_profile"
    assert settings.emit.parent_job_name == "env_job"


def test_unknown_profile_setting_is_rejected_with_its_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(cli={}, environ={}, cwd=tmp_path, profile={"job_namespaec": "x"})
    assert info.value.key == "job_namespaec"
    assert "profiles.yml" in info.value.source


@pytest.mark.parametrize(
    ("environ", "dbt_vars", "expected"),
    [
        ({}, {}, True),
        ({"DBT_OML_PLUGIN": "0"}, {"dbt_oml_plugin": True}, False),
        ({}, {"dbt_oml_plugin": "false"}, False),
        ({"DBT_OML_PLUGIN": ""}, {"dbt_oml_plugin": None}, True),
    ],
    ids=["profile", "env-wins", "var-wins", "blank-falls-through"],
)
def test_precedence_env_var_profile(
    environ: dict[str, str], dbt_vars: dict[str, object], expected: bool
) -> None:
    assert switched_on(environ, dbt_vars, in_profile=True) is expected
