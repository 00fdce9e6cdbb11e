"""One model planned alone as dbt finishes it (lineage.early): the key it is cached under is the
one the end of the run computes from catalog.json, and its job analyses to the end's lineage."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from dbt_oml.artifacts import Column, Manifest, RunArtifacts, read_artifacts
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.lineage.codec import lineage_from_json
from dbt_oml.lineage.early import Planned, file_read_sources, plan_alone
from dbt_oml.lineage.model import ModelLineage
from dbt_oml.lineage.types import Lasting
from dbt_oml.lineage.workers import analyse_job
from dbt_oml.pipeline.lineage import Spellings
from tests.support.mini_models import MODELS


class Recording:
    """A lineage cache in memory that remembers the keys it was given."""

    def __init__(self) -> None:
        self.entries: dict[str, ModelLineage | Lasting] = {}

    def get(self, key: str) -> ModelLineage | Lasting | None:
        return self.entries.get(key)

    def put(self, key: str, value: ModelLineage | Lasting) -> None:
        self.entries[key] = value

    def put_entry(self, key: str, text: str) -> None:
        self.entries[key] = lineage_from_json(text)

    def flush(self) -> None:
        pass


def _before_the_run(manifest: Manifest) -> Manifest:
    """The manifest dbt writes before it runs: no compiled SQL yet."""
    nodes = {uid: replace(n, compiled_code=None) for uid, n in manifest.nodes.items()}
    return replace(manifest, nodes=nodes)


def _plans(arts: RunArtifacts, cache: Recording) -> dict[str, Planned | None]:
    assert arts.catalog is not None
    assert arts.run_results is not None
    manifest = _before_the_run(arts.manifest)
    spellings = Spellings(manifest)
    for uid, cols in arts.catalog.columns.items():
        if uid in manifest.nodes:
            spellings.add(manifest.nodes[uid], cols)
    results = {r.unique_id: r for r in arts.run_results.results}
    out: dict[str, Planned | None] = {}
    for uid in sorted(MODELS):
        node = manifest.nodes[uid]
        relations = [node, *manifest.relations_read(node)]
        columns: dict[str, tuple[Column, ...]] = {
            n.unique_id: arts.catalog.columns[n.unique_id]
            for n in relations
            if arts.catalog.columns.get(n.unique_id)
        }
        out[uid] = plan_alone(
            manifest,
            node,
            sql=results[uid].compiled_code or "",
            columns=columns,
            file_reads=file_read_sources(manifest),
            dialect="duckdb",
            default_catalog="warehouse",
            spelling=spellings.of(relations, columns),
            cache=cache,
        )
    return out


def test_each_model_alone_has_the_key_and_lineage_the_end_of_the_run_gives(
    mini_target: Path,
) -> None:
    arts = read_artifacts(mini_target)
    alone = _plans(arts, Recording())
    end = Recording()
    report = analyse_models(
        arts, wanted=MODELS, dialect="duckdb", default_catalog="warehouse", cache=end
    )
    assert set(report.models) >= MODELS  # and the ancestors they read
    for uid in MODELS:
        planned = alone[uid]
        assert planned is not None, uid
        assert end.entries[planned.key] == report.models[uid]
        assert analyse_job(planned.job) == report.models[uid]


def test_a_model_the_cache_has_is_not_planned(mini_target: Path) -> None:
    arts = read_artifacts(mini_target)
    cache = Recording()
    analyse_models(arts, wanted=MODELS, dialect="duckdb", default_catalog="warehouse", cache=cache)
    assert _plans(arts, cache) == dict.fromkeys(sorted(MODELS))


def test_other_columns_give_another_key(mini_target: Path) -> None:
    arts = read_artifacts(mini_target)
    assert arts.catalog is not None
    first = _plans(arts, Recording())
    uid = "model.jaffle_oml.stg_orders"
    source = next(
        u for u in arts.manifest.nodes if u.startswith("source.") and u.endswith("orders")
    )
    wider = {**arts.catalog.columns, source: (*arts.catalog.columns[source], Column(name="extra"))}
    widened = replace(arts, catalog=replace(arts.catalog, columns=wider))
    second = _plans(widened, Recording())
    before, after = first[uid], second[uid]
    assert before is not None
    assert after is not None
    assert before.key != after.key


def test_a_name_the_catalog_spells_otherwise_gives_another_key(mini_target: Path) -> None:
    """The end spells each name as the catalog's first relation having it does, a relation a
    model planned alone may not have seen: equal keys must mean equal lineage."""
    arts = read_artifacts(mini_target)
    assert arts.catalog is not None
    uid = "model.jaffle_oml.stg_customers"  # reads crm's "CustomerId"
    reads = {n.unique_id for n in arts.manifest.relations_read(arts.manifest.nodes[uid])}
    first = next(u for u in arts.manifest.nodes if u in arts.catalog.columns and u not in reads)
    shouting = (*arts.catalog.columns[first], Column(name="CUSTOMERID", type="VARCHAR"))
    catalog = replace(arts.catalog, columns={**arts.catalog.columns, first: shouting})
    arts = replace(arts, catalog=catalog)
    end = Recording()
    report = analyse_models(
        arts, wanted={uid}, dialect="duckdb", default_catalog="warehouse", cache=end
    )
    alone = _plans(
        replace(
            arts,
            catalog=replace(
                catalog, columns={u: c for u, c in catalog.columns.items() if u != first}
            ),
        ),
        Recording(),
    )[uid]
    assert alone is not None
    lineage = analyse_job(alone.job)
    assert lineage != report.models[uid]  # CUSTOMERID at the end, CustomerId alone
    assert alone.key not in end.entries
