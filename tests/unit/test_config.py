from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest

from dbt_oml.cli.group import cli
from dbt_oml.config import (
    KEYS,
    RELAY_SCALARS,
    TRUTHY,
    JobNaming,
    env_name,
    flag_name,
    load_settings,
    relay_env_name,
    truthy,
)
from dbt_oml.errors import ConfigError
from dbt_oml.redaction import Redactor


def _load(
    tmp_path: Path, *, cli: dict[str, object] | None = None, env: dict[str, str] | None = None
):
    return load_settings(cli=cli or {}, environ=env or {}, cwd=tmp_path, home=tmp_path / "home")


def test_defaults(tmp_path: Path) -> None:
    s = _load(tmp_path)
    assert s.dbt.docs_generate is True
    assert s.emit.fail_on_emit_error is False
    assert s.emit.job_namespace == "dbt"
    assert s.emit.job_naming is JobNaming.DBT_OL
    assert s.transport.openlineage_configured is False
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
    assert s.emit.job_namespace == "from_env"
    assert s.namespace.duckdb_namespace == "duckdb://cli"
    assert s.dbt.docs_generate is False
    assert s.namespace.namespaces == {"crm": "mysql://file:3306"}
    assert s.config_file == tmp_path / "dbt-oml.yml"


def test_openlineage_compat_variables(tmp_path: Path) -> None:
    s = _load(
        tmp_path, env={"OPENLINEAGE_NAMESPACE": "prod", "OPENLINEAGE_DBT_JOB_NAME": "nightly"}
    )
    assert (s.emit.job_namespace, s.emit.parent_job_name) == ("prod", "nightly")
    s = _load(tmp_path, env={"OPENLINEAGE_NAMESPACE": "prod", "DBT_OML_JOB_NAMESPACE": "mine"})
    assert s.emit.job_namespace == "mine"


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
    assert _load(tmp_path, env=env).transport.openlineage_configured is True


def test_detects_openlineage_yml(tmp_path: Path) -> None:
    (tmp_path / "openlineage.yml").write_text("transport: {type: console}\n")
    assert _load(tmp_path).transport.openlineage_configured is True


def test_namespace_mappings(tmp_path: Path) -> None:
    env = {"DBT_OML_NAMESPACES": "crm=mysql://a:1, dw=postgres://b:2"}
    assert _load(tmp_path, env=env).namespace.namespaces == {
        "crm": "mysql://a:1",
        "dw": "postgres://b:2",
    }
    env = {"DBT_OML_NAMESPACES": '{"crm": "mysql://a:1"}'}
    assert _load(tmp_path, env=env).namespace.namespaces == {"crm": "mysql://a:1"}
    assert _load(tmp_path, cli={"namespaces": ("x=s3://b",)}).namespace.namespaces == {
        "x": "s3://b"
    }


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


def _options(command: click.Command) -> dict[str, click.Option]:
    return {p.name: p for p in command.params if isinstance(p, click.Option) and p.name}


def test_every_setting_has_one_name_for_flag_env_and_file() -> None:
    options = _options(cli)
    for key in KEYS:
        if key in {"transport", "relay"}:
            continue  # structured: config file only
        assert key in options, f"no CLI flag for {key}"
        assert options[key].opts[0] == flag_name(key), options[key].opts
        assert env_name(key) == "DBT_OML_" + key.upper()


def test_every_scalar_relay_setting_has_a_flag_and_a_variable() -> None:
    relay = _options(cli.get_command(click.Context(cli), "relay"))
    for key in RELAY_SCALARS:
        assert relay[key].opts == [flag_name(key)]
        assert relay_env_name(key) == "DBT_OML_RELAY_" + key.upper()


def test_dbt_ols_names_are_aliases() -> None:
    options = _options(cli)
    assert "--openlineage-dbt-job-name" in options["parent_job_name"].opts
    assert "--namespace" in options["namespaces"].opts


def test_truthy_is_the_one_set_of_true_words(tmp_path: Path) -> None:
    for word in TRUTHY:
        assert truthy(word.upper())
        assert _load(tmp_path, env={"DBT_OML_DRY_RUN": word}).emit.dry_run is True
    assert not truthy("off")


class TestRelaySection:
    def test_file_env_and_flags_merge_key_by_key(self, tmp_path: Path) -> None:
        (tmp_path / "dbt-oml.yml").write_text("relay: {batch: 10, durable: d1, ack_wait: 5}\n")
        env = {"DBT_OML_RELAY_DURABLE": "d2", "DBT_OML_RELAY_FETCH_TIMEOUT": "0.5"}
        s = _load(tmp_path, env=env, cli={"relay": {"batch": "20", "ack_wait": None}})
        assert s.relay == {"batch": 20, "durable": "d2", "ack_wait": 5.0, "fetch_timeout": 0.5}

    @pytest.mark.parametrize(
        ("relay", "key", "source"),
        [
            ("{batch: -1}", "relay.batch", "file"),
            ("{batch: true}", "relay.batch", "file"),
            ("{batch: 1.5}", "relay.batch", "file"),
            ("{batch: 100001}", "relay.batch", "file"),
            ("{ack_wait: .inf}", "relay.ack_wait", "file"),
            ("{fetch_timeout: x}", "relay.fetch_timeout", "file"),
            ("{durable: a.b}", "relay.durable", "file"),
            ("{dead_letter_subject: 'a..b'}", "relay.dead_letter_subject", "file"),
            ("{dead_letter_subject: [a]}", "relay.dead_letter_subject", "file"),
        ],
    )
    def test_bad_values_are_config_errors_when_read(
        self, tmp_path: Path, relay: str, key: str, source: str
    ) -> None:
        (tmp_path / "dbt-oml.yml").write_text(f"relay: {relay}\n")
        with pytest.raises(ConfigError) as err:
            _load(tmp_path)
        assert (err.value.key, err.value.source) == (key, str(tmp_path / "dbt-oml.yml"))

    def test_bad_variable_and_flag_name_their_source(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError) as err:
            _load(tmp_path, env={"DBT_OML_RELAY_BATCH": "many"})
        assert (err.value.key, err.value.source) == ("relay.batch", "DBT_OML_RELAY_BATCH")
        with pytest.raises(ConfigError) as err:
            _load(tmp_path, cli={"relay": {"ack_wait": "-3"}})
        assert (err.value.key, err.value.source) == ("relay.ack_wait", "--ack-wait")


