"""The event builder remembers only its recent nodes' shared parts (events.recent): a node it
has forgotten and meets again is built again, equal to what it was, so no event changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from openlineage.client.serde import Serde

from dbt_oml.artifacts import read_artifacts
from dbt_oml.events import node_events
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events
from dbt_oml.events.recent import Recent
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.lineage.types import IDENTITY, ColumnEdge, ModelLineage, SourceColumn
from tests.support.events import NS, STARTED


def _event_docs(target: Path) -> list[dict[str, object]]:
    arts = read_artifacts(target)
    models = {u for u, n in arts.manifest.nodes.items() if n.resource_type == "model"}
    lineage = analyse_models(arts, wanted=models, dialect="duckdb").models
    assert lineage  # the events name source columns: each dataset's names are looked up
    plain = SourceColumn("warehouse", "raw.v2", "orders", "id")  # a relation that is no node
    edge = ColumnEdge(output="order_id", inputs=((plain, (IDENTITY,)),), expression="id")
    lineage["model.jaffle_oml.core_orders"] = ModelLineage(columns=(edge,))
    events = build_events(
        arts,
        invocation=Invocation(
            invocation_id="inv", started_at=STARTED, command="build", project_name="p"
        ),
        namespaces=NS,
        settings=EventSettings(producer="https://example.com/p", adapter_version="0", cwd="/w"),
        lineage=lineage,
    )
    return [Serde.to_dict(e) for e in events]


def test_a_builder_that_remembers_one_node_builds_the_same_events(
    mini_target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered = _event_docs(mini_target)
    plain = [
        i
        for e in remembered
        for i in e.get("inputs") or []
        if i["name"] == "warehouse.raw.v2.orders"
    ]
    assert plain
    assert all("hierarchy" in i["facets"] for i in plain)  # kept for the whole run
    monkeypatch.setattr(node_events, "RECENT", 1)  # every other node forgotten at once
    assert _event_docs(mini_target) == remembered
    monkeypatch.setattr(node_events, "RECENT", 0)
    assert _event_docs(mini_target) == remembered


def test_recent_forgets_the_least_recently_used_first() -> None:
    recent = Recent[str, int](2)
    recent["a"], recent["b"] = 1, 2
    assert recent.get("a") == 1  # "a" is now the most recent: "b" goes first
    recent["c"] = 3
    assert (recent.get("a"), recent.get("b"), recent.get("c"), len(recent)) == (1, None, 3, 2)
    recent["c"] = 4  # set again: replaced, not added
    assert (recent.get("c"), len(recent)) == (4, 2)
