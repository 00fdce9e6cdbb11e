"""DuckDB as the oracle of the hand-written lineage cases (tests/fixtures/lineage_cases_*.json).

A case's `validate: true` says its SQL ran in DuckDB; this module runs it, in an in-memory DuckDB
(1 thread) over relations built from the case, and holds the real engine to what DuckDB does.

Relations. Every table of the case's `schema`, with its types; a relation the schema lacks (a
file, a table with unknown columns) gets the columns the case's edges name for it (`expected`,
`indirect`), typed as a schema table's column of that name (a described file's twin), else
INTEGER for `id`/`*_id` and VARCHAR, and a file is written (JSON or
Parquet, by its extension; a glob's `*` becomes a name) under a temporary directory DuckDB
searches (`file_search_path`). Rows: 48 per relation, seeded by the case, the relation and the
column; about one value in seven is NULL; integers mostly small (joins meet) with some large
(filters split); strings from one small pool shared by all columns (joins meet) except the
label columns below, whose values are the PIVOT names the cases expect (`LABELS`); nested types
(STRUCT, lists, JSON) are built from their type.

Names (every validate case, opaque ones too): DuckDB binds the SQL and its output names equal
the case's `expected` outputs (exact cases) and its `own_columns`, in order (the catalog a build
of the model would have), case-insensitively.

Perturbation (exact cases). Perturbing input column c: c's values are replaced (trial 0: every
value moved to a value it did not have, a label to the next label; trials 1-2: redrawn from the
same seeded generator), every other value kept; the query is run again. Results are compared as
multisets of rows (row order is presentation, not lineage). For an output `out`:
  - rows evidence (INDIRECT): the output's names or its number of rows changed;
  - value evidence: the multiset of out's values changed, or the rows agree on every other
    output column but not as whole rows (out's values moved between rows).
Rules checked:
  1. no false DIRECT edge: for every DIRECT edge out <- c the engine claims, some trial gives
     value evidence for out (unless `NEVER_CHANGES` lists the edge with its reason);
  2. no missing edge: when a trial gives any evidence for out, the engine claims c for out
     (DIRECT or INDIRECT) or in the dataset-level INDIRECT list (unless `NOT_CLAIMED` lists it).
Rule 1 finds an edge to a column that does not feed the output (a name bound to another
relation's column, a misplaced PIVOT name); rule 2 finds the column that does feed it instead.
Neither proves an edge's subtype. Only relations the SQL names are perturbed.
"""

from __future__ import annotations

import functools
import json
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dbt_oml.errors import LineageError
from tests.support.lineage_cases import analyse_case

FIXTURES = Path(__file__).parent.parent / "fixtures"
FILES = ("lineage_cases_pivot.json", "lineage_cases_nested.json", "lineage_cases_generated.json")
ALL_CASES = [c for f in FILES for c in json.loads((FIXTURES / f).read_text())["cases"]]
CASES = [c for c in ALL_CASES if c.get("validate")]

ROWS = 48
TRIALS = 3
POOL = ("a", "b", "c", "noise")
#: The values of the columns the cases PIVOT ON: the names the cases expect (Q1..Q4 is what every
#: data-defined case's catalog lists; `web`/`shop` the IN list's, `app` one the list leaves out).
LABELS = {"quarter": ("Q1", "Q2", "Q3", "Q4"), "channel": ("web", "shop", "app")}

#: Cases DuckDB cannot run here, and why.
SKIP = {
    "learned_star_cte_staging": "reads a struct path (_meta.params...) of a file column the case "
    "gives no type for: no file can be written that the case describes",
    "columns_over_an_undescribed_file_is_opaque": "a file whose columns the case does not give "
    "(opaque: no expected edges to learn them from)",
    "unnest_recursive_unknown_type_is_opaque": "unnests a file column (_meta) the case gives no"
    " type for (opaque: no expected edges to learn it from)",
    "columns_lambda_not_evaluated_is_opaque": "calls my_macro, a project macro the case does not "
    "define",
}

