from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbt_oml.cli import _OPTIONS, split_args
from dbt_oml.config import KEYS, JobNaming, env_name, load_settings
from dbt_oml.errors import ConfigError


def _load(
    tmp_path: Path, *, cli: dict[str, object] | None = None, env: dict[str, str] | None = None
):
    return load_settings(cli=cli or {}, environ=env or {}, cwd=tmp_path, home=tmp_path / "home")


def test_defaults(tmp_path: Path) -> None:
    s = _load(tmp_path)
    assert s.docs_generate is True
    assert s.fail_on_emit_error is False
    assert s.job_namespace == "dbt"
    assert s.job_naming is JobNaming.DBT_OL
    assert s.openlineage_configured is False
    assert s.config_file is None


def test_precedence_file_env_cli(tmp_path: Path) -> None:
    (tmp_path / "dbt-oml.yml").write_text(
        "job_namespace: from_file\ndocs_generate: false\nduckdb_namespace: duckdb://file\n"
        "namespaces: {crm: 'mysql://file:3306'}\n"
    )
    s = _load(
        tmp_path,
        env={"DBT_OML_JOB_NAMESPACE": "from_env", "DBT_OML_DUCKDB_NAMESPACE": "duckdb://env"},
        cli={"duckdb_namespace": "duckdb://cli"},
    )
    assert s.job_namespace == "from_env"
    assert s.duckdb_namespace == "duckdb://cli"
    assert s.docs_generate is False
    assert s.namespaces == {"crm": "mysql://file:3306"}
    assert s.config_file == tmp_path / "dbt-oml.yml"


def test_openlineage_compat_variables(tmp_path: Path) -> None:
    s = _load(
        tmp_path, env={"OPENLINEAGE_NAMESPACE": "prod", "OPENLINEAGE_DBT_JOB_NAME": "nightly"}
    )
    assert (s.job_namespace, s.parent_job_name) == ("prod", "nightly")
    s = _load(tmp_path, env={"OPENLINEAGE_NAMESPACE": "prod", "DBT_OML_JOB_NAMESPACE": "mine"})
    assert s.job_namespace == "mine"


@pytest.mark.parametrize(
    "env",
    [
        {"OPENLINEAGE_URL": "http://m:5000"},
        {"OPENLINEAGE__TRANSPORT__TYPE": "console"},
        {"OPENLINEAGE_DISABLED": "true"},
        {"OPENLINEAGE_CONFIG": "/x/ol.yml"},
    ],
)
def test_detects_openlineage_configuration(tmp_path: Path, env: dict[str, str]) -> None:
    assert _load(tmp_path, env=env).openlineage_configured is True


def test_detects_openlineage_yml(tmp_path: Path) -> None:
    (tmp_path / "openlineage.yml").write_text("transport: {type: console}\n")
    assert _load(tmp_path).openlineage_configured is True


def test_namespace_mappings(tmp_path: Path) -> None:
    env = {"DBT_OML_NAMESPACES": "crm=mysql://a:1, dw=postgres://b:2"}
    assert _load(tmp_path, env=env).namespaces == {"crm": "mysql://a:1", "dw": "postgres://b:2"}
    env = {"DBT_OML_NAMESPACES": '{"crm": "mysql://a:1"}'}
    assert _load(tmp_path, env=env).namespaces == {"crm": "mysql://a:1"}
    assert _load(tmp_path, cli={"namespaces": ("x=s3://b",)}).namespaces == {"x": "s3://b"}


@pytest.mark.parametrize(
    ("kwargs", "key", "source"),
    [
        ({"env": {"DBT_OML_DOCS_GENERATE": "maybe"}}, "docs_generate", "DBT_OML_DOCS_GENERATE"),
        ({"env": {"DBT_OML_NAMESPACES": "crm"}}, "namespaces", "DBT_OML_NAMESPACES"),
        ({"cli": {"job_naming": "random"}}, "job_naming", "--job-naming"),
        ({"cli": {"oml_log_level": "loud"}}, "oml_log_level", "--oml-log-level"),
        ({"cli": {"config": "/does/not/exist.yml"}}, "config", "/does/not/exist.yml"),
    ],
)
def test_bad_values_name_key_and_source(
    tmp_path: Path, kwargs: dict, key: str, source: str
) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, **kwargs)
    assert (err.value.key, err.value.source) == (key, source)


