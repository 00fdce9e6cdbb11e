from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dbt_oml.artifacts import RunArtifacts, read_artifacts
from dbt_oml.config import load_settings
from dbt_oml.lineage.batch import (
    ANALYSED_TYPES,
    LineageReport,
    analyse_models,
    file_sources,
    known_columns,
    read_as_relations,
)
from dbt_oml.lineage.cache import DiskCache
from dbt_oml.lineage.codec import lineage_from_json, lineage_to_json
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.lineage.workers import analyse_one
from dbt_oml.pipeline.lineage import (
    NodeLineage,
    ProjectPlace,
    column_lineage_for,
    lineage_cache,
    prune_cache,
)
from dbt_oml.pipeline.report import Report
from tests.support.mini_models import MODELS


def test_catalog_columns_expand_stars(mini_target: Path) -> None:
    report = analyse_models(
        read_artifacts(mini_target), wanted=MODELS, dialect="duckdb", default_catalog="warehouse"
    )
    assert set(report.models) >= MODELS
    assert report.opaque == {}
    stg = report.models["model.jaffle_oml.stg_customers"].by_output()
    ((source, transforms),) = stg["customer_id"].inputs
    assert (source.table, source.column) == ("Customers", "CustomerId")
    assert transforms[0].subtype == "IDENTITY"


def test_without_catalog_upstream_outputs_and_seed_headers_are_used(mini_target: Path) -> None:
    (mini_target / "catalog.json").unlink()
    arts = read_artifacts(mini_target)
    report = analyse_models(
        arts,
        wanted={"model.jaffle_oml.core_customers"},
        dialect="duckdb",
        seed_headers={"seed.jaffle_oml.country_codes": ("code", "country_name", "region")},
    )
    # stg_customers selects * from a source whose YAML declares one column: it is opaque. So its
    # columns are unknown, and core_customers, which reads it through a CTE star with qualified
    # names only, learns them from what it reads; stg_country_codes expands the seed header.
    assert "model.jaffle_oml.stg_customers" in report.opaque
    core = report.models["model.jaffle_oml.core_customers"].by_output()
    assert {(s.table, s.column) for s, _ in core["full_name"].inputs} == {
        ("stg_customers", "first_name"),
        ("stg_customers", "last_name"),
    }
    codes = report.models["model.jaffle_oml.stg_country_codes"].by_output()
    assert set(codes) == {"code", "country_name", "region"}


def test_one_broken_model_costs_no_other_model_its_lineage(mini_target: Path) -> None:
    doc = json.loads((mini_target / "manifest.json").read_text())
    doc["nodes"]["model.jaffle_oml.stg_orders"]["compiled_code"] = "select from where ((("
    (mini_target / "manifest.json").write_text(json.dumps(doc))
    runs = json.loads((mini_target / "run_results.json").read_text())
    for r in runs["results"]:
        if r["unique_id"] == "model.jaffle_oml.stg_orders":
            r["compiled_code"] = "select from where((("
    (mini_target / "run_results.json").write_text(json.dumps(runs))
    report = analyse_models(read_artifacts(mini_target), wanted=MODELS, dialect="duckdb")
    assert report.opaque["model.jaffle_oml.stg_orders"].startswith("SQL does not parse")
    assert "model.jaffle_oml.core_orders" in report.models  # the catalog knows stg_orders' columns
    assert "model.jaffle_oml.stg_customers" in report.models


def test_disk_cache_hits_and_invalidation(mini_target: Path, tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    arts = read_artifacts(mini_target)
    cold = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=cache)
    warm = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=cache)
    assert cold.analysed == len(cold.models)
    assert cold.cache_hits == 0
    assert warm.analysed == 0
    assert warm.cache_hits == len(cold.models)
    assert warm.models == cold.models
    doc = json.loads((mini_target / "run_results.json").read_text())
    for r in doc["results"]:
        if r["unique_id"] == "model.jaffle_oml.core_customers":
            r["compiled_code"] += "\n-- changed"
    (mini_target / "run_results.json").write_text(json.dumps(doc))
    changed = analyse_models(
        read_artifacts(mini_target), wanted=MODELS, dialect="duckdb", cache=cache
    )
    assert changed.analysed == 1