Col = tuple[str, str, str, str]
Rel = tuple[str, str, str]

#: Claimed DIRECT edges (case, output, input column) that random data can never change, and why.
NEVER_CHANGES: dict[tuple[str, str, str], str] = {}

_UNPIVOT_NULLS = (
    "UNPIVOT drops the rows whose value is NULL, an implicit filter: `indirect` lists the SQL's"
    " row-shaping clauses (JOIN, WHERE, GROUP BY, ...; the shared cases unpivot_duckdb and"
    " unpivot_standard expect none for UNPIVOT)"
)
_REPEATS = (
    "a set-returning function repeats (or drops) each row by its argument's length: not an"
    " INDIRECT clause (`indirect` lists JOIN, WHERE, GROUP BY, HAVING, QUALIFY, ORDER BY, ...)"
)

#: Evidence the engine does not claim (case, output or "*" for all, input column), and why that
#: is not a missing edge.
NOT_CLAIMED: dict[tuple[str, str, str], str] = {
    **{
        (case_id, "*", f"shop.main.{table}.{column}"): _UNPIVOT_NULLS
        for case_id, table, columns in (
            ("unpivot_bare_numbers", "population", ("2019", "2020", "2021")),
            ("unpivot_columns_star_exclude", "population", ("2019", "2020", "2021")),
            ("unpivot_string_names", "periods", ("95-00", "00-05")),
            ("unpivot_default_names", "metrics_wide", ("m_jan", "m_feb")),
            ("unpivot_value_groups", "metrics_wide", ("m_jan", "m_feb", "m_mar")),
        )
        for column in columns
    },
    ("unnest_recursive_list_of_structs", "id", "shop.main.fixtures.events"): _REPEATS,
    ("unnest_list_then_field", "id", "shop.main.fixtures.events"): _REPEATS,
    ("generate_series_lateral_arguments", "name", "shop.main.teams.id"): _REPEATS,
}

#: Columns a file has that no edge of the case names (so `_relations` cannot learn them).
EXTRA_COLUMNS: dict[str, dict[Rel, dict[str, str]]] = {
    # `* exclude (raw)`: the file has `raw`, which the model drops
    "learned_star_exclude_replace": {("file", "", "landing/k.parquet"): {"raw": "VARCHAR"}},
    # opaque: `id` is what the SQL reads of the file (`k` is its select alias)
    "select_alias_or_unknown_column_is_opaque": {
        ("file", "", "landing/fixtures/*/*.json"): {"id": "INTEGER"}
    },
}


# -- the engine ---------------------------------------------------------------------------------


def _low(parts: Any) -> Col:
    return tuple(str(p).lower() for p in parts)  # type: ignore[return-value]


# -- the relations ------------------------------------------------------------------------------


def _relations(case: dict[str, Any]) -> dict[Rel, dict[str, str]]:
    """Every relation the case knows of: {(catalog, schema, table): {column: type}}."""
    out: dict[Rel, dict[str, str]] = {}
    for catalog, schemas in case["schema"].items():
        for schema, tables in schemas.items():
            for table, columns in tables.items():
                out[(catalog, schema, table)] = dict(columns)
    for rel, extra in EXTRA_COLUMNS.get(case["id"], {}).items():
        out.setdefault(rel, {}).update(extra)
    known = {c.lower(): t for columns in reversed(out.values()) for c, t in columns.items()}
    named = [x for xs in case["expected"].values() for x in xs] + list(case["indirect"])
    for catalog, schema, table, column in named:
        columns = out.setdefault((catalog, schema, table), {})
        if column not in columns:
            low = column.lower()
            default = "INTEGER" if low == "id" or low.endswith("_id") else "VARCHAR"
            columns[column] = known.get(low, default)
    return out


