"""The shared lineage cache (`lineage_cache`, issue 31 item 4), on the mini artifacts: a new pod
(an empty target cache) takes what the last run shared; a failing store costs one warning."""

from __future__ import annotations

import gzip
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from dbt_oml.artifacts import read_artifacts
from dbt_oml.config.outbox_url import parse_cache_url
from dbt_oml.errors import ConfigError, SharedCacheError
from dbt_oml.lineage.batch import ANALYSED_TYPES, analyse_models
from dbt_oml.lineage.cache import DiskCache
from dbt_oml.pipeline.lineage import prune_cache
from dbt_oml.stores.packs import PackStore, pack_name
from tests.support.mini_models import MODELS


def _pod(target: Path, shared: object) -> DiskCache:
    """A new pod's cache: its own empty folder, over the shared store."""
    return DiskCache(target, shared)  # type: ignore[arg-type]


def _run(mini: Path, cache: DiskCache) -> tuple[int, int]:
    """(models analysed, models from a cache) of one run that ends as a command's does."""
    arts = read_artifacts(mini)
    report = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=cache)
    wanted = {u for u, n in arts.manifest.nodes.items() if n.resource_type in ANALYSED_TYPES}
    prune_cache(cache, arts, wanted)
    return report.analysed, report.cache_hits


def test_a_new_pod_is_warm_from_a_shared_folder(mini_target: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    first = _pod(tmp_path / "a", PackStore(str(shared), scope="jaffle_oml"))
    analysed, hits = _run(mini_target, first)
    assert analysed >= len(MODELS)
    assert hits == 0
    pack = shared / pack_name("jaffle_oml")
    written = pack.read_bytes()
    assert len(gzip.decompress(written).splitlines()) == analysed

    second = _pod(tmp_path / "b", PackStore(str(shared), scope="jaffle_oml"))
    assert _run(mini_target, second) == (0, analysed)
    assert second.from_shared == analysed
    assert pack.read_bytes() == written  # nothing changed: nothing written
    third = _pod(tmp_path / "b", PackStore(str(shared), scope="jaffle_oml"))
    assert _run(mini_target, third) == (0, analysed)
    assert third.from_shared == 0  # the second pod kept what it took: its own disk is warm


class _Memory:
    """A shared store in memory that records what it was asked to do (or fails when told)."""

    where = "memory"

    def __init__(self, fail: str = "") -> None:
        self.entries: dict[str, str] = {}
        self.index: list[str] = []
        self.saves: list[tuple[set[str], list[str], list[str]]] = []
        self.fail = fail

    def _maybe_fail(self, call: str) -> None:
        if call == self.fail:
            raise SharedCacheError(where=self.where, reason="connection refused")

    def keys(self) -> Sequence[str]:
        self._maybe_fail("keys")
        return list(self.index)

    def fetch(self, keys: Iterable[str]) -> dict[str, str]:
        self._maybe_fail("fetch")
        return {k: self.entries[k] for k in keys if k in self.entries}

    def save(self, new: Mapping[str, str], index: Sequence[str], drop: Iterable[str]) -> None:
        self._maybe_fail("save")
        gone = list(drop)
        self.saves.append((set(new), list(index), gone))
        self.entries.update(new)
        for key in gone:
            self.entries.pop(key, None)
        self.index = list(index)


def test_only_what_the_store_lacks_is_sent_and_stale_keys_are_bounded(
    mini_target: Path, tmp_path: Path
) -> None:
    store = _Memory()
    analysed, _ = _run(mini_target, _pod(tmp_path / "a", store))
    ((new, index, drop),) = store.saves
    assert len(new) == len(index) == analysed
    assert drop == []
    # an old project's keys the store listed: kept up to 2 per model, the oldest go first
    store.index += [f"old{i}" for i in range(100)]
    store.entries.update({f"old{i}": "{}" for i in range(100)})
    _run(mini_target, _pod(tmp_path / "b", store))
    new, index, drop = store.saves[-1]
    models = len(
        [
            u
            for u, n in read_artifacts(mini_target).manifest.nodes.items()
            if n.resource_type in ANALYSED_TYPES and n.materialized != "ephemeral"
        ]
    )
    assert new == set()
    assert len(index) == 2 * models
    assert drop == [f"old{i}" for i in range(2 * models - analysed, 100)]
    assert set(store.entries) == set(index)


@pytest.mark.parametrize("fail", ["keys", "fetch", "save"])
def test_a_failing_store_costs_one_warning_and_no_lineage(
    fail: str, mini_target: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = _Memory()
    analysed, _ = _run(mini_target, _pod(tmp_path / "a", store))
    store.fail = fail
    if fail == "save":  # a warm pod writes nothing: a cold one against an empty store does
        store.entries, store.index = {}, []
    with caplog.at_level(logging.WARNING, logger="dbt_oml"):
        again, hits = _run(mini_target, _pod(tmp_path / "b", store))
    assert again + hits == analysed  # every model has its lineage, whatever failed
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [
        "lineage cache memory: connection refused; models are analysed here and nothing is "
        "shared this run"
    ]


def test_a_damaged_pack_is_a_miss_and_is_written_anew(
    mini_target: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    pack = shared / pack_name("jaffle_oml")
    pack.write_bytes(b"<html>502 Bad Gateway</html>")
    with caplog.at_level(logging.WARNING, logger="dbt_oml"):
        analysed, _ = _run(
            mini_target, _pod(tmp_path / "a", PackStore(str(shared), scope="jaffle_oml"))
        )
    assert analysed >= len(MODELS)
    assert [r.getMessage() for r in caplog.records] == [
        f"lineage cache {shared}: {pack} is not a gzip pack; it is written anew at the end of "
        "this run"
    ]
    assert len(gzip.decompress(pack.read_bytes()).splitlines()) == analysed


def test_a_folder_that_is_a_file_is_one_warning(
    mini_target: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="dbt_oml"):
        analysed, _ = _run(
            mini_target, _pod(tmp_path / "a", PackStore(str(blocker / "cache"), scope="p"))
        )
    assert analysed >= len(MODELS)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"lineage cache {blocker / 'cache'}: NotADirectoryError: ")
    assert line.endswith("; models are analysed here and nothing is shared this run")


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("nats://nats:4222/dbt_lineage", "nats://nats:4222/dbt_lineage"),
        ("nats://a:4222,b:4222/L/", "nats://a:4222,b:4222/L"),
        ("file:///var/cache/dbt-oml", "/var/cache/dbt-oml"),
        ("/srv/shared", "/srv/shared"),
    ],
)
def test_lineage_cache_urls(given: str, parsed: str) -> None:
    assert parse_cache_url(given, "lineage_cache", "test") == parsed


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("nats://nats:4222", "names no key-value bucket"),
        ("nats://nats:4222/a.b", "names no key-value bucket"),
        ("memory://x", "keeps nothing after a run"),
        ("s3://bucket/p?key=x", "carries no credentials and no query string"),
    ],
)
def test_lineage_cache_url_mistakes(given: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        parse_cache_url(given, "lineage_cache", "test")
