from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

import attr
import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
from openlineage.client.serde import Serde
from openlineage.client.transport.file import FileConfig
from openlineage.client.transport.file import FileTransport as ClientFileTransport

from dbt_oml.artifacts import read_artifacts
from dbt_oml.delivery.emitter import Delivery, from_dict, to_dict
from dbt_oml.events import serialize as event_json
from dbt_oml.events.invocation import EventSettings, Invocation
from dbt_oml.events.invocation_events import build_events
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.om.prepare import column_lineage_where_om_reads_it
from dbt_oml.pipeline.sending import foreign_may_reach_om, reaches_openmetadata
from dbt_oml.redaction import Redactor
from dbt_oml.transports import build_transport_factory
from dbt_oml.transports.file import FileTransport
from tests.support.events import NS, STARTED


def _events(target: Path) -> list[RunEvent]:
    arts = read_artifacts(target)
    models = {u for u, n in arts.manifest.nodes.items() if n.resource_type == "model"}
    lineage = analyse_models(arts, wanted=models, dialect="duckdb").models
    return build_events(
        arts,
        invocation=Invocation(
            invocation_id="inv", started_at=STARTED, command="build", project_name="p"
        ),
        namespaces=NS,
        settings=EventSettings(
            producer="https://example.com/p",
            adapter_version="0",
        ),
        lineage=lineage,
        error="1 node(s) failed",
    )


class Colour(Enum):
    RED = "red"


@attr.define
class Odd:
    when: datetime
    uid: uuid.UUID
    colour: Colour
    items: list[object]
    pairs: tuple[int, ...]
    mapping: dict[str, object]
    nothing: str | None = None