def _read(rel: Rel, sql: str) -> bool:
    """Whether the SQL names the relation (only those are perturbed)."""
    return rel[2].lower() in sql.lower()


@functools.cache
def _type(text: str) -> Any:  # a DuckDBPyType (.id, .children)
    return duckdb.sqltype(text)


def _value(rng: random.Random, typ: Any, column: str, type_text: str) -> Any:
    if rng.random() < 1 / 7:
        return None
    if type_text.upper() == "JSON":
        return {"utm": {"source": rng.choice(POOL)}, "device": rng.choice(POOL)}
    kind = typ.id
    if kind == "struct":
        return {name: _value(rng, child, name, str(child)) for name, child in typ.children}
    if kind == "list":
        ((_, child),) = typ.children
        return [_value(rng, child, column, str(child)) for _ in range(rng.randint(0, 3))]
    if kind in ("integer", "bigint", "smallint", "tinyint", "hugeint"):
        return rng.randint(0, 4) if rng.random() < 0.6 else rng.randint(-10, 99)
    if kind in ("double", "float", "decimal"):
        return round(rng.uniform(-5, 100), 3)
    if kind == "timestamp":
        return f"2024-01-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:00:00"
    if kind == "varchar":
        return rng.choice(LABELS.get(column.lower(), POOL))
    raise AssertionError(f"no generator for {type_text}")


def _moved(value: Any, column: str) -> Any:
    """A value `value` is not: every leaf shifted (a label to the next label)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1000
    if isinstance(value, float):
        return round(value + 1000.5, 3)
    if isinstance(value, str) and column.lower() in LABELS:
        labels = LABELS[column.lower()]
        return labels[(labels.index(value) + 1) % len(labels)]
    if isinstance(value, str) and value[:4] == "2024":
        return "2025" + value[4:]
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, dict):
        return {k: _moved(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, column) for v in value] + [value[0] if value else None]
    raise AssertionError(value)


def _literal(value: Any, typ: Any, type_text: str) -> str:
    if value is None:
        return "NULL"
    if type_text.upper() == "JSON":
        return _quote(json.dumps(value))
    if typ.id == "struct":
        children = dict(typ.children)
        inner = ", ".join(
            f"{_quote(k)}: {_literal(v, children[k], str(children[k]))}" for k, v in value.items()
        )
        return "{" + inner + "}"
    if typ.id == "list":
        ((_, child),) = typ.children
        return "[" + ", ".join(_literal(v, child, str(child)) for v in value) + "]"
    if isinstance(value, str):
        return _quote(value)
    return repr(value)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


Data = dict[Rel, dict[str, list[Any]]]


def _data(case: dict[str, Any], relations: dict[Rel, dict[str, str]]) -> Data:
    out: Data = {}
    for rel, columns in relations.items():
        out[rel] = {}
        for column, type_text in columns.items():
            rng = random.Random(f"{case['id']}|{'.'.join(rel)}|{column}")
            typ = _type(type_text)
            out[rel][column] = [_value(rng, typ, column, type_text) for _ in range(ROWS)]
    return out


def _variant(case: dict[str, Any], data: Data, col: Col, trial: int, type_text: str) -> list[Any]:
    """Column `col`'s values in perturbation `trial`."""
    rel, column = col[:3], col[3]
    if trial == 0:
        return [_moved(v, column) for v in data[rel][column]]
    rng = random.Random(f"{case['id']}|{'.'.join(rel)}|{column}|trial {trial}")
    return [_value(rng, _type(type_text), column, type_text) for _ in range(ROWS)]


