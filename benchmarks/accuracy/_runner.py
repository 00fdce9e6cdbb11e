"""The loop every tool's runner shares: read the cases, time each model, write the answers.

A runner is a small script run with its tool's own virtualenv (`benchmarks/.venv-peers-*`, or
dbt-oml's `.venv`); it imports its tool and nothing of dbt-oml, and talks JSON over files:

    <venv>/bin/python benchmarks/accuracy/run_<tool>.py CASES.json ANSWERS.json [--timeout S]

CASES.json: `{"cases": [{"id", "sql", "schema": {catalog: {schema: {table: {column: type}}}},
"default_catalog", "default_schema", "columns": [the model's own catalog columns]}]}`.

ANSWERS.json: `{"tool", "versions", "import_seconds", "results": [...]}`, one result per case:
`{"id", "seconds", "failed", "error", "columns": [[output, [catalog, schema, table, raw], column,
kind]], "dataset": [[[catalog, schema, table, raw], column]] | null}`. `kind` is "DIRECT",
"INDIRECT" or null (the tool does not say); `raw` is the tool's own spelling of the relation
(a URN, a file path, `read_parquet('...')`), from which the scorer reads file paths; `dataset`
is null for a tool that reports no dataset-level (JOIN/WHERE/GROUP BY) inputs. Normalising
names (case, quotes, defaults, matching the schema's tables) is the scorer's job
(benchmarks/accuracy_scoring.py), the same for every tool.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

Case = dict[str, Any]
Answer = tuple[list[list[Any]], list[list[Any]] | None]
Analyse = Callable[[Case], Answer]


class ModelTimeoutError(BaseException):
    """One model ran past --timeout seconds (a BaseException: tools that catch Exception per
    column must not swallow it)."""


class PartialAnswerError(Exception):
    """Some of a model's columns failed: the model counts as failed, the other edges count."""

    def __init__(self, answer: Answer, failures: list[str]) -> None:
        super().__init__(f"{len(failures)} error(s); first: {failures[0]}")
        self.answer = answer


class ErrorCount(logging.Handler):
    """Counts ERROR records: some tools log a per-column failure and go on."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage()[:300])


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def _raise(_signum: int, _frame: object) -> None:
        raise ModelTimeoutError(f"timed out after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def versions(*distributions: str) -> dict[str, str]:
    out = {}
    for name in distributions:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def table_ref(catalog: Any, schema: Any, table: Any, raw: Any = "") -> list[str]:
    return [str(catalog or ""), str(schema or ""), str(table or ""), str(raw or "")]


def main(tool: str, load: Callable[[], Analyse], distributions: tuple[str, ...]) -> None:
    """Run `load()` (imports the tool, timed), then its analyse function on every case."""
    parser = argparse.ArgumentParser()
    parser.add_argument("cases")
    parser.add_argument("answers")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    cases = json.loads(Path(args.cases).read_text())["cases"]
    errors = ErrorCount()
    logging.getLogger().addHandler(errors)
    logging.getLogger().setLevel(logging.ERROR)
    start = time.perf_counter()
    analyse = load()
    import_seconds = time.perf_counter() - start
    results = []
    for case in cases:
        errors.messages.clear()
        columns: list[list[Any]] = []
        dataset: list[list[Any]] | None = None
        error = None
        start = time.perf_counter()
        try:
            with _deadline(args.timeout):
                columns, dataset = analyse(case)
        except PartialAnswerError as e:
            (columns, dataset), error = e.answer, str(e)[:500]
        except (Exception, ModelTimeoutError) as e:  # noqa: BLE001 - a failure is a result
            error = f"{type(e).__name__}: {e}"[:500]
        seconds = time.perf_counter() - start
        if error is None and errors.messages:
            error = f"logged {len(errors.messages)} error(s): {errors.messages[0]}"
        results.append(
            {
                "id": case["id"],
                "seconds": seconds,
                "failed": error is not None,
                "error": error,
                "columns": columns,
                "dataset": dataset,
            }
        )
    doc = {
        "tool": tool,
        "versions": versions(*distributions),
        "python": sys.version.split()[0],
        "loaded_from": {
            name.split(".")[0]: str(getattr(sys.modules.get(name), "__file__", ""))
            for name in ("dbt_oml", "sqlglot", "datahub", "dbt_colibri", "openlineage_sql")
            if name in sys.modules
        },
        "import_seconds": import_seconds,
        "results": results,
    }
    Path(args.answers).write_text(json.dumps(doc))