def test_the_engines_verdict_is_cached_a_time_limit_is_not(
    mini_target: Path, tmp_path: Path
) -> None:
    """An unparseable model's reason is what the same SQL always gets: a warm run takes it from
    the cache (the engine is not asked again); a worker's time limit is tried again next run."""
    broken, slow = "model.jaffle_oml.stg_orders", "model.jaffle_oml.stg_customers"
    for name in ("manifest.json", "run_results.json"):
        doc = json.loads((mini_target / name).read_text())
        for entry in [*doc.get("nodes", {}).values(), *doc.get("results", [])]:
            if entry.get("unique_id") == broken and entry.get("compiled_code"):
                entry["compiled_code"] = "select from where((("
        (mini_target / name).write_text(json.dumps(doc))
    asked: list[str] = []

    def analyse(sql: str, **kwargs: Any) -> ModelLineage | str:
        asked.append(kwargs["unique_id"])
        if kwargs["unique_id"] == slow:
            return "analysis took longer than 30 s (given up)"  # a plain reason: not lasting
        return analyse_one(sql, **kwargs)

    arts, cache = read_artifacts(mini_target), DiskCache(tmp_path / "cache")
    cold = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=cache, analyse=analyse)
    assert cold.opaque[broken].startswith("SQL does not parse")
    asked.clear()
    warm = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=cache, analyse=analyse)
    assert asked == [slow]  # the verdict came from the cache; the time limit is tried again
    assert warm.opaque == cold.opaque
    assert warm.models == cold.models
    again = DiskCache(tmp_path / "cache")  # written to disk: a new process reads the verdict
    fresh = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=again, analyse=analyse)
    assert fresh.opaque[broken] == cold.opaque[broken]


def _edit(target: Path, unique_id: str, note: str) -> None:
    doc = json.loads((target / "run_results.json").read_text())
    for r in doc["results"]:
        if r["unique_id"] == unique_id:
            r["compiled_code"] += f"\n-- {note}"
    (target / "run_results.json").write_text(json.dumps(doc))


def _all_models(arts: RunArtifacts) -> set[str]:
    return {u for u, n in arts.manifest.nodes.items() if n.resource_type in ANALYSED_TYPES}


def _entries(root: Path) -> dict[str, Path]:
    """Every cache entry on disk (packs and the older one-file-per-model layout) -> its file."""
    out = {p.stem: p for p in root.glob("*/*.json")}
    for pack in root.glob("*.pack"):
        for line in pack.read_text().splitlines():
            out[line.partition("\t")[0]] = pack
    return out


def test_a_cold_run_writes_one_file(mini_target: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    cold = analyse_models(
        read_artifacts(mini_target), wanted=MODELS, dialect="duckdb", cache=DiskCache(root)
    )
    assert [p.suffix for p in root.iterdir()] == [".pack"]
    assert len(_entries(root)) == cold.analysed


def test_cache_drops_entries_the_manifest_no_longer_uses(mini_target: Path, tmp_path: Path) -> None:
    root = tmp_path / "cache"
    analyse_models(
        read_artifacts(mini_target), wanted=MODELS, dialect="duckdb", cache=DiskCache(root)
    )
    entries = len(_entries(root))
    for edit in ("one", "two"):
        _edit(mini_target, "model.jaffle_oml.core_customers", edit)
        arts = read_artifacts(mini_target)
        cache = DiskCache(root)
        again = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=cache)
        assert again.analysed == 1
        prune_cache(cache, arts, _all_models(arts))
        assert len(_entries(root)) == entries  # the old entry went
        assert len(list(root.glob("*.pack"))) == 1
    warm = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=DiskCache(root))
    assert warm.analysed == 0


def test_cache_after_a_partial_run_is_bounded_and_keeps_what_it_used(
    mini_target: Path, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    written: list[Path] = []
    for edit in range(4):  # four versions of one model: three stale entries
        _edit(mini_target, "model.jaffle_oml.core_customers", str(edit))
        analyse_models(
            read_artifacts(mini_target), wanted=MODELS, dialect="duckdb", cache=DiskCache(root)
        )
        (pack,) = set(root.glob("*.pack")) - set(written)
        os.utime(pack, (1_000_000 + edit, 1_000_000 + edit))  # a defined order of writing
        written.append(pack)
    entries = _entries(root)
    arts = read_artifacts(mini_target)
    cache = DiskCache(root)
    only = {"model.jaffle_oml.stg_orders"}
    analyse_models(arts, wanted=only, dialect="duckdb", cache=cache)
    prune_cache(cache, arts, only)  # partial: bounded by 2 entries per model, nothing to drop
    assert _entries(root) == entries
    assert cache.prune(keep_at_most=len(entries) - 2) == 2
    left = _entries(root)
    assert cache.used <= set(left)
    gone = set(entries) - set(left)
    assert len(gone) == 2
    assert all(entries[k] == written[0] for k in gone)  # the least recently written went


def test_entries_of_the_one_file_per_model_layout_are_read_and_pruned(
    mini_target: Path, tmp_path: Path
) -> None:
    root = tmp_path / "cache"
    arts = read_artifacts(mini_target)
    analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=DiskCache(root))
    (pack,) = root.glob("*.pack")
    for line in pack.read_text().splitlines():  # as dbt-oml 0.1 wrote them
        key, _, text = line.partition("\t")
        (root / key[:2]).mkdir(exist_ok=True)
        (root / key[:2] / f"{key}.json").write_text(text)
    pack.unlink()
    cache = DiskCache(root)
    warm = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=cache)
    assert warm.analysed == 0
    (root / "ff").mkdir(exist_ok=True)
    (root / "ff" / f"ff{'0' * 62}.json").write_text("{}")  # a stale one
    assert cache.prune(keep_at_most=0) == 1
    assert [p.suffix for p in root.iterdir()] == [".pack"]
    assert set(_entries(root)) == cache.used