class Db:
    """One in-memory DuckDB for one case. Each relation's values, and every perturbed variant of
    each of its columns (`c` and `c__1`...), are one backing table, loaded once; the relation the
    SQL reads is a view over it (or a file written from it) showing the base or one variant."""

    def __init__(self, case: dict[str, Any], root: Path) -> None:
        self.case = case
        self.relations = _relations(case)
        self.data = _data(case, self.relations)
        self.root = root
        self.con = duckdb.connect()
        self.con.execute("SET threads = 1")
        self.con.execute(f"SET file_search_path = {_quote(str(root))}")
        for catalog in sorted({c for c, s, _ in self.relations if c != "file"}):
            self.con.execute(f"ATTACH ':memory:' AS {_ident(catalog)}")
        for catalog, schema in sorted({(c, s) for c, s, _ in self.relations if c != "file"}):
            self.con.execute(f"CREATE SCHEMA IF NOT EXISTS {_ident(catalog)}.{_ident(schema)}")
        for k, (rel, columns) in enumerate(self.relations.items()):
            values = {c: self.data[rel][c] for c in columns}
            types = dict(columns)
            if _read(rel, case["sql"]):
                for c, t in columns.items():
                    for trial in range(TRIALS):
                        values[f"{c}__{trial}"] = _variant(case, self.data, (*rel, c), trial, t)
                        types[f"{c}__{trial}"] = t
            rows = [
                "("
                + ", ".join(
                    f"{_literal(v[i], _type(types[c]), types[c])}::{types[c]}"
                    for c, v in values.items()
                )
                + ")"
                for i in range(ROWS)
            ]
            header = ", ".join(map(_ident, values))
            self.con.execute(
                f"CREATE TABLE memory.main.backing_{k} AS SELECT * FROM (VALUES {', '.join(rows)})"
                f" AS v({header})"
            )
            self.show(rel)

    def show(self, rel: Rel, column: str | None = None, trial: int = 0) -> None:
        """Make `rel` hold its base values, or `column`'s values in perturbation `trial`."""
        k = list(self.relations).index(rel)
        picks = ", ".join(
            f"{_ident(f'{c}__{trial}' if c == column else c)} AS {_ident(c)}"
            for c in self.relations[rel]
        )
        query = f"SELECT {picks} FROM memory.main.backing_{k}"
        if rel[0] == "file":
            path = self.root / rel[2].replace("*", "part")
            path.parent.mkdir(parents=True, exist_ok=True)
            fmt = "PARQUET" if path.suffix == ".parquet" else "JSON"
            self.con.execute(f"COPY ({query}) TO {_quote(str(path))} (FORMAT {fmt})")
        else:
            self.con.execute(f"CREATE OR REPLACE VIEW {'.'.join(map(_ident, rel))} AS {query}")

    def run(self) -> tuple[list[str], list[tuple[Any, ...]]]:
        case = self.case
        if case.get("default_catalog"):
            use = _ident(case["default_catalog"])
            if case.get("default_schema"):
                use += "." + _ident(case["default_schema"])
            self.con.execute(f"USE {use}")
        cursor = self.con.execute(case["sql"])
        names = [d[0] for d in cursor.description or []]
        return names, cursor.fetchall()


@contextmanager
def _db(case: dict[str, Any], tmp_path: Path) -> Iterator[Db]:
    db = Db(case, tmp_path)
    try:
        yield db
    finally:
        db.con.close()


# -- names --------------------------------------------------------------------------------------


def _params(cases: list[dict[str, Any]]) -> list[Any]:
    return [
        pytest.param(
            c,
            id=c["id"],
            marks=[pytest.mark.skip(reason=SKIP[c["id"]])] if c["id"] in SKIP else [],
        )
        for c in cases
    ]


@pytest.mark.parametrize("case", _params(CASES))
def test_duckdb_binds_the_case_and_names_its_outputs(case: dict[str, Any], tmp_path: Path) -> None:
    with _db(case, tmp_path) as db:
        names, _rows = db.run()
    low = [n.lower() for n in names]
    if not case.get("opaque"):
        assert sorted(low) == sorted(k.lower() for k in case["expected"]), "DuckDB's outputs"
        if case.get("own_columns"):
            assert low == [c.lower() for c in case["own_columns"]], "the catalog's columns"