def test_the_seed_scripts_om_variables_select_the_openmetadata_transport(tmp_path: Path) -> None:
    env = {"OM_HOST": "https://om:8585", "OM_JWT_TOKEN_FILE": "/var/run/secrets/om/token"}
    transport = _load(tmp_path, env=env).transport.config
    assert transport == {
        "type": "openmetadata",
        "url": "https://om:8585",
        "jwt_token_file": "/var/run/secrets/om/token",
    }
    assert "OM_HOST" not in repr(_load(tmp_path, env=env))
    # an explicit OpenLineage configuration wins over OM_*
    assert (
        _load(tmp_path, env={**env, "OPENLINEAGE_URL": "http://marquez:5000"}).transport.config
        is None
    )


def test_orchestrator_from_parent_ids(tmp_path: Path) -> None:
    env = {
        "OPENLINEAGE_PARENT_ID": "airflow/etl.dbt_task/01a2-aaaa",
        "OPENLINEAGE_ROOT_PARENT_ID": "airflow/etl/01a2-root",
    }
    orchestrator = _load(tmp_path, env=env).emit.orchestrator
    assert (
        orchestrator.parent.namespace,
        orchestrator.parent.name,
        orchestrator.parent.run_id,
    ) == ("airflow", "etl.dbt_task", "01a2-aaaa")
    assert (orchestrator.root.name, orchestrator.root.run_id) == ("etl", "01a2-root")
    only_parent = _load(
        tmp_path, env={"OPENLINEAGE_PARENT_ID": "airflow/etl.dbt_task/01a2-aaaa"}
    ).emit.orchestrator
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
    orchestrator = _load(tmp_path, env=env).emit.orchestrator
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


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("duckdb://pod/{alais}", "unknown placeholder {alais}"),
        ("duckdb://pod/{alias}/{name}", "unknown placeholder {name}"),
        ("pod/{alias}", "is not a URL"),
    ],
)
def test_a_duckdb_namespace_typo_is_refused_with_what_is_valid(
    tmp_path: Path, template: str, says: str
) -> None:
    """A typo would merge every catalog into one namespace (one bogus OM service): refused."""
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, cli={"duckdb_namespace": template})
    assert says in str(refused.value)
    assert "{alias}, {stem}" in str(refused.value) or "duckdb://pod/{alias}" in str(refused.value)
    assert _load(
        tmp_path, cli={"duckdb_namespace": "duckdb://pod/{alias}-{stem}"}
    ).namespace.duckdb_namespace


def test_dbt_ols_extended_job_name_variable(tmp_path: Path) -> None:
    """OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME is honoured (it was silently ignored); a value
    other than true/1/false/0 is refused, as dbt-ol refuses it."""
    on = _load(tmp_path, env={"OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME": "true"})
    assert on.emit.extended_job_name is True
    assert (
        _load(tmp_path, env={"OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME": "0"}).emit.extended_job_name
        is False
    )
    with pytest.raises(ConfigError) as refused:
        _load(tmp_path, env={"OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME": "maybe"})
    assert "OPENLINEAGE_DBT_USE_EXTENDED_JOB_NAME" in str(refused.value)


def _emitter_from(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    import os

    from dbt_oml.pipeline.sending import make_emitter

    monkeypatch.setattr(os, "environ", dict(env))  # the client writes aliases into it
    settings = load_settings(cli={}, environ=env, cwd=tmp_path, home=tmp_path / "home")
    client, _ = make_emitter(settings, tmp_path, Redactor())
    return client


def test_a_leftover_openlineage_url_gives_way_to_the_transport_type(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OPENLINEAGE_URL from dbt-ol days + OPENLINEAGE__TRANSPORT__TYPE=openmetadata + OM_HOST:
    the OM transport, filled in from OM_* (before: exit 3, 'transport.transports' unknown)."""
    env = {
        "OPENLINEAGE_URL": "http://127.0.0.1:9",
        "OPENLINEAGE__TRANSPORT__TYPE": "openmetadata",
        "OM_HOST": "https://om.example.com",
        "OM_JWT_TOKEN": "bot-jwt",
    }
    client = _emitter_from(env, tmp_path, monkeypatch)
    assert client.transport.kind == "openmetadata"
    assert client.transport.config.url == "https://om.example.com"


def test_om_host_under_an_openlineage_url_is_said_not_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    env = {"OPENLINEAGE_URL": "http://127.0.0.1:9", "OM_HOST": "https://om.example.com"}
    client = _emitter_from(env, tmp_path, monkeypatch)
    assert client.transport.kind == "http"
    assert "OM_HOST is set, but openlineage-python's configuration" in caplog.text
