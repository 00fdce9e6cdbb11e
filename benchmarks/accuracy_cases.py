"""The cases of the accuracy benchmark, their ground truth and their SQL-construct tags.

Three sources, one format (that of ../shared/lineage-cases/README.md):

- `shared`: ../shared/lineage-cases/cases.json, 51 hand-checked DuckDB cases (third-party data:
  read in place when present, skipped with a note when absent, never copied into the repo);
- `repo`: every tests/fixtures/lineage_cases_*.json;
- `generated`: the corpus of benchmarks/lineage_gen.py (staging / intermediate / marts models of a
  synthetic dbt project, with its one-hop truth per output column). Its truth does not say which
  inputs are DIRECT and has no dataset-level inputs, so only its column edges are scored. Each of
  its models gets the schema of the relations it reads (its parents' catalog columns and types).

Cases whose truth is `opaque` (no column lineage is the right answer: an ambiguous column, a
Python model, a `*` whose columns nobody knows) have no edges to score and are left out.

What every tool gets for a case is `tool_input(case)`: the SQL, the schema (tables, columns and
types), the default catalog and schema, and the model's own columns as its catalog entry would
list them (a case's `own_columns`, else the output names of its truth).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED_CASES = ROOT.parent / "shared" / "lineage-cases" / "cases.json"
#: Every tests/fixtures/lineage_cases_*.json (nested data, files and table functions, PIVOT /
#: UNPIVOT / COLUMNS ...), read when the benchmark runs.
REPO_CASES = tuple(sorted((ROOT / "tests" / "fixtures").glob("lineage_cases_*.json")))

#: The constructs cases are tagged with, in the order of the by-construct table.
TAGS = (
    "join",
    "cte",
    "subquery",
    "aggregate",
    "window",
    "set_op",
    "case_coalesce",
    "star",
    "struct_nested",
    "pivot_unpivot",
    "columns_regex",
    "table_function",
    "file_source",
    "plain",
)
_FILE_FUNCTIONS = re.compile(r"\bread_(parquet|json|json_auto|csv|csv_auto|ndjson)\s*\(", re.I)
_STRING_TABLE = re.compile(r"\bfrom\s+'[^']*'|\bjoin\s+'[^']*'", re.I)


@dataclass(frozen=True)
class Case:
    id: str
    corpus: str  # shared | repo | generated
    sql: str
    schema: dict[str, Any]
    columns: list[str]
    expected: dict[str, list[list[str]]]
    indirect: list[list[str]] = field(default_factory=list)
    expected_direct: dict[str, list[list[str]]] = field(default_factory=dict)
    alternatives: dict[str, list[list[str]]] = field(default_factory=dict)
    default_catalog: str | None = None
    default_schema: str | None = None
    kinds_known: bool = True  # the truth says DIRECT vs INDIRECT and has dataset-level inputs
    tags: tuple[str, ...] = ()


def tool_input(case: Case) -> dict[str, Any]:
    """Exactly what every tool is given for `case` (no part of the truth but the column names)."""
    return {
        "id": case.id,
        "sql": case.sql,
        "schema": case.schema,
        "default_catalog": case.default_catalog,
        "default_schema": case.default_schema,
        "columns": case.columns,
    }


def _has_file_source(sql: str) -> bool:
    return bool(_FILE_FUNCTIONS.search(sql) or _STRING_TABLE.search(sql))


def tags_of(sql: str, case_id: str = "") -> tuple[str, ...]:
    """The SQL constructs of one query, read from its sqlglot (DuckDB) tree, with regexes for
    what sqlglot may not parse (COLUMNS(), files, DuckDB's PIVOT/UNPIVOT statements)."""
    from sqlglot import exp, parse_one
    from sqlglot.errors import SqlglotError

    found: set[str] = set()
    if re.search(r"\bcolumns\s*\(", sql, re.I):
        found.add("columns_regex")
    if re.search(r"\b(un)?pivot\b", sql, re.I) or "pivot" in case_id:
        found.add("pivot_unpivot")
    if _has_file_source(sql):
        found.add("file_source")
    try:
        tree = parse_one(sql, dialect="duckdb")
    except SqlglotError:
        return tuple(t for t in TAGS if t in found) or ("plain",)
    checks: Iterable[tuple[str, bool]] = (
        ("join", any(isinstance(j.this, (exp.Table, exp.Subquery)) and not isinstance(j.this.this, exp.Func) for j in tree.find_all(exp.Join))),
        ("cte", tree.find(exp.CTE) is not None),
        ("subquery", any(not isinstance(s.parent, exp.CTE) for s in tree.find_all(exp.Subquery)) or tree.find(exp.Exists) is not None or any(isinstance(i.args.get("query"), exp.Expression) for i in tree.find_all(exp.In))),
        ("aggregate", tree.find(exp.Group) is not None or any(not isinstance(a.parent, exp.Window) for a in tree.find_all(exp.AggFunc))),
        ("window", tree.find(exp.Window) is not None or tree.find(exp.Qualify) is not None),
        ("set_op", tree.find(exp.SetOperation) is not None),
        ("case_coalesce", tree.find(exp.Case, exp.Coalesce, exp.If) is not None),
        ("star", any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)) for s in tree.find_all(exp.Select) for e in s.expressions)),
        ("struct_nested", tree.find(exp.Dot, exp.Bracket, exp.Struct, exp.Array, exp.Unnest, exp.JSONExtract, exp.JSONExtractScalar, exp.Lambda, exp.StructExtract) is not None or bool(re.search(r"\w+\.\w+\.\w+\.\w+|->", sql))),
        ("pivot_unpivot", tree.find(exp.Pivot) is not None),
        ("table_function", any(isinstance(t.this, (exp.Func, exp.Unnest)) and not _FILE_FUNCTIONS.search(t.sql("duckdb")) for t in tree.find_all(exp.Table)) or any(isinstance(j.this, exp.Unnest) for j in tree.find_all(exp.Join))),
    )  # fmt: skip
    found |= {tag for tag, hit in checks if hit}
    # `a.b.c` in a select list parses as a column (table.column): only a 4-part path or a
    # struct through a CTE shows it; the case ids of the nested fixtures say it too
    if re.search(r"struct|unnest|json|lambda", case_id):
        found.add("struct_nested")
    return tuple(t for t in TAGS if t in found) or ("plain",)