def test_a_cache_without_the_old_layout_never_looks_for_its_files(
    mini_target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arts = read_artifacts(mini_target)
    asked: list[str] = []
    monkeypatch.setattr(DiskCache, "_path", lambda _self, key: asked.append(key) or tmp_path / "x")
    cold = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=DiskCache(tmp_path / "c"))
    warm = analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=DiskCache(tmp_path / "c"))
    assert cold.cache_hits == 0
    assert warm.analysed == 0
    assert asked == []  # a cold pod's thousands of misses cost no failed open each
    (tmp_path / "c" / "ab").mkdir()  # the old layout's folder: its files are looked for again
    analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=DiskCache(tmp_path / "c"))
    assert asked == []  # every entry is in the pack: nothing is missed
    fresh = DiskCache(tmp_path / "c")
    assert fresh.get("0" * 64) is None
    assert asked == ["0" * 64]


def test_corrupt_cache_entries_are_misses(mini_target: Path, tmp_path: Path) -> None:
    arts = read_artifacts(mini_target)
    analyse_models(arts, wanted=MODELS, dialect="duckdb", cache=DiskCache(tmp_path / "cache"))
    for pack in (tmp_path / "cache").glob("*.pack"):
        lines = pack.read_text().splitlines()
        pack.write_text("".join(line.partition("\t")[0] + "\t{broken\n" for line in lines))
    again = analyse_models(
        arts, wanted=MODELS, dialect="duckdb", cache=DiskCache(tmp_path / "cache")
    )
    assert again.cache_hits == 0
    assert again.opaque == {}


def test_json_round_trip(mini_target: Path) -> None:
    report = analyse_models(read_artifacts(mini_target), wanted=MODELS, dialect="duckdb")
    for lineage in report.models.values():
        assert lineage_from_json(lineage_to_json(lineage)) == lineage


def test_known_columns_prefers_the_catalog(mini_target: Path) -> None:
    arts = read_artifacts(mini_target)
    cols = known_columns(arts)
    assert [c.name for c in cols["source.jaffle_oml.crm.customers"]][:2] == [
        "CustomerId",
        "FirstName",
    ]


def test_parallel_workers_give_the_same_answers(mini_target: Path, monkeypatch) -> None:
    import sys

    from dbt_oml.lineage import batch as lineage_batch

    main = sys.modules["__main__"]
    arts = read_artifacts(mini_target)
    serial = analyse_models(arts, wanted=MODELS, dialect="duckdb")
    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    calls: list[tuple[int, int]] = []
    heard: dict[str, object] = {}
    parallel = analyse_models(
        arts,
        wanted=MODELS,
        dialect="duckdb",
        workers=2,
        progress=lambda d, t: calls.append((d, t)),
        settled=heard.__setitem__,
    )
    assert parallel.models == serial.models
    assert calls == [(len(serial.models), len(serial.models))]
    # every outcome was heard as it came: the lineage, or None for an opaque model
    assert heard == {**dict.fromkeys(parallel.opaque), **parallel.models}
    assert parallel.analysed == serial.analysed
    assert sys.modules["__main__"] is main  # hidden from the workers only while they start


def _add_file_source_model(target: Path, sql: str) -> str:
    """A dbt-duckdb source with external_location (relation_name is the file read) and a model
    reading it, as dbt compiles them; returns the model's unique_id."""
    doc = json.loads((target / "manifest.json").read_text())
    location = "read_json('data/matches/*/*.json', hive_partitioning = true)"
    doc["sources"]["source.jaffle_oml.api.matches"] = {
        "unique_id": "source.jaffle_oml.api.matches",
        "resource_type": "source",
        "name": "matches",
        "package_name": "jaffle_oml",
        "database": "warehouse",
        "schema": "api",
        "identifier": "matches",
        "relation_name": location,
        "meta": {
            "external_location": "read_json('data/{name}/*/*.json', hive_partitioning = true)"
        },
        "columns": {},
    }
    uid = "model.jaffle_oml.stg_matches"
    doc["nodes"][uid] = {
        **doc["nodes"]["model.jaffle_oml.stg_customers"],
        "unique_id": uid,
        "name": "stg_matches",
        "alias": "stg_matches",
        "relation_name": '"warehouse"."staging"."stg_matches"',
        "depends_on": {"nodes": ["source.jaffle_oml.api.matches"]},
        "compiled_code": sql.format(source=location),
    }
    (target / "manifest.json").write_text(json.dumps(doc))
    return uid


