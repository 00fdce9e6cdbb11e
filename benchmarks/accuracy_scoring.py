"""Scoring of the accuracy benchmark: every tool's answer as a set of edges, against the truth.

An edge is `(output, (catalog, schema, table, column))`: an output column of the model and a
source column it reads; dataset-level inputs (JOIN / WHERE / GROUP BY / QUALIFY columns, which
shape the rows rather than one column) have the output `*`. All names are compared as DuckDB
does, case-insensitively and without quotes. A file is `("file", "", path, column)`.

Four edge sets are scored, each as micro-averaged precision, recall and F1 (counts summed over
the cases, then divided):

- `column`: per output column, every source column its own expression reads (value, CASE
  condition, window PARTITION/ORDER), kind ignored: the truth's `expected`. Every tool answers
  this, so it is the like-for-like number.
- `direct`: the value-carrying inputs (`expected_direct` where the truth gives it, else
  `expected`). A tool that does not say DIRECT or INDIRECT is scored with all its column edges as
  DIRECT claims.
- `indirect`: the column edges that are not direct, plus the dataset-level inputs. A tool that
  does not distinguish but reports dataset-level inputs is scored on those; a tool that does
  neither has no score here.
- `union`: `column` plus the dataset-level inputs: everything a columnLineage facet carries.

`alternatives` (USING / NATURAL join keys, PIVOT): for each such output the truth is whichever of
the two answers suits the tool best. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

COLUMN, DIRECT, INDIRECT, UNION = "column", "direct", "indirect", "union"
METRICS = (COLUMN, DIRECT, INDIRECT, UNION)
DATASET = "*"

Source = tuple[str, str, str, str]
Edge = tuple[str, Source]
Table = tuple[str, str, str]

_QUOTES = "\"'`"
_LITERAL = re.compile(r"'([^']+)'")
_FILE_SUFFIX = re.compile(r"\.(parquet|json|jsonl|ndjson|csv|tsv|txt|gz|zst)(\W|$)", re.I)


def norm(name: object) -> str:
    """A name as DuckDB compares it: without surrounding quotes, lower-case.

    >>> norm('"CustomerID"'), norm("Orders"), norm("`x`")
    ('customerid', 'orders', 'x')
    """
    text = str(name or "").strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
        text = text[1:-1]
    return text.lower()


def _path(ref: list[str]) -> str | None:
    """The file path a tool's relation names, if it is a file: a string literal in its own
    spelling (`read_parquet('s3://...')`, `'landing/a.json'`), or a name that looks like one."""
    catalog, schema, table, raw = [*ref, "", "", "", ""][:4]
    if norm(catalog) == "file" and not schema:
        return norm(table)
    for text in (raw, table):
        literal = _LITERAL.search(text or "")
        if literal:
            return literal.group(1).lower()
    for text in (table, raw):
        name = norm(text)
        if "/" in name or _FILE_SUFFIX.search(name):
            # a default catalog/schema glued in front of a path (`shop.main.landing/a.json`)
            head = name.split("/", 1)[0]
            if "." in head and "/" in name and not head.startswith(("s3:", "gs:", "http")):
                name = head.rsplit(".", 1)[1] + "/" + name.split("/", 1)[1]
            return name
    return None


def resolve_table(
    ref: list[str],
    tables: Iterable[Table],
    *,
    default_catalog: str | None = None,
    default_schema: str | None = None,
) -> Table:
    """A tool's relation as `(catalog, schema, table)` of the case's schema, lower-case.

    Qualifiers a tool leaves out are matched against the schema's tables (a unique match wins,
    then the default catalog/schema), the same for every tool; a relation outside the schema
    keeps what the tool said, with the defaults filled in.

    >>> resolve_table(["", "", "Orders", ""], [("shop", "main", "orders")])
    ('shop', 'main', 'orders')
    >>> resolve_table(["", "", "read_parquet('s3://b/x.parquet')", ""], [])
    ('file', '', 's3://b/x.parquet')
    """
    path = _path(ref)
    if path is not None:
        return ("file", "", path)
    catalog, schema, table = (norm(p) for p in [*ref, "", "", ""][:3])
    dc, ds = norm(default_catalog), norm(default_schema)
    known = {tuple(norm(p) for p in t) for t in tables}
    if catalog and schema:
        return (catalog, schema, table)
    matches = [
        t for t in known if t[2] == table and (not schema or t[1] == schema) and (not catalog)
    ]
    if len(matches) > 1:
        matches = [
            t for t in matches if (not dc or t[0] == dc) and (schema or not ds or t[1] == ds)
        ]
    if len(matches) == 1:
        return matches[0]
    return (catalog or dc, schema or ds, table)


@dataclass(frozen=True)
class Counts:
    """True positives, false positives, false negatives of one edge set (summable)."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    @property
    def precision(self) -> float | None:
        """None when nothing was claimed."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """None when there was nothing to find."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        """2PR/(P+R) = 2TP/(2TP+FP+FN); 0 when nothing found, None when nothing to score."""
        total = 2 * self.tp + self.fp + self.fn
        return 2 * self.tp / total if total else None


def count(predicted: set[Edge], truth: set[Edge]) -> Counts:
    return Counts(len(predicted & truth), len(predicted - truth), len(truth - predicted))


def _source(parts: Iterable[Any]) -> Source:
    catalog, schema, table, column = (norm(p) for p in parts)
    return (catalog, schema, table, column)


@dataclass(frozen=True)
class Truth:
    """The truth of one case, normalised. `direct` and `dataset` mean something only when
    `kinds_known` (the generated corpus has neither)."""

    columns: dict[str, frozenset[Source]]
    direct: dict[str, frozenset[Source]]
    alternatives: dict[str, frozenset[Source]] = field(default_factory=dict)
    dataset: frozenset[Source] = frozenset()
    kinds_known: bool = True


def truth_of(
    expected: Mapping[str, Iterable[Iterable[str]]],
    *,
    expected_direct: Mapping[str, Iterable[Iterable[str]]] | None = None,
    alternatives: Mapping[str, Iterable[Iterable[str]]] | None = None,
    indirect: Iterable[Iterable[str]] = (),
    kinds_known: bool = True,
) -> Truth:
    columns = {norm(o): frozenset(_source(s) for s in srcs) for o, srcs in expected.items()}
    direct_given = {
        norm(o): frozenset(_source(s) for s in srcs) for o, srcs in (expected_direct or {}).items()
    }
    return Truth(
        columns=columns,
        direct={o: direct_given.get(o, srcs) for o, srcs in columns.items()},
        alternatives={
            norm(o): frozenset(_source(s) for s in srcs) for o, srcs in (alternatives or {}).items()
        },
        dataset=frozenset(_source(s) for s in indirect),
        kinds_known=kinds_known,
    )


@dataclass(frozen=True)
class Answer:
    """One tool's answer for one case, normalised: output -> source -> kind (None: not said)."""

    columns: dict[str, dict[Source, str | None]]
    dataset: frozenset[Source] | None  # None: the tool reports no dataset-level inputs


