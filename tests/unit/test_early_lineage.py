"""pipeline.lineage.EarlyLineage (issue 31 item 3): a build's models analysed in the background
from the warehouse's columns while dbt writes catalog.json. Its analyses only fill the cache;
the end of the run takes them under its own keys, so columns the catalog spells otherwise mean
an analysis again there, never a wrong answer."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dbt_oml.artifacts import Catalog, Column, read_artifacts
from dbt_oml.config import load_settings
from dbt_oml.lineage import batch as lineage_batch
from dbt_oml.lineage.workers import Prestarted
from dbt_oml.pipeline.lineage import EarlyLineage, ProjectPlace, column_lineage_for
from dbt_oml.pipeline.report import Report


def _place(target: Path) -> ProjectPlace:
    return ProjectPlace(
        project_root=target, target_path=target, dialect="duckdb", default_catalog="warehouse"
    )


@pytest.mark.parametrize("same_columns", [True, False], ids=["same columns", "a column differs"])
def test_the_end_takes_the_early_analyses_only_under_its_own_keys(
    same_columns: bool, mini_target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lineage_batch, "PARALLEL_THRESHOLD", 1)
    settings = load_settings(cli={}, environ={}, cwd=mini_target, home=mini_target)
    arts = read_artifacts(mini_target)
    assert arts.catalog is not None
    expected = column_lineage_for(
        settings, arts, place=_place(mini_target / "fresh"), report=Report()
    )
    live = arts.catalog
    if not same_columns:  # the warehouse answered with a type the catalog spells otherwise
        uid, columns = next(iter(live.columns.items()))
        changed = (Column(name=columns[0].name, type="ODD"), *columns[1:])
        live = Catalog(path="adapter", generated_at=None, columns={**live.columns, uid: changed})
    early = EarlyLineage(
        settings, replace(arts, catalog=live), _place(mini_target), Prestarted(2).start()
    )
    known = early.join()
    report = Report()
    got = column_lineage_for(settings, arts, place=_place(mini_target), report=report, known=known)
    assert got == expected
    assert known.cache is not None
    assert known.cache.used  # the end looked its models up in the early analyses' cache
