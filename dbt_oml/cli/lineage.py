"""`dbt-oml lineage`: column lineage from existing artifacts, as text, JSON or the explorer."""

from __future__ import annotations

import json
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
)
from dbt_oml.pipeline.console import say

PROJECT_HELP = (
    "Project options: --project-dir, --profiles-dir, --profile, --target/-t, --target-path, "
    "--vars (dbt's meaning and environment variables)."
)
LINEAGE_HELP = f"""Column lineage from existing artifacts (run dbt or dbt-oml first).

MODEL is a model, snapshot, seed or source (name, `source.table` or unique_id); COLUMN one of
its columns (default: every column). Upstream (the default) follows each column to the sources,
seeds' CSV files and files it comes from; --downstream to every column and model that reads it.
Without MODEL, --json and --html cover the whole project. The JSON document's shape is in the
README (Column lineage).

{PROJECT_HELP}

\b
Exit codes:
  0  done
  3  unknown model or column, a model without column lineage, missing artifacts
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

    load(ctx)
    model, column, html = opts["model"], opts["column"], opts["html"]
    options = TreeOptions(depth=opts["depth"], direct_only=opts["direct_only"])
    if model is None and not (opts["as_json_"] or html):
        raise click.UsageError("needs MODEL [COLUMN] (or --json/--html for the whole project)")
    down = opts["down"]
    query = Query(model, column, upstream=opts["up"] or not down, downstream=down, options=options)
    project = {k: opts[k] for k in PROJECT_KEYS}
    view = offline.lineage_view(project_options(project, Path.cwd()))
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
    return ExitCode.SUCCESS


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
