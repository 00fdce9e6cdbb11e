"""sqlglot's own log lines ("Cannot traverse scope", "unsupported syntax") never reach dbt-oml's
output while the engine works; a model the engine cannot analyse is one WARNING, with the reason,
in the end-of-run summary (console.Console.summary)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlglot
from sqlglot.optimizer.scope import build_scope

from dbt_oml.artifacts import read_artifacts
from dbt_oml.console import Console
from dbt_oml.errors import LineageError
from dbt_oml.lineage.batch import analyse_models
from dbt_oml.lineage.filerefs import file_paths
from dbt_oml.lineage.model import build_schema, column_lineage
from dbt_oml.pipeline.report import Report

#: SQL sqlglot warns about by itself: a statement it parses as a Command, and a CTE scope it
#: cannot traverse (DuckDB's SUMMARIZE).
FALLBACK = "call pragma_version()"
UNTRAVERSABLE = "with s as (summarize w.m.t) select * from s"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if all(r is not record for r in self.records):  # seen once, by whichever logger first
            self.records.append(record)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Every record the sqlglot, dbt_oml and root loggers handle (whatever else is configured)."""
    handler = _Records()
    loggers = [logging.getLogger(n) for n in ("sqlglot", "dbt_oml", "")]
    for log in loggers:
        log.addHandler(handler)
    try:
        yield handler.records
    finally:
        for log in loggers:
            log.removeHandler(handler)


@pytest.fixture
def stderr_logging() -> Iterator[None]:
    """A root handler on stderr, as dbt (or `logging.basicConfig`) sets up in the process."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s:%(name)s:%(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _schema() -> object:
    return build_schema({"w": {"m": {"t": {"a": "INT"}}}}, dialect="duckdb")


def test_sqlglot_itself_warns_about_this_sql(records: list[logging.LogRecord]) -> None:
    sqlglot.parse(FALLBACK, read="duckdb")
    build_scope(sqlglot.parse_one(UNTRAVERSABLE, read="duckdb"))
    messages = [r.getMessage() for r in records if r.name == "sqlglot"]
    assert any("unsupported syntax" in m for m in messages)
    assert any("Cannot traverse scope" in m for m in messages)


@pytest.mark.usefixtures("stderr_logging")
@pytest.mark.parametrize("sql", [FALLBACK, UNTRAVERSABLE])
def test_the_engine_keeps_sqlglot_quiet_and_says_why_itself(
    sql: str, records: list[logging.LogRecord], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(LineageError) as err:
        column_lineage(sql, schema=_schema(), unique_id="model.p.m")  # type: ignore[arg-type]
    assert err.value.unique_id == "model.p.m"
    assert err.value.reason
    assert [r for r in records if r.name.startswith("sqlglot")] == []
    assert "sqlglot" not in capsys.readouterr().err
    assert logging.getLogger("sqlglot").filters == []  # the filter is gone after the analysis


@pytest.mark.usefixtures("stderr_logging")
def test_file_references_keep_sqlglot_quiet(
    records: list[logging.LogRecord], capsys: pytest.CaptureFixture[str]
) -> None:
    assert file_paths("call read_parquet('x.parquet')") == []
    assert [r for r in records if r.name.startswith("sqlglot")] == []
    assert "sqlglot" not in capsys.readouterr().err


def test_an_unsupported_model_is_one_warning_with_the_reason(
    mini_target: Path, records: list[logging.LogRecord]
) -> None:
    doc = json.loads((mini_target / "manifest.json").read_text())
    for name, sql in (("calls", FALLBACK), ("summary", UNTRAVERSABLE)):
        doc["nodes"][f"model.jaffle_oml.{name}"] = {
            **doc["nodes"]["model.jaffle_oml.stg_customers"],
            "unique_id": f"model.jaffle_oml.{name}",
            "name": name,
            "alias": name,
            "relation_name": f'"warehouse"."staging"."{name}"',
            "compiled_code": sql,
        }
    (mini_target / "manifest.json").write_text(json.dumps(doc))
    wanted = {"model.jaffle_oml.calls", "model.jaffle_oml.summary", "model.jaffle_oml.stg_orders"}
    result = analyse_models(read_artifacts(mini_target), wanted=wanted, dialect="duckdb")
    assert set(result.opaque) == {"model.jaffle_oml.calls", "model.jaffle_oml.summary"}
    assert [r for r in records if r.levelno >= logging.WARNING] == []  # the analysis says nothing
    Console().summary(
        Report(lineage_models=len(result.models), opaque=dict(result.opaque)), dry_run=False
    )
    warnings = [r for r in records if r.levelno >= logging.WARNING]
    assert sorted(r.getMessage() for r in warnings) == sorted(
        f"no column lineage for {uid}: {reason}" for uid, reason in result.opaque.items()
    )
    assert all("\n" not in r.getMessage() for r in warnings)  # one line per model
