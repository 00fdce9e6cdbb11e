"""The workers' setup file is read in pieces: a chunk's schema holds only the relations its SQL
can name, and every model's answer is the one a schema of every relation gives (issue 31)."""

from __future__ import annotations

import gc
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dbt_oml.lineage import setup_file
from dbt_oml.lineage import workers as lineage_workers
from dbt_oml.lineage.model import build_schema
from dbt_oml.lineage.workers import WorkerSetup, analyse_one, analyse_parallel

TABLES = {
    "w": {
        "main": {
            "orders": {"id": "INT", "amount": "DOUBLE", "customer_id": "INT"},
            "customers": {"id": "INT", "name": "TEXT"},
            "odd name": {"x": "INT"},
            "dash-name": {"y": "INT"},
            **{f"t{i}": {"id": "INT", f"c{i}": "INT"} for i in range(30)},
        },
        "other": {"orders": {"id": "INT", "note": "TEXT"}},
    },
    "raw": {"main": {"Payments": {"Id": "INT", "Amount": "DOUBLE"}}},
}

#: Queries that name relations every way a query can, and some it cannot resolve.
QUERIES = [
    "select o.id, c.name from w.main.orders o join w.main.customers c on o.customer_id = c.id",
    "select * from orders",
    "select * from other.orders",
    "SELECT ID, AMOUNT FROM W.MAIN.ORDERS",
    'select * from raw.main."Payments"',
    'select "Id" from raw.main.payments',
    'select * from w.main."odd name"',
    'select y from w.main."dash-name"',
    "select amount from w.main.orders join w.main.t3 using (id)",
    "select id from (select * from w.main.t7) s where c7 > 0",
    "select 1 as one",
    "select * from nowhere",
    "select n.note, o.amount from w.other.orders n join orders o using (id)",
    "with t3 as (select * from w.main.t4) select * from t3",
]


def _case() -> dict[str, str]:
    case: dict[str, str] = {}
    for catalog, schemas in TABLES.items():
        for schema, tables in schemas.items():
            for table, columns in tables.items():
                for name in (catalog, schema, table, *columns):
                    case.setdefault(name.lower(), name)
    return case


