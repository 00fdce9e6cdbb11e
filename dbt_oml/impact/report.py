"""`dbt-oml impact` output: text for people, JSON (version 1, docs/column-lineage.md) and
GitHub-flavoured Markdown for a pull-request comment.

Pure: an impact report and the column graph (for names) in, strings or plain data out.
"""

from __future__ import annotations

from typing import Any, Final

from dbt_oml.impact.analysis import Impact, Path, Reader, Report
from dbt_oml.lineage.graph import ColumnGraph
from dbt_oml.lineage.view import describe

REPORT_VERSION: Final = 1


def _name(graph: ColumnGraph, node: str) -> str:
    found = graph.nodes.get(node)
    return found.name if found else node


def _relation(graph: ColumnGraph, node: str) -> str:
    found = graph.nodes.get(node)
    return found.relation if found else node


def _path(graph: ColumnGraph, path: Path) -> str:
    return " -> ".join(f"{_name(graph, n)}.{c}" for n, c in path)


def _title(graph: ColumnGraph, impact: Impact) -> str:
    change = impact.change
    what = f"{_name(graph, change.node)}.{change.column}"
    if change.new_name:
        return f"{what} renamed to {change.new_name}"
    return f"{what} {change.change}"


def _counts(impact: Impact) -> str:
    counts = (
        f"{len(impact.columns)} column(s), {len(impact.rows)} model(s) by their rows, "
        f"{len(impact.tests)} test(s), {len(impact.exposures)} exposure(s)"
    )
    if impact.may_read:
        counts += f"; may be read by {len(impact.may_read)} opaque model(s)"
    return counts


def _partial(report: Report) -> list[str]:
    if not report.uncompiled:
        return []
    return [
        f"incomplete: it rests on {len(report.uncompiled)} model(s) without compiled SQL (of "
        f"the project's {report.analysed}: a partial run's artifacts, run `dbt compile`); what "
        "they read is unknown"
    ]


def _summary(report: Report) -> list[str]:
    if report.comparison is None:
        return []
    c = report.comparison
    names = ", ".join(u.split(".")[-1] for u in c.modified) or "none"
    return [
        f"compared with the state in {report.state}: {len(c.modified)} model(s) with changed "
        f"SQL ({names}), {len(c.added)} added, {len(c.removed)} removed",
        *(f"note: {n}" for n in c.notes),
    ]


def _state_mark(reader: Reader) -> str:
    return "  (lineage from --state: opaque now)" if reader.via_state else ""


def as_text(report: Report, graph: ColumnGraph) -> list[str]:
    """Per changed column: what reads it, each with how and the path from the change."""
    lines = [f"dbt-oml impact: {line}" for line in [*_summary(report), *_partial(report)]]
    if not report.impacts:
        lines.append("dbt-oml impact: no column changed" if report.comparison else "nothing asked")
    for impact in report.impacts:
        lines.append("")
        lines.append(f"{_title(graph, impact)}  ({impact.change.node})")
        if impact.change.before or impact.change.after:
            lines.append(f"  before: {impact.change.before or '?'}")
            lines.append(f"  after:  {impact.change.after or '?'}")
        lines.append(f"  read by {_counts(impact)}")
        for reader in impact.columns:
            lines.append(
                f"    column   {_name(graph, reader.node)}.{reader.column}  "
                f"[{describe(reader.transformations)}]  via {_path(graph, reader.path)}"
                + _state_mark(reader)
            )
        for reader in impact.rows:
            lines.append(
                f"    rows     {_name(graph, reader.node)}  [{describe(reader.transformations)}]  "
                f"via {_path(graph, reader.path)}" + _state_mark(reader)
            )
        for test in impact.tests:
            lines.append(f"    test     {test.name}  via {_path(graph, test.path)}")
        for opaque in impact.may_read:
            lines.append(
                f"    may read {_name(graph, opaque.node)}  (opaque: {opaque.reason})  "
                f"via {_path(graph, opaque.path)}"
            )
        for exposure in impact.exposures:
            e = exposure.exposure
            lines.append(
                f"    exposure {e.name} ({e.type}{', ' + e.owner if e.owner else ''})  "
                f"via {_path(graph, exposure.path)}"
            )
        if impact.change.change in {"removed", "renamed"} and impact.still_read:
            lines.append(f"  ! still read as {impact.change.column!r}: it breaks those readers")
    return lines


def _tx(reader: Reader) -> list[dict[str, Any]]:
    return [
        {"type": t.type, "subtype": t.subtype, "masking": t.masking} for t in reader.transformations
    ]


