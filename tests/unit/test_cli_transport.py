"""The transport a command sends with, wherever it is configured (issue 28 items 1, 8, 9): one
INFO line at the start naming it and its source (no secrets); a `type:` typo is one line with the
valid types; --dry-run's OpenMetadata bootstrap plan whichever way OpenMetadata was configured,
a composite's member included. `dbt-oml emit` in-process on the saved artifacts; OM is the
loopback stand-in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dbt_oml.cli import ExitCode, main
from dbt_oml.config import load_settings
from dbt_oml.errors import ConfigError
from tests.conftest import PROJECT
from tests.support.fakes.om_http import serve
from tests.support.fakes.openmetadata import FakeOpenMetadata

ARTIFACTS = Path(__file__).resolve().parents[1] / "golden" / "artifacts"
TOKEN = "bot-jwt-s3cret"  # the stand-in's bot token


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled project with the saved artifacts; the working directory is the project."""
    copy = tmp_path / "p"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "*.duckdb", "logs"))
    shutil.copytree(ARTIFACTS, copy / "target")
    monkeypatch.chdir(copy)
    monkeypatch.setenv("HOME", str(tmp_path))
    return copy


def _emit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["emit", "--profiles-dir", ".", *args])
    return code, capsys.readouterr().err


def _om_config(url: str, how: str, project: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Configure an openmetadata transport at `url` one way; returns the source's name."""
    if how == "dbt-oml.yml":
        (project / "dbt-oml.yml").write_text(
            f"transport: {{type: openmetadata, url: '{url}', jwt_token: {TOKEN}}}\n"
        )
    elif how == "OPENLINEAGE__TRANSPORT__*":
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "openmetadata")
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__URL", url)
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__JWT_TOKEN", TOKEN)
        return "OPENLINEAGE__TRANSPORT__* variables"
    elif how == "openlineage.yml":
        (project / "openlineage.yml").write_text(
            f"transport: {{type: openmetadata, url: '{url}', jwt_token: {TOKEN}}}\n"
        )
    elif how == "OM_HOST":
        monkeypatch.setenv("OM_HOST", url)
        monkeypatch.setenv("OM_JWT_TOKEN", TOKEN)
    elif how == "OPENLINEAGE__TRANSPORT__TYPE + OM_HOST":
        monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "openmetadata")
        monkeypatch.setenv("OM_HOST", url)
        monkeypatch.setenv("OM_JWT_TOKEN", TOKEN)
        return "OPENLINEAGE__TRANSPORT__* variables; url from OM_HOST"
    elif how == "composite in openlineage.yml":
        (project / "openlineage.yml").write_text(
            "transport:\n  type: composite\n  transports:\n"
            f"    om: {{type: openmetadata, url: '{url}', jwt_token: {TOKEN}}}\n"
            "    log: {type: console}\n"
        )
        return "openlineage.yml"
    return how


WAYS = [
    "dbt-oml.yml",
    "OPENLINEAGE__TRANSPORT__*",
    "openlineage.yml",
    "OM_HOST",
    "OPENLINEAGE__TRANSPORT__TYPE + OM_HOST",
    "composite in openlineage.yml",
]


