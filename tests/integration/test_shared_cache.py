"""A lineage cache that outlives the pod (issue 31 item 4): two pods, each with its own copy of
the built project and no target cache; the second takes every analysed model from what the
first shared, in a folder or a JetStream key-value bucket on a real nats-server, and sends the
same column lineage. A store that is down or damaged costs one warning and no lineage."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.stores.keyvalue import KeyValueStore, index_key
from dbt_oml.transports.jetstream.config import JetStreamConfig
from tests.conftest import CliRun, copy_of_built, free_port, run_in_process
from tests.support.nats_server import NatsServer, js_call

pytestmark = [pytest.mark.integration, pytest.mark.nats]
PROJECT = "jaffle_oml"
FROM_SHARED = re.compile(r"lineage cache: (\d+) models from (.+)$", re.M)


@pytest.fixture(scope="module")
def nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    server = NatsServer(tmp_path_factory.mktemp("nats-store")).start()
    yield server
    server.stop()


def _pod(built: CliRun, where: Path, cache: str) -> CliRun:
    """`dbt-oml emit` in a new pod: a copy of the built project without a lineage cache."""
    project = copy_of_built(built, where)
    run = run_in_process(["emit", "--profiles-dir", ".", "--lineage-cache", cache], cwd=project)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def _column_lineage(run: CliRun) -> dict[str, Any]:
    """Each output's columnLineage, the pod's folder written as <project> (a file source's
    dataset is named by its path)."""
    found = {
        f"{o['namespace']}/{o['name']}": o["facets"]["columnLineage"]
        for e in run.events
        for o in e.get("outputs", [])
        if "columnLineage" in o.get("facets", {})
    }
    return json.loads(json.dumps(found).replace(str(run.project), "<project>"))


def _bucket_keys(url: str, bucket: str) -> list[str]:
    async def keys(js: Any) -> list[str]:
        return list(await (await js.key_value(bucket)).keys())

    return sorted(js_call(url, keys))


def _index(url: str, bucket: str) -> list[str]:
    async def read(js: Any) -> list[str]:
        entry = await (await js.key_value(bucket)).get(index_key(PROJECT))
        return list(json.loads(zlib.decompress(entry.value)))

    return js_call(url, read)


def test_a_second_pod_takes_every_model_from_a_shared_folder(built: CliRun, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    first = _pod(built, tmp_path / "a", str(shared))
    assert FROM_SHARED.search(first.stderr) is None  # nothing was shared before it
    assert (shared / f"{PROJECT}.pack.gz").is_file()
    second = _pod(built, tmp_path / "b", f"file://{shared}")
    (found,) = FROM_SHARED.findall(second.stderr)
    analysed = len(_column_lineage(first))
    assert int(found[0]) >= analysed > 0
    assert found[1] == str(shared)
    assert _column_lineage(second) == _column_lineage(first)
    assert [x for x in second.stderr.splitlines() if "WARNING: lineage cache" in x] == []


def test_a_second_pod_takes_every_model_from_a_key_value_bucket(
    built: CliRun, tmp_path: Path, nats: NatsServer
) -> None:
    url = f"{nats.url}/dbt_oml_lineage"
    first = _pod(built, tmp_path / "a", url)
    index = _index(nats.url, "dbt_oml_lineage")
    assert _bucket_keys(nats.url, "dbt_oml_lineage") == sorted(
        [index_key(PROJECT), *(f"lineage.{k}" for k in index)]
    )
    second = _pod(built, tmp_path / "b", url)
    (found,) = FROM_SHARED.findall(second.stderr)
    assert found == (str(len(index)), f"{nats.url} bucket dbt_oml_lineage")
    assert _column_lineage(second) == _column_lineage(first)
    assert _index(nats.url, "dbt_oml_lineage") == index  # a warm pod writes nothing back

    # one damaged entry: that model is analysed again, and put back whole
    async def damage(js: Any) -> None:
        await (await js.key_value("dbt_oml_lineage")).put(f"lineage.{index[0]}", b"\x00garbage")

    js_call(nats.url, damage)
    third = _pod(built, tmp_path / "c", url)
    (found,) = FROM_SHARED.findall(third.stderr)
    assert int(found[0]) == len(index) - 1
    assert _column_lineage(third) == _column_lineage(first)
    fourth = _pod(built, tmp_path / "d", url)
    assert FROM_SHARED.findall(fourth.stderr)[0][0] == str(len(index))


def test_nats_down_costs_one_warning_and_no_lineage(built: CliRun, tmp_path: Path) -> None:
    dead = f"nats://127.0.0.1:{free_port()}"
    plain = run_in_process(
        ["emit", "--profiles-dir", "."], cwd=copy_of_built(built, tmp_path / "p")
    )
    run = _pod(built, tmp_path / "a", f"{dead}/L")
    warnings = [x for x in run.stderr.splitlines() if "WARNING: lineage cache" in x]
    assert warnings == [
        f"dbt-oml: WARNING: lineage cache {dead} bucket L: connection refused; models are "
        "analysed here and nothing is shared this run"
    ]
    assert _column_lineage(run) == _column_lineage(plain) != {}


def test_two_pods_that_end_together_keep_both_their_entries(nats: NatsServer) -> None:
    config = JetStreamConfig(servers=[nats.url])
    one = KeyValueStore(config, bucket="together", scope=PROJECT)
    two = KeyValueStore(config, bucket="together", scope=PROJECT)
    assert one.keys() == two.keys() == []  # both read the index before either writes
    one.save({"a" * 64: '{"x": 1}'}, ["a" * 64], [])
    two.save({"b" * 64: '{"x": 2}'}, ["b" * 64], [])
    assert _index(nats.url, "together") == ["b" * 64, "a" * 64]
    fresh = KeyValueStore(config, bucket="together", scope=PROJECT)
    assert fresh.fetch(fresh.keys()) == {"a" * 64: '{"x": 1}', "b" * 64: '{"x": 2}'}


@pytest.mark.parametrize("command", [["lineage", "--json"], ["impact", "stg_orders.order_id"]])
def test_lineage_and_impact_in_a_new_pod_read_the_shared_cache(
    built: CliRun, tmp_path: Path, command: list[str]
) -> None:
    """A new pod's `dbt-oml lineage` or `impact` takes what it would analyse from the shared
    cache another pod's emit filled, and answers as a pod that analysed it all itself."""
    shared = tmp_path / "shared"
    first = _pod(built, tmp_path / "a", str(shared))
    asked = [*command, "--profiles-dir", "."]
    alone = copy_of_built(built, tmp_path / "alone")
    answer = run_in_process(asked, cwd=alone)
    assert answer.returncode == 0, answer.stderr[-3000:]
    assert FROM_SHARED.search(answer.stderr) is None
    pod = copy_of_built(built, tmp_path / "b")
    warm = run_in_process(asked, cwd=pod, env={"DBT_OML_LINEAGE_CACHE": str(shared)})
    assert warm.returncode == 0, warm.stderr[-3000:]
    (found,) = FROM_SHARED.findall(warm.stderr)
    assert int(found[0]) >= len(_column_lineage(first)) > 0
    assert found[1] == str(shared)
    assert warm.stdout.replace(str(pod), "<p>") == answer.stdout.replace(str(alone), "<p>")