def _load_file(path: Path, corpus: str) -> list[Case]:
    out = []
    for raw in json.loads(path.read_text())["cases"]:
        if raw.get("opaque"):
            continue
        out.append(
            Case(
                id=raw["id"],
                corpus=corpus,
                sql=raw["sql"],
                schema=raw["schema"],
                columns=list(raw.get("own_columns") or raw["expected"]),
                expected=raw["expected"],
                indirect=raw.get("indirect") or [],
                expected_direct=raw.get("expected_direct") or {},
                alternatives=raw.get("alternatives") or {},
                default_catalog=raw.get("default_catalog"),
                default_schema=raw.get("default_schema"),
                tags=tags_of(raw["sql"], raw["id"]),
            )
        )
    return out


def opaque_ids(paths: Iterable[Path]) -> list[str]:
    """The ids of the cases left out because their right answer is no column lineage."""
    return [
        raw["id"]
        for path in paths
        if path.exists()
        for raw in json.loads(path.read_text())["cases"]
        if raw.get("opaque")
    ]


def hand_cases() -> tuple[list[Case], list[str]]:
    """The shared cases (when present) and the repo's; notes on what was skipped."""
    notes = []
    cases: list[Case] = []
    if SHARED_CASES.exists():
        cases += _load_file(SHARED_CASES, "shared")
    else:
        notes.append(f"{SHARED_CASES} is absent: the 51 shared cases are not scored")
    for path in REPO_CASES:
        cases += _load_file(path, "repo")
    return cases, notes


def generated_cases(directory: Path, models: int) -> list[Case]:
    """The lineage_gen.py corpus at `models` models, written into `directory`, as cases."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from lineage_gen import generate
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    generate(directory, models)
    manifest = json.loads((directory / "manifest.json").read_text())
    catalog = json.loads((directory / "catalog.json").read_text())
    truth = json.loads((directory / "truth.json").read_text())
    relations = {**manifest["nodes"], **manifest["sources"]}
    columns = {**catalog["nodes"], **catalog["sources"]}
    out = []
    for uid, node in manifest["nodes"].items():
        schema: dict[str, Any] = {}
        for parent in node["depends_on"]["nodes"]:
            rel = relations[parent]
            table = rel.get("alias") or rel.get("identifier") or rel["name"]
            schema.setdefault(rel["database"], {}).setdefault(rel["schema"], {})[table] = {
                c: v["type"] for c, v in columns[parent]["columns"].items()
            }
        sql = node["compiled_code"]
        out.append(
            Case(
                id=uid.split(".")[-1],
                corpus="generated",
                sql=sql,
                schema=schema,
                columns=list(columns[uid]["columns"]),
                expected=truth[uid],
                kinds_known=False,
                tags=tags_of(sql),
            )
        )
    return out
