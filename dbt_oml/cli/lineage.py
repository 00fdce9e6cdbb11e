"""`dbt-oml lineage`: column lineage from existing artifacts, as text, JSON or the explorer."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.cli.options import (
    PROJECT_KEYS,
    base_options,
    guarded,
    load,
    project_options,
    project_params,
    say,
)

logger = logging.getLogger(__name__)
PROJECT_HELP = (
    "Project options: --project-dir, --profiles-dir, --profile, --target/-t, --target-path, "
    "--vars (dbt's meaning and environment variables)."
)
LINEAGE_HELP = f"""Column lineage from existing artifacts (run dbt or dbt-oml first).

MODEL is a model, snapshot, seed or source (name, `source.table` or unique_id); COLUMN one of
its columns (default: every column). Upstream (the default) follows each column to the sources,
seeds' CSV files and files it comes from; --downstream to every column and model that reads it.
Without MODEL, --json and --html cover the whole project. The JSON document's shape is in
docs/column-lineage.md.

{PROJECT_HELP}

\b
Exit codes:
  0  done
  3  unknown model or column, a model without column lineage, missing artifacts; an answer
     about MODEL that rests on models without compiled SQL (a partial run's artifacts, after
     `dbt run -s ...`: run `dbt compile`), printed all the same (the whole project's
     document only warns: its opaque nodes carry the reason)
  5  a dbt-oml bug
"""


@click.command(
    "lineage",
    params=[*base_options(), *project_params()],
    short_help="Column lineage from existing artifacts.",
    help=LINEAGE_HELP,
    context_settings={"max_content_width": 100},
)
@click.option("--upstream", "up", is_flag=True, help="Trace upstream (default).")
@click.option("--downstream", "down", is_flag=True, help="Trace downstream.")
@click.option("--depth", type=click.IntRange(min=1), help="Follow at most N hops.")
@click.option(
    "--direct-only",
    is_flag=True,
    help="Only edges that carry values (DIRECT), not filters, joins, conditions.",
)
@click.option("--json", "as_json_", is_flag=True, help="Print the JSON document.")
@click.option(
    "--html",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the explorer (one self-contained HTML file) to FILE.",
)
@click.argument("model", required=False)
@click.argument("column", required=False)
@click.pass_context
@guarded
def lineage(ctx: click.Context, **opts: Any) -> int:
    from dbt_oml.errors import SelectionError
    from dbt_oml.lineage.view import Query, TreeOptions, answer, text_lines
    from dbt_oml.pipeline import offline

    settings = load(ctx)
    model, column, html = opts["model"], opts["column"], opts["html"]
    options = TreeOptions(depth=opts["depth"], direct_only=opts["direct_only"])
    if model is None and not (opts["as_json_"] or html):
        raise click.UsageError("needs MODEL [COLUMN] (or --json/--html for the whole project)")
    down = opts["down"]
    query = Query(model, column, upstream=opts["up"] or not down, downstream=down, options=options)
    project = {k: opts[k] for k in PROJECT_KEYS}
    view, uncompiled, total = offline.lineage_view(project_options(project, Path.cwd()), settings)
    try:
        result = _answer(view, query)
        if html:
            focus = answer(view, Query()).document
            focus.update(model=result.document["model"], column=column)
            path = offline.write_explorer(Path(html), focus)
            say(f"dbt-oml lineage: explorer written to {path} (open it: xdg-open {path})")
    except SelectionError as e:
        say(f"dbt-oml lineage: {e}")
        return ExitCode.USAGE
    if opts["as_json_"]:
        click.echo(json.dumps(result.document, indent=1))
    elif not html:
        click.echo("\n".join(text_lines(result)))
    return _partial_exit(view, result, query, uncompiled, total)


def _partial_exit(
    view: Any, result: Any, query: Any, uncompiled: tuple[str, ...], total: int
) -> int:
    """3 when the answer about a model rests on models without compiled SQL (one WARNING); the
    whole project's document only warns: its opaque nodes carry the reason."""
    from dbt_oml.impact.analysis import bearing_on

    if result.root is None:
        partial(uncompiled, total, "lineage")
        return ExitCode.SUCCESS
    roots = [result.root.id]
    up, down = query.upstream, query.downstream
    missing = bearing_on(view.graph, uncompiled, roots, upstream=up, downstream=down)
    return ExitCode.USAGE if partial(missing, total, "lineage") else ExitCode.SUCCESS


def partial(uncompiled: tuple[str, ...], total: int, command: str) -> bool:
    """One WARNING when the answer rests on models without compiled SQL (a partial run's
    artifacts: what they read is unknown, so it may miss readers); True then: exit 3."""
    if not uncompiled:
        return False
    names = ", ".join(u.rsplit(".", 1)[-1] for u in uncompiled[:3])
    more = ", ..." if len(uncompiled) > 3 else ""  # noqa: PLR2004 - three names are enough
    logger.warning(
        "this answer rests on %d model(s) without compiled SQL in the artifacts (%s%s, of the "
        "project's %d: a partial run's, such as `dbt run -s <model>`): what they read is "
        "unknown, so it may miss readers; run `dbt compile` (the same --target and --vars), "
        "then dbt-oml %s again",
        len(uncompiled),
        names,
        more,
        total,
        command,
    )
    return True


def _answer(view: Any, query: Any) -> Any:
    """The answer to `lineage MODEL COLUMN`, or to `lineage MODEL.COLUMN` (impact's form) when
    MODEL.COLUMN names no model."""
    from dataclasses import replace

    from dbt_oml.errors import SelectionError
    from dbt_oml.lineage.view import answer

    try:
        return answer(view, query)
    except SelectionError:
        if query.column is not None or not query.model or "." not in query.model:
            raise
        model, column = query.model.rsplit(".", 1)
        return answer(view, replace(query, model=model, column=column))