@pytest.mark.parametrize("chunk", [1, 8], ids=["a model per chunk", "chunks of 8"])
def test_workers_answer_as_a_schema_of_every_relation_does(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(lineage_workers, "CHUNK", chunk)
    jobs = [(f"model.p.m{i}", sql) for i, sql in enumerate(QUERIES)]
    setup = WorkerSetup(tables=TABLES, case=_case(), dialect="duckdb", default_catalog="w")
    got: dict[str, object] = {}
    answered = analyse_parallel(
        jobs, setup=setup, workers=2, each=lambda uid, outcome, _: got.__setitem__(uid, outcome)
    )
    assert answered == {uid for uid, _ in jobs}
    full = build_schema(TABLES, dialect="duckdb")
    expected = {
        uid: analyse_one(
            sql,
            schema=full,
            dialect="duckdb",
            unique_id=uid,
            default_catalog="w",
            case=setup.case,
        )
        for uid, sql in jobs
    }
    assert got == expected
    assert sum(not isinstance(v, str) for v in got.values()) >= 10  # most have lineage


def _written(
    tmp_path: Path, models: dict[str, setup_file.Model], tables: setup_file.Tables
) -> Path:
    path = tmp_path / "setup"
    with path.open("wb") as f:
        setup_file.write(f, {"head": 1}, models=models, tables=tables)
    return path


def test_a_chunk_reads_the_relations_its_sql_names_and_no_others(tmp_path: Path) -> None:
    with _written(tmp_path, {"m": ("select 1", ("a",))}, TABLES).open("rb") as f:
        index = setup_file.read_index(f)
        assert index.head == {"head": 1}
        assert setup_file.read_models(f, index, ["m"]) == {"m": ("select 1", ("a",))}
        tables = setup_file.tables_for(f, index, ["SELECT * FROM Orders join t3 using (id)"])
        named = sorted((c, s, t) for c, ss in tables.items() for s, ts in ss.items() for t in ts)
        assert named == [
            ("w", "main", "dash-name"),  # not one word: in every schema
            ("w", "main", "odd name"),
            ("w", "main", "orders"),
            ("w", "main", "t3"),
            ("w", "other", "orders"),  # the same identifier in another schema
        ]
        assert tables["w"]["main"]["t3"] == {"id": "INT", "c3": "INT"}
        assert setup_file.tables_for(f, index, ['select * from "PAYMENTS"'])["raw"] == {
            "main": {"Payments": {"Id": "INT", "Amount": "DOUBLE"}}
        }


def test_a_schema_is_never_empty(tmp_path: Path) -> None:
    tables = {"w": {"main": {"t": {"id": "INT"}}}}
    with _written(tmp_path, {}, tables).open("rb") as f:
        assert setup_file.tables_for(f, setup_file.read_index(f), ["select 1"]) == tables


_CATALOGS = ["w", "raw"]
_SCHEMAS = ["main", "other", "Main"]
_TABLES = ["orders", "Orders", "t1", "T_2", "odd name", "dash-name", "select"]
_COLUMNS = ["id", "ID", "amount", "x", "Name"]

relations = st.tuples(
    st.sampled_from(_CATALOGS), st.sampled_from(_SCHEMAS), st.sampled_from(_TABLES)
)
projects = st.dictionaries(
    relations,
    st.lists(st.sampled_from(_COLUMNS), min_size=1, max_size=4, unique_by=str.lower),
    max_size=8,
)


def _named(relation: tuple[str, str, str], form: int) -> str:
    quoted = ['"' + part + '"' for part in relation]
    return [".".join(quoted), ".".join(quoted[1:]), quoted[2], relation[2].lower()][form]


@st.composite
def queries(draw: st.DrawFn) -> str:
    first, second = draw(relations), draw(relations)
    a = _named(first, draw(st.integers(0, 3)))
    b = _named(second, draw(st.integers(0, 3)))
    column = '"' + draw(st.sampled_from(_COLUMNS)) + '"'
    return draw(
        st.sampled_from(
            [
                f"select * from {a}",
                f"select {column} from {a}",
                f"select l.*, r.{column} from {a} l join {b} r on true",
                f"select {column} from {a} join {b} using ({column})",
                f"select * from (select * from {a}) s",
                f"with c as (select * from {a}) select * from c join {b} on true",
            ]
        )
    )


@settings(deadline=None, database=None, max_examples=150)
@given(project=projects, sql=queries())
@example(  # two schemas one name once normalised: sqlglot merges them in the order it meets them
    project={
        ("w", "other", "orders"): ["id"],
        ("w", "Main", "orders"): ["id", "amount"],
        ("w", "main", "orders"): ["id", "x"],
        ("w", "main", "odd name"): ["id"],
    },
    sql='select * from "w"."main"."orders"',
)
def test_a_slice_answers_as_every_relation_does(
    tmp_path_factory: pytest.TempPathFactory,
    project: dict[tuple[str, str, str], list[str]],
    sql: str,
) -> None:
    tables: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    case: dict[str, str] = {}
    for (catalog, schema, table), columns in project.items():
        tables.setdefault(catalog, {}).setdefault(schema, {})[table] = dict.fromkeys(columns, "INT")
        for name in (catalog, schema, table, *columns):
            case.setdefault(name.lower(), name)
    path = tmp_path_factory.mktemp("setup") / "file"
    with path.open("wb") as f:
        setup_file.write(f, None, models={}, tables=tables)
    with path.open("rb") as r:
        sliced = setup_file.tables_for(r, setup_file.read_index(r), [sql])

    def answer(over: setup_file.Tables) -> object:
        return analyse_one(
            sql,
            schema=build_schema(over, dialect="duckdb"),
            dialect="duckdb",
            unique_id="m",
            default_catalog="w",
            case=case,
        )

    assert answer(sliced) == answer(tables)


def test_a_chunk_leaves_no_garbage_behind() -> None:
    """A worker frees each chunk's parse trees (cyclic garbage) as the chunk ends, rather than
    carrying them until the collector's oldest generation runs (the worker's peak memory)."""
    jobs = [(f"model.p.m{i}", sql) for i, sql in enumerate(QUERIES)]
    setup = WorkerSetup(tables=TABLES, case=_case(), dialect="duckdb", default_catalog="w")
    path = lineage_workers._setup_file(replace(setup, sql=dict(jobs)))
    assert path is not None
    gc.collect()
    try:
        sent = lineage_workers._run_chunk(path, [uid for uid, _ in jobs])
        assert sum(kind == "L" for _, (kind, _) in sent) >= 10
        assert gc.collect() == 0  # nothing of the chunk was left for a later pass
    finally:
        for _, f, _ in lineage_workers._FILE:
            f.close()
        lineage_workers._FILE.clear()
        gc.unfreeze()  # `_opened` froze this process's objects, as it does a worker's
        Path(path).unlink()