def test_unknown_file_key_lists_the_valid_ones(tmp_path: Path) -> None:
    (tmp_path / "dbt-oml.yml").write_text("namespace: {crm: x}\n")
    with pytest.raises(ConfigError) as err:
        _load(tmp_path)
    assert err.value.key == "namespace"
    assert "namespaces" in err.value.hint


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "dbt-oml.yml").write_text("a: 1\nb: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML at line"):
        _load(tmp_path)


def test_transport_must_have_a_type(tmp_path: Path) -> None:
    (tmp_path / "dbt-oml.yml").write_text("transport: {url: http://x}\n")
    with pytest.raises(ConfigError) as err:
        _load(tmp_path)
    assert err.value.key == "transport"


def test_every_setting_has_env_and_flag() -> None:
    flags = {name for opt in _OPTIONS for name in [opt.name]}
    for key in KEYS:
        if key in {"transport", "relay"}:
            continue  # structured: config file only
        assert key in flags, f"no CLI flag for {key}"
        assert env_name(key) == "DBT_OML_" + key.upper()


def test_split_args_keeps_dbt_arguments_untouched() -> None:
    flags, rest = split_args(
        [
            "build",
            "--dry-run",
            "-s",
            "tag:daily",
            "--vars",
            "{a: 1}",
            "--namespace",
            "crm=mysql://c:1",
            "--consume-structured-logs",
            "--target",
            "prod",
            "--openlineage-dbt-job-name",
            "nightly",
        ]
    )
    assert rest == ["build", "-s", "tag:daily", "--vars", "{a: 1}", "--target", "prod"]
    assert flags == {
        "dry_run": True,
        "namespaces": ("crm=mysql://c:1",),
        "parent_job_name": "nightly",
    }


def test_the_seed_scripts_om_variables_select_the_openmetadata_transport(tmp_path: Path) -> None:
    env = {"OM_HOST": "https://om:8585", "OM_JWT_TOKEN_FILE": "/var/run/secrets/om/token"}
    transport = _load(tmp_path, env=env).transport
    assert transport == {
        "type": "openmetadata",
        "url": "https://om:8585",
        "jwt_token_file": "/var/run/secrets/om/token",
    }
    assert "OM_HOST" not in repr(_load(tmp_path, env=env))
    # an explicit OpenLineage configuration wins over OM_*
    assert _load(tmp_path, env={**env, "OPENLINEAGE_URL": "http://marquez:5000"}).transport is None


def test_orchestrator_from_parent_ids(tmp_path: Path) -> None:
    env = {
        "OPENLINEAGE_PARENT_ID": "airflow/etl.dbt_task/01a2-aaaa",
        "OPENLINEAGE_ROOT_PARENT_ID": "airflow/etl/01a2-root",
    }
    orchestrator = _load(tmp_path, env=env).orchestrator
    assert (
        orchestrator.parent.namespace,
        orchestrator.parent.name,
        orchestrator.parent.run_id,
    ) == ("airflow", "etl.dbt_task", "01a2-aaaa")
    assert (orchestrator.root.name, orchestrator.root.run_id) == ("etl", "01a2-root")
    only_parent = _load(
        tmp_path, env={"OPENLINEAGE_PARENT_ID": "airflow/etl.dbt_task/01a2-aaaa"}
    ).orchestrator
    assert only_parent.root == only_parent.parent


def test_orchestrator_context_wins(tmp_path: Path) -> None:
    context = {
        "parent": {
            "run": {"runId": "p-run"},
            "job": {"namespace": "ns", "name": "task"},
            "root": {"run": {"runId": "r-run"}, "job": {"namespace": "ns", "name": "dag"}},
        }
    }
    env = {"OPENLINEAGE_CONTEXT": json.dumps(context), "OPENLINEAGE_PARENT_ID": "x/y/z"}
    orchestrator = _load(tmp_path, env=env).orchestrator
    assert (orchestrator.parent.run_id, orchestrator.root.name) == ("p-run", "dag")


@pytest.mark.parametrize(
    ("env", "key"),
    [
        ({"OPENLINEAGE_PARENT_ID": "just-one-part"}, "OPENLINEAGE_PARENT_ID"),
        ({"OPENLINEAGE_CONTEXT": "{nope"}, "OPENLINEAGE_CONTEXT"),
        ({"OPENLINEAGE_CONTEXT": '{"parent": {"run": {}}}'}, "OPENLINEAGE_CONTEXT"),
    ],
)
def test_bad_orchestrator_variables(tmp_path: Path, env: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, env=env)
    assert err.value.key == key
