"""The client dbt-oml sends with is openlineage-python's, minus a scan of the whole environment
for every event when its config names no variable to gather (pipeline.sending.client_class)."""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.serde import Serde

from dbt_oml.pipeline.sending import client_class
from tests.conftest import MINI
from tests.support.events import run_events

CONSOLE = {"type": "console"}


def _client(kind: type[OpenLineageClient], **facets: Any) -> OpenLineageClient:
    return kind(config={"transport": CONSOLE, **({"facets": facets} if facets else {})})


def _gathered(client: OpenLineageClient) -> list[str]:
    """Each event's JSON after the client's `emit` added what it gathers."""
    return [Serde.to_json(client.add_environment_facets(event)) for event in run_events(MINI)]


def test_the_events_are_the_clients_with_nothing_to_gather() -> None:
    assert _gathered(_client(client_class())) == _gathered(_client(OpenLineageClient))


def test_the_variables_a_config_names_are_gathered_as_the_client_gathers_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DBT_OML_TEST_POD", "pod-7")
    names = ["DBT_OML_TEST_POD", "DBT_OML_TEST_ABSENT"]
    ours = _gathered(_client(client_class(), environment_variables=names))
    assert ours == _gathered(_client(OpenLineageClient, environment_variables=names))
    assert all('"name": "DBT_OML_TEST_POD", "value": "pod-7"' in event for event in ours)


class _Unreadable(Mapping[str, str]):
    """An environment that fails whoever goes over it."""

    def __getitem__(self, key: str) -> str:
        raise AssertionError(f"read {key}")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("went over the environment")

    def __len__(self) -> int:
        return 400


def test_with_nothing_to_gather_the_environment_is_not_gone_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client, stock = _client(client_class()), _client(OpenLineageClient)
    monkeypatch.setattr(
        "openlineage.client.client.os", types.SimpleNamespace(environ=_Unreadable())
    )
    events = run_events(MINI)
    gathered = [Serde.to_json(client.add_environment_facets(event)) for event in events]
    assert gathered
    assert not any("environmentVariables" in event for event in gathered)
    with pytest.raises(AssertionError, match="went over"):
        stock.add_environment_facets(run_events(MINI)[0])
