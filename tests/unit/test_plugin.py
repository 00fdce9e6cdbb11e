"""The dbt plugin's switch and its registration on dbt's event manager (no dbt run)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from dbt.plugins.manager import dbtPlugin
from dbt_common.events.event_manager_client import get_event_manager

import dbt_oml
from dbt_oml import plugin
from dbt_oml.dbt import own_runs


@pytest.mark.parametrize(
    ("environ", "dbt_vars", "on"),
    [
        ({}, {}, False),
        ({"DBT_OML_PLUGIN": "1"}, {}, True),
        ({"DBT_OML_PLUGIN": "TRUE"}, {}, True),
        ({"DBT_OML_PLUGIN": "0"}, {"dbt_oml_plugin": True}, False),
        ({"DBT_OML_PLUGIN": " "}, {"dbt_oml_plugin": True}, True),
        ({}, {"dbt_oml_plugin": "true"}, True),
        ({}, {"dbt_oml_plugin": False}, False),
        ({}, {"other": True}, False),
    ],
)
def test_switch(environ: dict[str, str], dbt_vars: dict[str, Any], on: bool) -> None:
    assert plugin.switched_on(environ, dbt_vars) is on


def test_dbt_finds_the_plugin_class_on_the_package() -> None:
    (found,) = dbt_oml.plugins
    assert issubclass(found, dbtPlugin)
    with pytest.raises(AttributeError):
        _ = dbt_oml.no_such_thing  # type: ignore[attr-defined]


@pytest.fixture
def callbacks() -> Iterator[list[Any]]:
    manager = get_event_manager()
    before = list(manager.callbacks)
    yield manager.callbacks
    manager.callbacks[:] = before


def test_off_registers_nothing(callbacks: list[Any]) -> None:
    before = len(callbacks)
    plugin.DbtOmlPlugin(project_name="p")
    assert len(callbacks) == before


def test_inside_the_wrapper_registers_nothing(
    callbacks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBT_OML_PLUGIN", "1")
    before = len(callbacks)
    with own_runs.suppressed():
        plugin.DbtOmlPlugin(project_name="p")
    assert len(callbacks) == before


def test_on_registers_one_listener(callbacks: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBT_OML_PLUGIN", "1")
    before = len(callbacks)
    plugin.DbtOmlPlugin(project_name="p")
    assert len(callbacks) == before + 1
    session = callbacks[-1].__self__
    session.bridge.close()


def test_bad_settings_are_one_line_and_no_listener(
    callbacks: list[Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DBT_OML_PLUGIN", "1")
    monkeypatch.setenv("DBT_OML_JOB_NAMING", "by-magic")
    before = len(callbacks)
    plugin.DbtOmlPlugin(project_name="p")
    assert len(callbacks) == before
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("dbt-oml plugin: ")
    assert "DBT_OML_JOB_NAMING" in err[0]