def _columns_by_table(schema: Mapping[str, Any]) -> dict[Table, set[str]]:
    return {
        (norm(catalog), norm(db), norm(table)): {norm(c) for c in columns}
        for catalog, schemas in schema.items()
        for db, tables in schemas.items()
        for table, columns in tables.items()
    }


def resolve_column(table: Table, column: str, known: Mapping[Table, set[str]]) -> str:
    """A tool's column name, lower-case; a struct path (`payload.customer.tier`, DataHub's
    nested field paths) becomes its root column when the root is a column of that table.

    >>> resolve_column(("w", "m", "t"), "Payload.device", {("w", "m", "t"): {"payload"}})
    'payload'
    """
    name = norm(column)
    if "." in column:
        parts = [norm(p) for p in column.split(".")]
        columns = known.get(table, set())
        if ".".join(parts) not in columns and parts[0] in columns:
            return parts[0]
        name = ".".join(parts)
    return name


def normalise(
    result: Mapping[str, Any],
    schema: Mapping[str, Any],
    *,
    default_catalog: str | None = None,
    default_schema: str | None = None,
) -> Answer:
    """A runner's result (benchmarks/accuracy/_runner.py) as an Answer, names resolved against
    the case's `schema` ({catalog: {schema: {table: {column: type}}}}). An input reported both
    DIRECT and INDIRECT for one output is DIRECT (it carries the value)."""
    known = _columns_by_table(schema)

    def source(ref: list[str], column: str) -> Source:
        table = resolve_table(
            ref, known, default_catalog=default_catalog, default_schema=default_schema
        )
        return (*table, resolve_column(table, column, known))

    columns: dict[str, dict[Source, str | None]] = {}
    for output, ref, column, kind in result.get("columns") or ():
        inputs = columns.setdefault(norm(output), {})
        src = source(ref, column)
        if src not in inputs or kind == "DIRECT":
            inputs[src] = kind
    raw_dataset = result.get("dataset")
    dataset = (
        None
        if raw_dataset is None
        else frozenset(source(ref, column) for ref, column in raw_dataset)
    )
    return Answer(columns=columns, dataset=dataset)