def test_a_file_source_is_attributed_to_the_source_not_its_files(mini_target: Path) -> None:
    sql = (
        "with landed as (select * from {source})\n"
        "select m._meta.params.fixture as fixture_id, m.season from landed as m"
    )
    uid = _add_file_source_model(mini_target, sql)
    report = analyse_models(read_artifacts(mini_target), wanted={uid}, dialect="duckdb")
    edges = report.models[uid].by_output()
    ((source, (transform,)),) = edges["fixture_id"].inputs
    assert (source.catalog, source.schema, source.table, source.column) == (
        "warehouse",
        "api",
        "matches",
        "_meta",
    )
    assert (transform.type, transform.subtype) == ("DIRECT", "TRANSFORMATION")
    assert transform.description == "field _meta.params.fixture"
    ((season, _),) = edges["season"].inputs
    assert (season.catalog, season.schema, season.table) == ("warehouse", "api", "matches")


def test_file_sources_map_each_location_to_its_one_source(mini_target: Path) -> None:
    _add_file_source_model(mini_target, "select 1 as one")
    external = file_sources(read_artifacts(mini_target))
    assert external == {
        "read_json('data/matches/*/*.json', hive_partitioning = true)": (
            '"warehouse"."api"."matches"'
        )
    }  # the crm sources render as tables: nothing to map
    sql = "select a from read_json('data/matches/*/*.json', hive_partitioning = true) as s"
    assert read_as_relations(sql, external) == 'select a from "warehouse"."api"."matches" as s'


SNAPSHOT = "snapshot.jaffle_oml.customers_snapshot"


def _plugin_run(
    target: Path, known: dict[str, ModelLineage]
) -> tuple[dict[str, ModelLineage], dict[str, ModelLineage]]:
    """A wrapper run (every model in the cache), then a plugin run of the same artifacts: each
    model analysed as its node finished, through `known`'s cache if it has one, the snapshot
    (dbt writes no compiled file for it) at the end, which prunes. (first, plugin) lineage.

    Every node succeeds: a run over the whole manifest, after which pruning keeps only what the
    run used (a partial run would keep a bounded number of other entries anyway)."""
    runs = json.loads((target / "run_results.json").read_text())
    for result in runs["results"]:
        result["status"] = "pass" if result["unique_id"].startswith("test.") else "success"
    (target / "run_results.json").write_text(json.dumps(runs))
    arts = read_artifacts(target)
    settings = load_settings(cli={}, environ={}, cwd=target, home=target)
    place = ProjectPlace(
        project_root=target, target_path=target, dialect="duckdb", default_catalog="warehouse"
    )
    first = column_lineage_for(settings, arts, place=place, report=Report())
    shared = isinstance(known, NodeLineage)
    cache = known.cache_for(target, settings, project="jaffle_oml") if shared else None
    for uid in sorted(set(first) - {SNAPSHOT}):
        found = analyse_models(
            arts, wanted={uid}, dialect="duckdb", default_catalog="warehouse", cache=cache
        )
        known[uid] = found.models[uid]
    plugin = column_lineage_for(settings, arts, place=place, report=Report(), known=known)
    return first, plugin


def _reanalyse(target: Path, wanted: set[str]) -> LineageReport:
    """The same models analysed again through the project's disk cache (a later emit)."""
    return analyse_models(
        read_artifacts(target),
        wanted=wanted,
        dialect="duckdb",
        default_catalog="warehouse",
        cache=lineage_cache(target),
    )


def test_a_plugin_run_prunes_no_cache_entry_its_nodes_used(mini_target: Path) -> None:
    known = NodeLineage()
    first, plugin = _plugin_run(mini_target, known)
    assert SNAPSHOT in first
    assert plugin == first
    assert known.cache is not None
    assert known.cache.used  # the nodes' analyses were cache hits
    after = _reanalyse(mini_target, set(first))
    assert (after.analysed, after.cache_hits) == (0, len(first))
    # what the run used stays, nothing else: each model's lineage, and the opaque model's verdict
    entries = set(_entries(mini_target / "dbt_oml" / "lineage-cache"))
    assert entries == known.cache.used
    assert len(entries) == len(first) + 1


def test_lineage_made_elsewhere_leaves_the_cache_unpruned(mini_target: Path) -> None:
    # models known from an analysis whose cache entries are unknown: none of them is dropped
    first, _ = _plugin_run(mini_target, {})
    after = _reanalyse(mini_target, set(first))
    assert (after.analysed, after.cache_hits) == (0, len(first))