# -- perturbation -------------------------------------------------------------------------------


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return tuple(sorted((k, _canon(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_canon(v) for v in value)
    return value if value is None or isinstance(value, int | str | bool) else str(value)


def _evidence(
    base: tuple[list[str], list[tuple[Any, ...]]], new: tuple[list[str], list[tuple[Any, ...]]]
) -> dict[str, str]:
    """{output (lower-case): "rows" | "values"} for the outputs the change reached."""
    names = [n.lower() for n in base[0]]
    if [n.lower() for n in new[0]] != names or len(new[1]) != len(base[1]):
        return dict.fromkeys(names, "rows")
    a = [tuple(_canon(v) for v in r) for r in base[1]]
    b = [tuple(_canon(v) for v in r) for r in new[1]]
    if Counter(a) == Counter(b):
        return {}
    out = {}
    for i, name in enumerate(names):
        mine = Counter(r[i] for r in a) != Counter(r[i] for r in b)
        others = Counter(r[:i] + r[i + 1 :] for r in a) == Counter(r[:i] + r[i + 1 :] for r in b)
        if mine or others:
            out[name] = "values"
    return out


@pytest.mark.parametrize("case", _params(CASES))
def test_perturbing_an_input_moves_exactly_what_the_engine_claims(
    case: dict[str, Any], tmp_path: Path
) -> None:
    try:
        lineage = analyse_case(case)
    except LineageError:
        assert case.get("opaque"), "the engine went opaque"
        return  # an opaque model claims no edge (test_lineage_cases checks the reason)
    claimed: dict[str, dict[Col, set[str]]] = {
        e.output.lower(): {_low(s): {t.type for t in ts} for s, ts in e.inputs}
        for e in lineage.columns
    }
    dataset = {_low(s) for s, _ in lineage.dataset}
    problems: list[str] = []
    with _db(case, tmp_path) as db:
        base = db.run()
        assert sorted(claimed) == sorted(n.lower() for n in base[0]), "the engine's outputs"
        assert base[1], "the seeded data gives the query no rows: nothing to perturb"
        for rel, columns in db.relations.items():
            if not _read(rel, case["sql"]):
                continue
            for column in columns:
                col = _low((*rel, column))
                seen: dict[str, list[str]] = {out: [] for out in claimed}
                for trial in range(TRIALS):
                    db.show(rel, column, trial)
                    found = _evidence(base, db.run())
                    for out, kinds in seen.items():
                        kinds.append(found.get(out, ""))
                db.show(rel)
                problems += _check(case["id"], col, claimed, dataset, seen)
    assert not problems, "\n".join(problems)


def _check(
    case_id: str,
    col: Col,
    claimed: dict[str, dict[Col, set[str]]],
    dataset: set[Col],
    seen: dict[str, list[str]],
) -> list[str]:
    name = ".".join(col)
    out = []
    for output, inputs in claimed.items():
        key = (case_id, output, name)
        kinds = seen[output]
        refuted = "values" not in kinds and any(k != "rows" for k in kinds)
        if "DIRECT" in inputs.get(col, set()) and refuted and key not in NEVER_CHANGES:
            out.append(f"false DIRECT edge? {output} <- {name}: trials {kinds}")
        allowed = key in NOT_CLAIMED or (case_id, "*", name) in NOT_CLAIMED
        if any(kinds) and col not in inputs and col not in dataset and not allowed:
            out.append(f"missing edge: {output} <- {name}: trials {kinds}")
    return out


def test_the_allow_lists_name_real_cases() -> None:
    ids = {c["id"] for c in CASES}
    for case_id, _, _ in [*NEVER_CHANGES, *NOT_CLAIMED]:
        assert case_id in ids, case_id
    assert set(EXTRA_COLUMNS) <= {c["id"] for c in CASES}
    assert set(SKIP) <= {c["id"] for c in CASES}
