"""After `dbt-oml build`, target/ holds what dbt alone would have left, catalog.json included:
written as a whole build ends from what dbt still holds (dbt.catalog_file), the catalog a plain
`dbt docs generate` writes; after a partial build by `dbt docs generate`, compiling."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import CliRun, copy_of_built, run_cli, run_plain_dbt, run_script

pytestmark = pytest.mark.integration


def test_target_ends_as_the_build_left_it(built: CliRun) -> None:
    """docs generate's run_results/manifest are kept aside; target/ holds the build's, as dbt
    alone would have left them (dbt retry, result: selectors and artifact uploads read them)."""
    results = json.loads((built.target / "run_results.json").read_text())
    assert results["args"]["which"] == "build"
    invocation = results["metadata"]["invocation_id"]
    manifest = json.loads((built.target / "manifest.json").read_text())
    assert manifest["metadata"]["invocation_id"] == invocation
    # `docs generate --no-compile` writes neither (dbt-core 1.11); whatever a docs generate does
    # write over them is kept aside in dbt_oml/docs_generate/ (tests/unit/test_artifacts.py)
    docs = built.target / "dbt_oml" / "docs_generate"
    if (docs / "run_results.json").exists():
        assert json.loads((docs / "run_results.json").read_text())["args"]["which"] == "generate"
    assert not (built.target / "dbt_oml" / "build").exists()
    assert not list(built.target.glob("*.build.json"))
    assert (built.target / "catalog.json").exists()


def test_the_catalog_is_the_one_a_compiling_docs_generate_writes(
    built: CliRun, tmp_path: Path
) -> None:
    """dbt-oml's `docs generate --no-compile` (the build compiled what it ran) writes the catalog
    a plain `dbt docs generate`, which compiles every node first, writes: the same columns and
    types for every node and source (on a copy, so the build's own logs stay as they were)."""
    copy = tmp_path / "project"
    shutil.copytree(built.project, copy, ignore=shutil.ignore_patterns("logs", "target"))
    plain = run_plain_dbt(
        ["docs", "generate", "--profiles-dir", ".", "--target-path", "plain"], cwd=copy
    )
    assert plain.returncode == 0, plain.stderr[-2000:]
    ours = json.loads((built.target / "catalog.json").read_text())
    theirs = json.loads((copy / "plain" / "catalog.json").read_text())
    assert ours["nodes"] == theirs["nodes"]
    assert ours["sources"] == theirs["sources"]
    assert len(ours["nodes"]) > 10


def test_a_whole_build_writes_its_catalog_without_a_second_dbt_run(built: CliRun) -> None:
    """After a build of the whole project the catalog is written as the build ends, from the
    adapter and manifest dbt still holds (dbt.catalog_file): one dbt invocation, one parse, and
    what `dbt docs generate` leaves (catalog.json, index.html) is there; the catalog's columns are
    a plain docs generate's (the test above)."""
    log = (built.project / "logs" / "dbt.log").read_text()
    assert log.count("Running with dbt=") == 1
    assert log.count("Starting full parse") == 1
    results = json.loads((built.target / "run_results.json").read_text())
    catalog = json.loads((built.target / "catalog.json").read_text())
    assert catalog["metadata"]["invocation_id"] == results["metadata"]["invocation_id"]
    assert catalog["errors"] is None
    assert (built.target / "index.html").stat().st_size > 1000


def test_a_partial_build_still_runs_docs_generate_with_the_builds_parse(
    built: CliRun, tmp_path: Path
) -> None:
    """A --select build compiled only what it ran: `dbt docs generate` (compiling) writes the
    catalog, with the flags the build got, so dbt's partial parsing holds."""
    project = copy_of_built(built, tmp_path / "p")
    (project / "logs").mkdir(exist_ok=True)
    (project / "logs" / "dbt.log").write_text("")
    run = run_cli(["build", "--profiles-dir", ".", "--select", "stg_customers"], cwd=project)
    assert run.returncode == 0, run.stderr[-3000:]
    log = (project / "logs" / "dbt.log").read_text()
    assert log.count("Running with dbt=") == 2
    assert "Starting full parse" not in log
    assert "config vars, config profile, or config target have changed" not in log
    docs = project / "target" / "dbt_oml" / "docs_generate" / "run_results.json"
    assert json.loads(docs.read_text())["args"]["which"] == "generate"


def _run_at_end(script: str, project: Path) -> subprocess.CompletedProcess[str]:
    """`script` (a dbt run of stg_orders whose end it inspects) in its own process: dbt keeps
    global state per process, and the adapter it leaves is what the script reads."""
    proc = run_script(script, ["run", "--profiles-dir", ".", "-s", "stg_orders"], cwd=project)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


_HELD_VS_READ = """
import json
import sys
from pathlib import Path
from dbt_common.clients.system import write_json
from dbt_oml.artifacts import read_catalog
from dbt_oml.dbt.catalog_file import write_catalog
from dbt_oml.dbt.runner import run_dbt

held, early = [], []
run = run_dbt(
    sys.argv[1:], at_end=lambda ctx: held.append(write_catalog(ctx.target_path, early=early.append))
)
assert run.return_code == 0, run.error
assert len(held) == 1 and not isinstance(held[0], str), held
assert len(early) == 1 and early[0] is held[0], "the early catalog is not the one held"
path = Path(held[0].path)
assert path.samefile(Path("target") / "catalog.json"), path
read = read_catalog(path)
assert held[0] == read, "the catalog held differs from the one read back"
write_json(str(Path("dbt-wrote.json").resolve()), json.loads(path.read_text()))
assert path.read_bytes() == Path("dbt-wrote.json").read_bytes(), "not dbt's writer's bytes"
print(len(read.columns), sum(map(len, read.columns.values())))
"""


def test_the_catalog_held_is_the_one_read_back(built: CliRun, tmp_path: Path) -> None:
    """The build's end keeps the catalog it wrote instead of reading catalog.json again: what it
    holds (made of the adapter's rows, and handed `early` to the lineage before the file is
    written) equals what reading the file gives (every relation, column, type, index, comment,
    and generated_at), so the events are those `dbt-oml emit` makes from the file; and the file
    is byte for byte what dbt's own writer gives for that document."""
    proc = _run_at_end(_HELD_VS_READ, copy_of_built(built, tmp_path / "p"))
    relations, columns = map(int, proc.stdout.split()[-2:])
    assert relations > 10
    assert columns > relations


_ROWS_BOTH_WAYS = """
import sys
from itertools import chain
from dbt.adapters.factory import FACTORY
from dbt_oml.dbt.catalog_file import _rows_by_dbt, catalog_rows
from dbt_oml.dbt.duckdb_catalog import duckdb_catalog_rows
from dbt_oml.dbt.runner import run_dbt

seen = []
#: comments agate might read as something else: each must come out as the string it is
COMMENTS = [
    "comment on view {orders} is 'null'",
    "comment on column {orders}.order_id is '123'",
    "comment on column {orders}.status is ''",
    "comment on column {orders}.amount is 'true'",
]


def canonical(rows):
    return sorted(tuple(sorted((k, repr(v)) for k, v in row.items())) for row in rows)


def both_ways(ctx):
    (adapter,) = FACTORY.adapters.values()
    manifest = adapter.get_macro_resolver()

    def nodes():
        relational = [n for n in manifest.nodes.values() if n.is_relational]
        return chain([n for n in relational if not n.is_ephemeral_model], manifest.sources.values())

    used = manifest.get_used_schemas()
    (orders,) = [n.relation_name for n in manifest.nodes.values() if n.name == "stg_orders"]
    with adapter.connection_named("generate_catalog"):
        for comment in COMMENTS:
            adapter.execute(comment.format(orders=orders))
        table, theirs_failed = adapter.get_filtered_catalog(nodes(), used, None)
        rows, ours_failed = catalog_rows(adapter, nodes(), used)
        catalogs = [(i, s) for i, s in adapter._get_catalog_schemas(nodes()).items() if s]
        fast = duckdb_catalog_rows(adapter, manifest, catalogs, used)
        by_dbt, _ = _rows_by_dbt(adapter, catalogs, used)
    theirs = [dict(zip(table.column_names, row)) for row in table]
    seen.append(canonical(rows) == canonical(theirs))
    seen.append(fast is not None and canonical(fast) == canonical(theirs) == canonical(by_dbt))
    seen.append(sorted({r["column_comment"] for r in rows if r["table_name"] == "stg_orders"}, key=repr))
    seen.append(list(rows[0]) == list(table.column_names))
    seen.extend([len(rows), len({r["table_database"] for r in rows}), len(ours_failed), len(theirs_failed)])


run = run_dbt(sys.argv[1:], at_end=both_ways)
assert run.return_code == 0, run.error
print(*seen, *run.listener_errors, sep="|")
"""


def test_the_catalogs_rows_are_the_adapters(built: CliRun, tmp_path: Path) -> None:
    """catalog_rows gives what the adapter's get_filtered_catalog gives, value for value (types
    included) and column for column, over the project's catalogs (the warehouse and the
    attached ones), without agate merging the per-catalog tables; and so do dbt-duckdb's query
    read without agate (dbt.duckdb_catalog, which catalog_rows takes here) and dbt's queries
    merged without it, with comments agate could have read as a number, a boolean or NULL."""
    proc = _run_at_end(_ROWS_BOTH_WAYS, copy_of_built(built, tmp_path / "p"))
    *_, said = proc.stdout.strip().splitlines()
    same, fast_same, comments, same_columns, rows, catalogs, ours_failed, theirs_failed = (
        said.split("|")
    )
    assert (same, fast_same, same_columns) == ("True", "True", "True")
    assert comments == repr(["", "123", "true", None])
    assert int(rows) > 50
    assert int(catalogs) >= 2  # more than one table merged
    assert ours_failed == theirs_failed == "0"


_OVERRIDDEN = """
import sys
from itertools import chain
from dbt.adapters.factory import FACTORY
from dbt_oml.dbt.catalog_file import catalog_rows
from dbt_oml.dbt.duckdb_catalog import duckdb_catalog_rows
from dbt_oml.dbt.runner import run_dbt

seen = []


def at_end(ctx):
    (adapter,) = FACTORY.adapters.values()
    manifest = adapter.get_macro_resolver()
    nodes = lambda: chain(  # noqa: E731
        [n for n in manifest.nodes.values() if n.is_relational and not n.is_ephemeral_model],
        manifest.sources.values(),
    )
    used = manifest.get_used_schemas()
    with adapter.connection_named("generate_catalog"):
        catalogs = [(i, s) for i, s in adapter._get_catalog_schemas(nodes()).items() if s]
        seen.append(duckdb_catalog_rows(adapter, manifest, catalogs, used) is None)
        rows, _ = catalog_rows(adapter, nodes(), used)
    seen.append(sorted({r["table_comment"] for r in rows}, key=repr))


run = run_dbt(sys.argv[1:], at_end=at_end)
assert run.return_code == 0, run.error
print(*seen, sep="|")
"""

#: A project's own catalog macro: the table comment says whose query ran.
_OVERRIDE = """
{% macro duckdb__get_catalog(information_schema, schemas) -%}
  {% set query %}
    with tables as (
      {{ duckdb__get_catalog_tables_sql(information_schema) }}
      {{ duckdb__get_catalog_schemas_where_clause_sql(schemas) }}
    ),
    columns as (
      {{ duckdb__get_catalog_columns_sql(information_schema) }}
      {{ duckdb__get_catalog_schemas_where_clause_sql(schemas) }}
    )
    select tables.table_database, tables.table_schema, tables.table_name, tables.table_type,
      'the project''s macro' as table_comment, columns.column_name, columns.column_index,
      columns.column_type, columns.column_comment, null as table_owner
    from tables join columns using (table_database, table_schema, table_name)
    order by table_schema, table_name, column_index
  {% endset %}
  {{ return(run_query(query)) }}
{%- endmacro %}
"""


def test_a_projects_own_catalog_macro_is_run_as_dbt_runs_it(built: CliRun, tmp_path: Path) -> None:
    """When the project defines a catalog macro of its own, dbt-duckdb's query is not run
    without agate: dbt's path runs the project's macro, as `dbt docs generate` would."""
    project = copy_of_built(built, tmp_path / "p")
    (project / "macros" / "own_catalog.sql").write_text(_OVERRIDE)
    proc = _run_at_end(_OVERRIDDEN, project)
    *_, said = proc.stdout.strip().splitlines()
    fell_back, comments = said.split("|")
    assert fell_back == "True"
    assert comments == repr(["the project's macro"])


def _dbt_manifest(path: Path) -> Any:
    """dbt's own Manifest object of a manifest.json, as dbt reads one back."""
    from dbt.contracts.graph.manifest import Manifest, WritableManifest

    return Manifest.from_writable_manifest(WritableManifest.read_and_check_versions(str(path)))


def _respelled(draw: st.DrawFn, name: str) -> str:
    """`name` or a spelling of it in another case (the same relation to dbt's lower-case key)."""
    return draw(st.sampled_from([name, name.upper(), name.title()]))


@st.composite
def _rows(draw: st.DrawFn, relations: list[tuple[str | None, str, str]]) -> list[dict[str, Any]]:
    """Catalog rows as an adapter gives them: relations of the manifest (respelled, or none
    of it), columns repeated, empty types and comments, a database of NULL."""
    known = st.sampled_from(relations)
    unknown = st.tuples(st.just("w"), st.just("main"), st.sampled_from(["nobody", "t"]))
    rows = []
    for _ in range(draw(st.integers(0, 25))):
        database, schema, name = draw(st.one_of(known, known, unknown))
        if database is not None and draw(st.integers(0, 9)) == 0:
            database = None
        rows.append(
            {
                "table_database": database and _respelled(draw, database),
                "table_schema": _respelled(draw, schema),
                "table_name": _respelled(draw, name),
                "table_type": draw(st.sampled_from(["BASE TABLE", "VIEW"])),
                "table_comment": None,
                "column_name": draw(st.sampled_from(["id", "ID", "amount", "x y"])),
                "column_index": draw(st.integers(1, 6)),
                "column_type": draw(st.sampled_from(["INTEGER", "VARCHAR", ""])),
                "column_comment": draw(st.sampled_from([None, "", "a note"])),
                "table_owner": None,
            }
        )
    return rows


def test_the_catalog_of_the_rows_is_the_one_dbt_docs_writes(built: CliRun) -> None:
    """The catalog the build's end makes of the adapter's rows (catalog_of_rows, which the
    lineage workers start on before catalog.json is written) is, for any rows, the one
    `catalog_from_document` reads from the document dbt-docs' own objects make of them
    (catalog_document): the tables as dbt groups them, their columns, the unique_ids they map
    to through dbt's own mapping of this project's manifest, and generated_at."""
    from datetime import datetime

    from dbt.exceptions import AmbiguousCatalogMatchError
    from dbt.task.docs.generate import get_unique_id_mapping

    from dbt_oml.artifacts import catalog_from_document
    from dbt_oml.dbt.catalog_file import catalog_document, catalog_of_rows

    manifest = _dbt_manifest(built.target / "manifest.json")
    node_map, source_map = get_unique_id_mapping(manifest)
    relations = [
        (n.database, n.schema, n.identifier)
        for n in [*manifest.nodes.values(), *manifest.sources.values()]
        if n.resource_type != "test"
    ]
    at, path = datetime(2026, 12, 5, 19, 30, 1, 250000), built.target / "catalog.json"

    @settings(max_examples=150, deadline=None, database=None)
    @given(rows=_rows(relations))
    def same(rows: list[dict[str, Any]]) -> None:
        ours = catalog_of_rows(rows, node_map, source_map, at, path)
        try:
            theirs = catalog_from_document(catalog_document(rows, manifest, at), path)
        except AmbiguousCatalogMatchError:  # one source, two tables: dbt refuses, and so do we
            assert ours is None
        else:
            assert ours == theirs

    same()
    every = [
        {**_row(*relation), "column_name": "id", "column_type": "INTEGER", "column_index": 1}
        for relation in relations
    ]
    held = catalog_of_rows(every, node_map, source_map, at, path)
    assert held is not None
    assert len(held.columns) == len(relations) > 10  # every node and source mapped


def _row(database: str | None, schema: str, name: str) -> dict[str, Any]:
    return {"table_database": database, "table_schema": schema, "table_name": name}
