"""Read run_results.json into RunResults, noting what only reads with a fallback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbt_oml.artifacts.reading import as_dict, as_list, as_text, load_document
from dbt_oml.artifacts.views import NodeResult, RunResults, Timing, parse_time
from dbt_oml.errors import ArtifactError

#: Every status dbt writes into run_results.json (dbt's NodeStatus / RunStatus / TestStatus).
KNOWN_STATUSES = frozenset(
    {
        "success",
        "error",
        "skipped",
        "pass",
        "fail",
        "warn",
        "runtime error",
        "partial success",
        "no-op",
    }
)


def _timing(raw: object) -> tuple[Timing, ...]:
    return tuple(
        Timing(
            name=str(t.get("name")),
            started_at=parse_time(t.get("started_at")),
            completed_at=parse_time(t.get("completed_at")),
        )
        for t in as_list(raw)
        if isinstance(t, dict)
    )


def _result_problem(raw: dict[str, Any], result: NodeResult) -> str | None:
    """What of a result only reads with a fallback (None: all of it reads as dbt wrote it)."""
    timing = raw.get("timing")
    times = [
        f"{key}={t.get(key)!r}"
        for t in as_list(timing)
        if isinstance(t, dict)
        for key in ("started_at", "completed_at")
        if t.get(key) not in (None, "") and parse_time(t.get(key)) is None
    ]
    if timing not in (None, []) and not isinstance(timing, list):
        times.append(f"timing={timing!r}")
    found = []
    if times:
        found.append(f"unreadable {', '.join(times)} (its events use the run's times)")
    if result.status not in KNOWN_STATUSES:
        found.append(f"unknown status {result.status!r} (its run ends as FAIL)")
    return f"run_results.json: {result.unique_id}: {'; '.join(found)}" if found else None


def _result(raw: dict[str, Any]) -> NodeResult:
    timing = _timing(raw.get("timing"))
    response = as_dict(raw.get("adapter_response"))
    rows = response.get("rows_affected")
    failures = raw.get("failures")
    return NodeResult(
        unique_id=str(raw["unique_id"]),
        status=str(raw.get("status") or "unknown").lower(),
        message=as_text(raw.get("message")),
        timing=timing,
        rows_affected=rows if isinstance(rows, int) and rows >= 0 else None,
        failures=failures if isinstance(failures, int) else None,
        compiled_code=as_text(raw.get("compiled_code")),
    )


def read_run_results(path: Path) -> RunResults:
    """Read run_results.json (schema v2-v6)."""
    doc = load_document(path, "run-results")
    meta = doc["metadata"]
    args = as_dict(doc.get("args"))
    raw_results = doc.get("results") or []
    if not isinstance(raw_results, list):
        raise ArtifactError(
            path=str(path),
            reason=f"`results` is a {type(raw_results).__name__}, not a list",
            hint="re-run dbt to rewrite it",
        )
    try:
        results = tuple(_result(r) for r in raw_results)
    except (KeyError, TypeError, AttributeError) as e:
        raise ArtifactError(
            path=str(path), reason=f"has a malformed result ({e!r})", hint="re-run dbt"
        ) from e
    problems = tuple(
        p for r, raw in zip(results, raw_results, strict=True) if (p := _result_problem(raw, r))
    )
    return RunResults(
        path=str(path),
        dbt_version=str(meta.get("dbt_version") or "unknown"),
        invocation_id=as_text(meta.get("invocation_id")),
        invocation_started_at=parse_time(meta.get("invocation_started_at")),
        generated_at=parse_time(meta.get("generated_at")),
        command=as_text(args.get("which")),
        args={k: str(v) for k, v in args.items() if isinstance(v, str | int | float | bool)},
        selected=tuple(str(s) for s in as_list(args.get("select"))),
        results=results,
        problems=problems,
    )
