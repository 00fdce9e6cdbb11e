"""The artifacts hold one copy of what recurs: a model's SQL that run_results.json and
manifest.json both carry, a column type a catalog names thousands of times."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dbt_oml.artifacts import read_artifacts


def test_a_models_sql_is_held_once_when_both_artifacts_carry_it(mini_target: Path) -> None:
    arts = read_artifacts(mini_target)
    assert arts.run_results is not None
    nodes = arts.manifest.nodes
    with_sql = [r for r in arts.run_results.results if r.compiled_code]
    assert with_sql
    for result in with_sql:
        node = nodes[result.unique_id]
        if node.compiled_code == result.compiled_code:
            assert node.compiled_code is result.compiled_code


def test_sql_that_differs_stays_each_artifacts_own(mini_target: Path, tmp_path: Path) -> None:
    target = tmp_path / "edited"
    shutil.copytree(mini_target, target)
    doc = json.loads((target / "run_results.json").read_text())
    changed = next(r for r in doc["results"] if r.get("compiled_code"))
    changed["compiled_code"] += "\n-- edited after the manifest was written"
    (target / "run_results.json").write_text(json.dumps(doc))
    arts = read_artifacts(target)
    assert arts.run_results is not None
    result = next(r for r in arts.run_results.results if r.unique_id == changed["unique_id"])
    assert result.compiled_code == changed["compiled_code"]
    assert arts.manifest.nodes[result.unique_id].compiled_code != result.compiled_code


def test_a_column_type_is_one_string_however_often_the_catalog_names_it(
    mini_target: Path,
) -> None:
    arts = read_artifacts(mini_target)
    assert arts.catalog is not None
    by_type: dict[str, list[str]] = {}
    for columns in arts.catalog.columns.values():
        for column in columns:
            if column.type:
                by_type.setdefault(column.type, []).append(column.type)
    repeated = [kinds for kinds in by_type.values() if len(kinds) > 1]
    assert repeated
    for kinds in repeated:
        assert all(k is kinds[0] for k in kinds)
