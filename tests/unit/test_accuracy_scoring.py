"""The scoring of benchmarks/accuracy.py (issue 30): precision, recall and F1 of known edge sets,
and the normalisation of every tool's names. Runs in dbt-oml's venv; no peer is needed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
try:
    import accuracy_scoring as scoring  # type: ignore[import-not-found]
finally:
    sys.path.remove(str(BENCHMARKS))

ORDERS = ["shop", "main", "orders"]
SCHEMA = {
    "shop": {
        "main": {
            "orders": {"id": "INT", "amount": "DOUBLE", "status": "VARCHAR"},
            "events": {"id": "INT", "payload": "STRUCT(device VARCHAR)"},
        },
        "archive": {"events": {"id": "INT"}},
    }
}


def _src(table: str, column: str) -> scoring.Source:
    return ("shop", "main", table, column)


def test_precision_recall_f1_of_known_edge_sets() -> None:
    a, b, c, d, e = (("out", _src("orders", x)) for x in ("a", "b", "c", "d", "e"))
    counts = scoring.count({a, b, c}, {b, c, d, e})
    assert counts == scoring.Counts(tp=2, fp=1, fn=2)
    assert counts.precision == pytest.approx(2 / 3)
    assert counts.recall == pytest.approx(1 / 2)
    assert counts.f1 == pytest.approx(2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2))
    assert counts + scoring.Counts(tp=1, fn=1) == scoring.Counts(3, 1, 3)


def test_empty_sets_are_undefined_not_perfect() -> None:
    nothing = scoring.Counts()
    assert (nothing.precision, nothing.recall, nothing.f1) == (None, None, None)
    missed = scoring.count(set(), {("x", _src("orders", "id"))})
    assert (missed.precision, missed.recall, missed.f1) == (None, 0.0, 0.0)
    assert scoring.total([None, None]) is None
    assert scoring.total([None, missed, missed]) == scoring.Counts(fn=2)


@pytest.mark.parametrize(
    ("name", "want"),
    [('"CustomerID"', "customerid"), ("`Orders`", "orders"), ("'x'", "x"), ("Amount", "amount")],
)
def test_names_compare_without_quotes_and_case(name: str, want: str) -> None:
    assert scoring.norm(name) == want


@pytest.mark.parametrize(
    ("ref", "defaults", "want"),
    [
        (["SHOP", "Main", '"Orders"', ""], {}, ("shop", "main", "orders")),
        (["", "", "orders", ""], {}, ("shop", "main", "orders")),  # the only `orders`
        (["", "", "events", ""], {"default_schema": "archive"}, ("shop", "archive", "events")),
        (["", "main", "events", ""], {}, ("shop", "main", "events")),
        (
            ["", "", "unknown", ""],
            {"default_catalog": "w", "default_schema": "m"},
            ("w", "m", "unknown"),
        ),
        (
            ["", "", "", "READ_PARQUET('s3://b/x.parquet') AS t"],
            {},
            ("file", "", "s3://b/x.parquet"),
        ),
        (["", "", "landing/a.json", '"landing/a.json" AS a'], {}, ("file", "", "landing/a.json")),
        (["", "", "shop.main.landing/a.json", ""], {}, ("file", "", "landing/a.json")),
        (["file", "", "landing/*.json", ""], {}, ("file", "", "landing/*.json")),
    ],
)
def test_relations_resolve_against_the_schema(
    ref: list[str], defaults: dict[str, str], want: scoring.Table
) -> None:
    tables = [("shop", "main", "orders"), ("shop", "main", "events"), ("shop", "archive", "events")]
    assert scoring.resolve_table(ref, tables, **defaults) == want


def test_an_ambiguous_unqualified_table_without_defaults_stays_unqualified() -> None:
    tables = [("shop", "main", "events"), ("shop", "archive", "events")]
    assert scoring.resolve_table(["", "", "events", ""], tables) == ("", "", "events")


def test_struct_paths_become_their_root_column() -> None:
    answer = scoring.normalise(
        {"columns": [["Device", ["shop", "main", "events", ""], "payload.device", None]]}, SCHEMA
    )
    assert answer.columns == {"device": {_src("events", "payload"): None}}


def test_direct_wins_when_a_tool_reports_an_input_twice() -> None:
    result = {
        "columns": [
            ["net", [*ORDERS, ""], "amount", "INDIRECT"],
            ["net", [*ORDERS, ""], "AMOUNT", "DIRECT"],
            ["net", [*ORDERS, ""], "status", "INDIRECT"],
        ],
        "dataset": [[[*ORDERS, ""], "id"]],
    }
    answer = scoring.normalise(result, SCHEMA)
    assert answer.columns == {
        "net": {_src("orders", "amount"): "DIRECT", _src("orders", "status"): "INDIRECT"}
    }
    assert answer.dataset == frozenset({_src("orders", "id")})


def _truth(**kw: Any) -> scoring.Truth:
    return scoring.truth_of(
        {"net": [[*ORDERS, "amount"], [*ORDERS, "status"]]},
        expected_direct={"net": [[*ORDERS, "amount"]]},
        indirect=[[*ORDERS, "id"]],
        **kw,
    )


def test_a_tool_with_kinds_and_dataset_edges_is_scored_on_every_set() -> None:
    answer = scoring.normalise(
        {
            "columns": [
                ["net", [*ORDERS, ""], "amount", "DIRECT"],
                ["net", [*ORDERS, ""], "status", "INDIRECT"],
            ],
            "dataset": [[[*ORDERS, ""], "id"]],
        },
        SCHEMA,
    )
    counts = scoring.score_case(_truth(), answer, kinds=True)
    assert counts == {
        "column": scoring.Counts(2, 0, 0),
        "direct": scoring.Counts(1, 0, 0),
        "indirect": scoring.Counts(2, 0, 0),  # the CASE condition and the dataset-level id
        "union": scoring.Counts(3, 0, 0),
    }
    assert scoring.exact(_truth(), answer)


def test_a_tool_without_kinds_claims_every_edge_as_direct_and_has_no_indirect_score() -> None:
    answer = scoring.normalise(
        {
            "columns": [
                ["net", [*ORDERS, ""], "amount", None],
                ["net", [*ORDERS, ""], "status", None],
            ],
            "dataset": None,
        },
        SCHEMA,
    )
    counts = scoring.score_case(_truth(), answer, kinds=False)
    assert counts["column"] == scoring.Counts(2, 0, 0)
    assert counts["direct"] == scoring.Counts(1, 1, 0)  # status is a condition, not a value
    assert counts["indirect"] is None
    assert counts["union"] == scoring.Counts(2, 0, 1)  # the dataset-level id is missed


def test_a_tool_without_kinds_but_with_dataset_edges_is_scored_on_those() -> None:
    answer = scoring.normalise(
        {"columns": [["net", [*ORDERS, ""], "amount", None]], "dataset": [[[*ORDERS, ""], "id"]]},
        SCHEMA,
    )
    counts = scoring.score_case(_truth(), answer, kinds=False)
    assert counts["indirect"] == scoring.Counts(1, 0, 1)  # id found, the condition status not
    assert not scoring.exact(_truth(), answer)


def test_the_alternative_answer_is_taken_where_it_suits_the_tool() -> None:
    truth = scoring.truth_of(
        {"k": [[*ORDERS, "id"]]},
        alternatives={"k": [[*ORDERS, "id"], ["shop", "main", "refunds", "id"]]},
    )
    both = scoring.normalise(
        {
            "columns": [
                ["k", [*ORDERS, ""], "id", None],
                ["k", ["shop", "main", "refunds", ""], "id", None],
            ]
        },
        SCHEMA,
    )
    one = scoring.normalise({"columns": [["k", [*ORDERS, ""], "id", None]]}, SCHEMA)
    assert scoring.score_case(truth, both, kinds=False)["column"] == scoring.Counts(2, 0, 0)
    assert scoring.score_case(truth, one, kinds=False)["column"] == scoring.Counts(1, 0, 0)


def test_a_truth_without_kinds_scores_column_edges_only() -> None:
    truth = scoring.truth_of({"x": [[*ORDERS, "id"]]}, kinds_known=False)
    answer = scoring.normalise(
        {"columns": [["x", [*ORDERS, ""], "id", "DIRECT"], ["y", [*ORDERS, ""], "id", "DIRECT"]]},
        SCHEMA,
    )
    counts = scoring.score_case(truth, answer, kinds=True)
    assert counts["column"] == scoring.Counts(1, 1, 0)  # an output the truth lacks is a false edge
    assert (counts["direct"], counts["indirect"], counts["union"]) == (None, None, None)