def _choose(
    truth: Truth, answer: Answer
) -> tuple[dict[str, frozenset[Source]], dict[str, frozenset[Source]]]:
    """Per output, the expected answer or its alternative, whichever the tool's answer suits."""
    columns, direct = dict(truth.columns), dict(truth.direct)
    for output, alternative in truth.alternatives.items():
        got = set(answer.columns.get(output, {}))

        def fit(want: frozenset[Source], got: set[Source] = got) -> int:
            return len(got & want) - len(got - want) - len(want - got)

        if fit(alternative) > fit(columns.get(output, frozenset())):
            columns[output] = direct[output] = alternative
    return columns, direct


def score_case(truth: Truth, answer: Answer, *, kinds: bool) -> dict[str, Counts | None]:
    """Counts per metric for one case; None where the metric does not apply (the truth has no
    kinds, or the tool gives neither kinds nor dataset-level inputs)."""
    columns, direct = _choose(truth, answer)
    t_col = {(o, s) for o, srcs in columns.items() for s in srcs}
    p_col = {(o, s) for o, srcs in answer.columns.items() for s in srcs}
    out: dict[str, Counts | None] = dict.fromkeys(METRICS)
    out[COLUMN] = count(p_col, t_col)
    if not truth.kinds_known:
        return out
    t_dir = {(o, s) for o, srcs in direct.items() for s in srcs}
    t_dataset = {(DATASET, s) for s in truth.dataset}
    p_dataset = {(DATASET, s) for s in answer.dataset or ()}
    p_dir = {
        (o, s)
        for o, srcs in answer.columns.items()
        for s, kind in srcs.items()
        if not kinds or kind == "DIRECT"
    }
    p_ind = {
        (o, s)
        for o, srcs in answer.columns.items()
        for s, kind in srcs.items()
        if kinds and kind == "INDIRECT"
    }
    out[DIRECT] = count(p_dir, t_dir)
    if kinds or answer.dataset is not None:
        out[INDIRECT] = count(p_ind | p_dataset, (t_col - t_dir) | t_dataset)
    out[UNION] = count(p_col | p_dataset, t_col | t_dataset)
    return out


def exact(truth: Truth, answer: Answer) -> bool:
    """The tool's column edges are exactly the truth's (each output's inputs, kinds ignored)."""
    columns, _ = _choose(truth, answer)
    want = {(o, s) for o, srcs in columns.items() for s in srcs}
    return want == {(o, s) for o, srcs in answer.columns.items() for s in srcs}


def total(rows: Iterable[Counts | None]) -> Counts | None:
    """The sum of the cases' counts; None when no case has this metric."""
    present = [r for r in rows if r is not None]
    if not present:
        return None
    out = Counts()
    for row in present:
        out += row
    return out