def as_json(report: Report, graph: ColumnGraph) -> dict[str, Any]:
    """The report as one JSON document (shape in docs/column-lineage.md, kept stable)."""
    comparison = report.comparison
    return {
        "version": REPORT_VERSION,
        "state": report.state,
        "models": {
            "modified": comparison.modified if comparison else [],
            "added": comparison.added if comparison else [],
            "removed": comparison.removed if comparison else [],
        },
        "notes": comparison.notes if comparison else [],
        "uncompiled": list(report.uncompiled),
        "changes": [_impact_json(i, graph) for i in report.impacts],
        **({"selected": list(report.selected)} if report.selected is not None else {}),
    }


def _impact_json(impact: Impact, graph: ColumnGraph) -> dict[str, Any]:
    change = impact.change
    return {
        "node": change.node,
        "relation": _relation(graph, change.node),
        "column": change.column,
        "change": change.change,
        "new_name": change.new_name,
        "before": change.before or None,
        "after": change.after or None,
        "still_read": impact.still_read,
        "columns": [
            {
                "node": r.node,
                "relation": _relation(graph, r.node),
                "column": r.column,
                "transformations": _tx(r),
                "direct": r.direct,
                "via_state": r.via_state,
                "path": [list(p) for p in r.path],
            }
            for r in impact.columns
        ],
        "rows": [
            {
                "node": r.node,
                "relation": _relation(graph, r.node),
                "transformations": _tx(r),
                "via_state": r.via_state,
                "path": [list(p) for p in r.path],
            }
            for r in impact.rows
        ],
        "tests": [
            {"node": t.node, "name": t.name, "column": t.column, "path": [list(p) for p in t.path]}
            for t in impact.tests
        ],
        "exposures": [
            {
                "node": x.exposure.unique_id,
                "name": x.exposure.name,
                "type": x.exposure.type,
                "owner": x.exposure.owner,
                "url": x.exposure.url,
                "path": [list(p) for p in x.path],
            }
            for x in impact.exposures
        ],
        "may_read": [
            {
                "node": o.node,
                "relation": _relation(graph, o.node),
                "reason": o.reason,
                "path": [list(p) for p in o.path],
            }
            for o in impact.may_read
        ],
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_path(graph: ColumnGraph, path: Path) -> str:
    return " → ".join(f"`{_name(graph, n)}.{c}`" for n, c in path)


def as_markdown(report: Report, graph: ColumnGraph) -> str:
    """GitHub-flavoured Markdown: a summary, then a table of readers per changed column."""
    lines = ["## dbt-oml impact", ""]
    lines += [f"- {_cell(line)}" for line in [*_summary(report), *_partial(report)]]
    if not report.impacts:
        lines.append("No column changed." if report.comparison else "Nothing asked.")
        return "\n".join(lines) + "\n"
    for impact in report.impacts:
        change = impact.change
        lines += ["", f"### `{_name(graph, change.node)}.{change.column}`: {change.change}"]
        if change.new_name:
            lines[-1] += f" to `{change.new_name}`"
        lines.append("")
        if change.change in {"removed", "renamed"} and impact.still_read:
            lines += [f"**Still read as `{change.column}`**: these readers break.", ""]
        if not (
            impact.columns or impact.rows or impact.tests or impact.exposures or impact.may_read
        ):
            lines.append("Nothing downstream reads it.")
            continue
        lines += ["| reader | kind | how | path |", "|---|---|---|---|"]
        for r in impact.columns:
            lines.append(
                f"| `{_name(graph, r.node)}.{r.column}` | column | "
                f"{_cell(describe(r.transformations))} | {_md_path(graph, r.path)} |"
            )
        for r in impact.rows:
            lines.append(
                f"| `{_name(graph, r.node)}` | rows | {_cell(describe(r.transformations))} | "
                f"{_md_path(graph, r.path)} |"
            )
        for t in impact.tests:
            lines.append(f"| `{t.name}` | test | | {_md_path(graph, t.path)} |")
        for x in impact.exposures:
            lines.append(
                f"| `{_cell(x.exposure.name)}` | exposure ({x.exposure.type}) | | "
                f"{_md_path(graph, x.path)} |"
            )
        for o in impact.may_read:
            lines.append(
                f"| `{_name(graph, o.node)}` | may read (opaque) | {_cell(o.reason)} | "
                f"{_md_path(graph, o.path)} |"
            )
    return "\n".join(lines) + "\n"