def _compact(doc: object) -> str:
    """`doc` as the standard library writes it compact, sorted, in UTF-8 (what dumps promises)."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_events_serialise_as_serde_does(mini_target: Path) -> None:
    events = [column_lineage_where_om_reads_it(e) for e in _events(mini_target)]  # shared facets
    assert any("columnLineage" in (o.outputFacets or {}) for e in events for o in e.outputs or ())
    for event in events:
        assert event_json.to_dict(event) == Serde.to_dict(event)
        text = event_json.to_json(event)
        assert json.loads(text) == json.loads(Serde.to_json(event))
        assert text == _compact(Serde.to_dict(event))  # compact, keys sorted
        assert event_json.to_json_bytes(event) == text.encode()
        assert event_json.to_json(event, indent=2) == Serde.to_json(event, indent=2)


@pytest.mark.parametrize("encoder", ["orjson", "standard library"])
def test_the_json_is_compact_utf8_with_sorted_keys(
    encoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if encoder != "orjson":
        monkeypatch.setattr(event_json, "orjson", None)
    elif event_json.orjson is None:
        pytest.skip("orjson is not installed for this Python")
    doc = {"b": [1, 2.5, True, None], "a": {"z": "café → 🦆", "y": 'say "hi", \\ ok:'}, "c": {}}
    data = event_json.dumps_bytes(doc)
    assert json.loads(data) == doc
    if encoder == "orjson":
        assert data == _compact(doc).encode()
    else:  # ASCII escapes, the only difference
        assert data == json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        assert data.isascii()


def test_what_orjson_refuses_is_written_by_the_standard_library() -> None:
    doc = {"lone": "a\udcff", "huge": 2**70, "keys": {3: "no string"}, "obj": object()}
    data = event_json.dumps_bytes(doc)
    assert json.loads(data) == {
        "lone": "a\udcff",
        "huge": 2**70,
        "keys": {"3": "no string"},
        "obj": "<<non-serializable: object>>",
    }
    assert b", " not in data


def test_nulls_enums_times_and_empty_items_as_serde() -> None:
    odd = Odd(
        when=datetime(2026, 1, 2, tzinfo=timezone.utc),
        uid=uuid.UUID(int=7),
        colour=Colour.RED,
        items=[None, {}, {"a": None}, Colour.RED, (1, None), "x"],
        pairs=(1, 2),
        mapping={"keep": 0, "drop": None, "nested": {"none": None}, "e": Colour.RED},
    )
    assert event_json.to_dict(odd) == Serde.to_dict(odd)
    assert json.loads(event_json.to_json(odd)) == json.loads(Serde.to_json(odd))


@pytest.mark.parametrize("debug", [False, True])
def test_the_file_transport_writes_what_the_clients_writes(
    mini_target: Path, tmp_path: Path, debug: bool
) -> None:
    ours, theirs = tmp_path / "ours.jsonl", tmp_path / "theirs.jsonl"
    fast = FileTransport(FileConfig(log_file_path=str(ours), append=True, debug_mode=debug))
    slow = ClientFileTransport(FileConfig(log_file_path=str(theirs), append=True, debug_mode=debug))
    for event in _events(mini_target):
        fast.emit(event)
        slow.emit(event)
    if debug:  # indented: the client's very bytes
        assert ours.read_bytes() == theirs.read_bytes()
        return
    lines, expected = ours.read_text().splitlines(), theirs.read_text().splitlines()
    assert len(lines) == len(expected) > 1
    assert [json.loads(line) for line in lines] == [json.loads(line) for line in expected]


@pytest.mark.parametrize("append", [True, False])
def test_an_event_with_names_outside_ascii_is_utf8_in_the_file(
    tmp_path: Path, append: bool
) -> None:
    path = tmp_path / "events.jsonl"
    event = RunEvent(
        eventType=RunState.COMPLETE,
        eventTime="2026-12-05T00:00:00+00:00",
        run=Run(runId="01939f6a-0000-7000-8000-000000000001"),
        job=Job(namespace="dbt://p", name="model.p.café_🦆"),
        producer="https://example.com/p",
    )
    FileTransport(FileConfig(log_file_path=str(path), append=append)).emit(event)
    [written] = tmp_path.iterdir()  # not appending: a file of its own, named by its time
    data = written.read_bytes()
    assert "café_🦆".encode() in data
    assert json.loads(data) == Serde.to_dict(event)


def test_a_new_events_file_is_private_an_existing_one_keeps_its_mode(
    mini_target: Path, tmp_path: Path
) -> None:
    new, shared = tmp_path / "new.jsonl", tmp_path / "shared.jsonl"
    shared.touch(mode=0o640)
    shared.chmod(0o640)
    event = _events(mini_target)[0]
    for path in (new, shared):
        FileTransport(FileConfig(log_file_path=str(path), append=True)).emit(event)
    assert new.stat().st_mode & 0o777 == 0o600
    assert shared.stat().st_mode & 0o777 == 0o640
    assert new.read_bytes() == shared.read_bytes()


def test_the_factory_gives_the_fast_file_transport(tmp_path: Path) -> None:
    config = {"transport": {"type": "file", "log_file_path": str(tmp_path / "e"), "append": True}}
    client = OpenLineageClient(config=config, factory=build_transport_factory())
    assert type(client.transport) is FileTransport
    assert not reaches_openmetadata(client)
    console = OpenLineageClient(
        config={"transport": {"type": "console"}}, factory=build_transport_factory()
    )
    assert not reaches_openmetadata(console)
    http = OpenLineageClient(
        config={"transport": {"type": "http", "url": "http://127.0.0.1:9"}},
        factory=build_transport_factory(),
    )
    assert reaches_openmetadata(http)
    assert reaches_openmetadata(None)  # --dry-run: the guard holds as if OpenMetadata read it


def test_events_are_plain_openlineage_without_openmetadatas_copy(mini_target: Path) -> None:
    outputs = [o for e in _events(mini_target) for o in e.outputs or ()]
    assert [o for o in outputs if "columnLineage" in (o.facets or {})]
    assert not [o for o in outputs if "columnLineage" in (o.outputFacets or {})]


def test_openmetadatas_copy_is_the_same_facet_and_only_for_a_foreign_transport(
    mini_target: Path, tmp_path: Path
) -> None:
    plain = [o for e in _events(mini_target) for o in e.outputs or ()]
    copied = [o for e in _events(mini_target) for o in column_lineage_where_om_reads_it(e).outputs]
    lineage = [o for o in copied if "columnLineage" in (o.facets or {})]
    assert lineage
    assert all(o.outputFacets["columnLineage"] is o.facets["columnLineage"] for o in lineage)  # type: ignore[index]
    assert [o.facets for o in plain] == [o.facets for o in copied]

    def client(transport: dict[str, object]) -> OpenLineageClient:
        return OpenLineageClient(config={"transport": transport}, factory=build_transport_factory())

    http = {"type": "http", "url": "http://127.0.0.1:9"}
    assert foreign_may_reach_om(client(http))
    assert foreign_may_reach_om(
        client({"type": "composite", "transports": [http, {"type": "console"}]})
    )
    assert not foreign_may_reach_om(client({"type": "console"}))
    assert not foreign_may_reach_om(
        client({"type": "file", "log_file_path": str(tmp_path / "e"), "append": True})
    )
    assert not foreign_may_reach_om(None)


def test_a_replayed_event_is_rebuilt_as_it_was_kept(mini_target: Path) -> None:
    for event in _events(mini_target):
        doc = to_dict(event)
        assert to_dict(from_dict(json.loads(json.dumps(doc)))) == doc


@pytest.mark.parametrize("held", [False, True])
def test_dry_run_collects_serde_dicts(mini_target: Path, tmp_path: Path, held: bool) -> None:
    delivery = Delivery(None, outbox=tmp_path / "o.jsonl", target="stdout", redactor=Redactor())
    delivery.held = held
    events = _events(mini_target)
    delivery.send_all(events)
    assert delivery.close().collected == [Serde.to_dict(e) for e in events]


def test_a_memo_of_shared_facets_changes_no_byte(mini_target: Path) -> None:
    events = [column_lineage_where_om_reads_it(e) for e in _events(mini_target)]  # shared facets
    memo = event_json.FacetMemo(size=3)  # small: facets are forgotten and converted again
    for event in events * 2:
        assert event_json.to_json(event, memo=memo) == _compact(Serde.to_dict(event))
    assert len(memo._entries) == 3


def test_the_memo_keeps_dataset_facets_not_column_lineage(mini_target: Path) -> None:
    event = next(
        e for e in _events(mini_target) if any("columnLineage" in o.facets for o in e.outputs)
    )
    memo = event_json.FacetMemo()
    event_json.to_dict(event, memo=memo)
    kept = {type(facet).__name__ for facet, _ in memo._entries.values()}
    assert "SchemaDatasetFacet" in kept
    assert "ColumnLineageDatasetFacet" not in kept
    schema = event.outputs[0].facets["schema"]
    assert (
        memo.get(schema) is event_json.to_dict(event, memo=memo)["outputs"][0]["facets"]["schema"]
    )