@pytest.mark.parametrize("how", WAYS)
def test_dry_run_shows_the_bootstrap_plan_however_openmetadata_is_configured(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    om = FakeOpenMetadata.with_bot(TOKEN)
    with serve(om) as url:
        source = _om_config(url, how, project, monkeypatch)
        code, err = _emit(capsys, "--dry-run")
    assert code == ExitCode.SUCCESS, err
    assert "dbt-oml: OpenMetadata bootstrap plan (nothing written):" in err, err
    assert "PUT" in err  # the services, databases, schemas and tables it would create
    assert om.count("PUT") == om.count("POST") == om.count("PATCH") == 0
    assert f"(from {source})" in err
    assert TOKEN not in err


@pytest.mark.parametrize("how", WAYS)
def test_plan_settings_find_the_openmetadata_transport(
    project: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    import os

    from dbt_oml.config import plan_settings

    _om_config("https://om.example", how, project, monkeypatch)

    settings = load_settings(cli={}, environ=os.environ, cwd=project, home=project.parent)
    planned = plan_settings(settings).transport.config or {}
    assert planned.get("type") == "openmetadata"
    assert planned.get("url") == "https://om.example"
    assert planned.get("jwt_token") == TOKEN


def test_no_plan_when_events_do_not_go_to_openmetadata(project: Path) -> None:
    from dbt_oml.config import plan_settings

    settings = load_settings(
        cli={}, environ={"OM_HOST": "https://om"}, cwd=project, home=project.parent
    )
    on_file = load_settings(cli={}, environ={}, cwd=project, home=project.parent)
    assert (
        plan_settings(settings).transport.config == settings.transport.config
    )  # OM_HOST alone: OM
    assert plan_settings(on_file) is on_file  # the events file: no OpenMetadata, no plan


@pytest.mark.parametrize(
    ("setup", "line"),
    [
        ({}, "events -> file <target>/openlineage/events.jsonl (the default: no transport "),
        (
            {"env": {"OM_HOST": "https://om.example", "OM_JWT_TOKEN": TOKEN}},
            "events -> openmetadata https://om.example (from OM_HOST)",
        ),
        (
            {"env": {"OPENLINEAGE_URL": "http://bob:pw-1234@marquez:5000"}},
            "events -> http http://***@marquez:5000 (from OPENLINEAGE_URL)",
        ),
        (
            {"env": {"OPENLINEAGE__TRANSPORT__TYPE": "http", "OPENLINEAGE__TRANSPORT__URL": "h:"}},
            "events -> http h: (from OPENLINEAGE__TRANSPORT__* variables)",
        ),
        (
            {"file": ("openlineage.yml", "transport: {type: console}\n")},
            "events -> console (from openlineage.yml)",
        ),
        (
            {"file": ("dbt-oml.yml", "transport: {type: file, log_file_path: /x/e.jsonl}\n")},
            "events -> file /x/e.jsonl (from dbt-oml.yml)",
        ),
    ],
    ids=["default", "OM_HOST", "OPENLINEAGE_URL", "OPENLINEAGE__TRANSPORT__", "ol-yml", "oml-yml"],
)
def test_one_info_line_says_where_events_go_and_who_chose(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: dict,
    line: str,
) -> None:
    for key, value in setup.get("env", {}).items():
        monkeypatch.setenv(key, value)
    if "file" in setup:
        name, text = setup["file"]
        (project / name).write_text(text)
    monkeypatch.setattr("dbt_oml.pipeline.offline.make_emitter", _no_sending)
    _, err = _emit(capsys)
    infos = [x for x in err.splitlines() if x.startswith("dbt-oml: INFO: events -> ")]
    assert len(infos) == 1, err
    assert infos[0].startswith(f"dbt-oml: INFO: {line}"), infos
    assert TOKEN not in err
    assert "pw-1234" not in err


def _no_sending(settings, target_path):
    return None, "nowhere (test)"


def test_dry_run_says_so_and_what_is_configured(tmp_path: Path) -> None:
    from dbt_oml.config import events_destination

    settings = load_settings(
        cli={"dry_run": True}, environ={"OM_HOST": "https://om"}, cwd=tmp_path, home=tmp_path
    )
    assert events_destination(settings, {}, cwd=tmp_path) == (
        "stdout (--dry-run; configured: openmetadata https://om (from OM_HOST))"
    )


def _typo_in_variable(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENLINEAGE__TRANSPORT__TYPE", "openmetdata")


def _typo_in_dbt_oml_yml(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    del monkeypatch
    (project / "dbt-oml.yml").write_text("transport: {type: openmetdata}\n")


def _typo_in_a_composite(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    del monkeypatch
    (project / "openlineage.yml").write_text(
        "transport: {type: composite, transports: {a: {type: openmetdata}}}\n"
    )


@pytest.mark.parametrize(
    "configure",
    [_typo_in_variable, _typo_in_dbt_oml_yml, _typo_in_a_composite],
    ids=["OPENLINEAGE__TRANSPORT__TYPE", "dbt-oml.yml", "a composite's member"],
)
def test_a_transport_type_typo_is_one_line_with_the_valid_types(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], configure
) -> None:
    configure(project, monkeypatch)
    code, err = _emit(capsys)
    assert code == ExitCode.USAGE
    assert "not enough values to unpack" not in err
    (line,) = [x for x in err.splitlines() if not x.startswith("dbt-oml: INFO: ")]
    assert line.startswith(
        "dbt-oml emit: config 'transport.type' (the transport configuration): unknown "
        "transport type 'openmetdata' (did you mean 'openmetadata'?); valid types: "
    )
    valid = line.split("valid types: ")[1].split(", or a")[0].split(", ")
    assert {"composite", "console", "file", "http", "jetstream", "openmetadata"} <= set(valid)
    assert line.endswith(", or a Transport class's dotted path")


def test_a_composite_s_members_may_be_dbt_oml_s_transports() -> None:
    from dbt_oml.transports import build_transport_factory

    factory = build_transport_factory({"openmetadata": {"jwt_token": TOKEN}})
    composite = factory.create(
        {
            "type": "composite",
            "transports": {
                "om": {"type": "openmetadata", "url": "https://om.example"},
                "log": {"type": "console", "priority": 5},
            },
            "sort_transports": True,
        }
    )
    kinds = [(t.kind, t.name) for t in composite.transports]  # type: ignore[attr-defined]
    assert kinds == [("console", "log"), ("openmetadata", "om")]  # by priority
    om = composite.transports[1]  # type: ignore[attr-defined]
    assert om.config.jwt_token == TOKEN  # empty keys from OM_*, as for a lone transport
    with pytest.raises(ConfigError) as err:
        factory.create({"type": "composite", "transports": [{"type": "htp"}]})
    assert "did you mean 'http'" in err.value.reason
