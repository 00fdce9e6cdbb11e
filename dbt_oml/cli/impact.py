"""`dbt-oml impact`: what downstream reads the given (or the changed) columns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.cli.lineage import PROJECT_HELP, partial
from dbt_oml.cli.options import (
    PROJECT_KEYS,
    base_options,
    guarded,
    load,
    project_options,
    project_params,
    say,
)

IMPACT_HELP = f"""What reads the given columns, downstream: every column (direct or indirect), every
model whose rows they shape (joins, filters), every dbt test and exposure, each with the path.

COLUMNS are MODEL.COLUMN (a model, snapshot, seed or source, as for `dbt-oml lineage`). With
--state DIR (the target directory of a production build, as dbt's --state), the models whose
compiled SQL changed are compared with it: removed, renamed and changed columns are the ones
analysed. Works from artifacts alone: `dbt compile` is enough for the current build.

{PROJECT_HELP}

\b
Exit codes:
  0  done
  1  --fail-on removed: a removed (or renamed) column is still read downstream;
     --fail-on changed: any changed column is read downstream
  3  unknown model or column, missing artifacts; partial artifacts (models without compiled
     SQL, after `dbt run -s ...`: run `dbt compile`), the report printed all the same
  5  a dbt-oml bug
"""


@click.command(
    "impact",
    params=[*base_options(), *project_params()],
    short_help="What downstream reads the given (or changed) columns.",
    help=IMPACT_HELP,
    context_settings={"max_content_width": 100},
)
@click.option(
    "--state",
    type=click.Path(file_okay=False),
    help="Target directory of the production build to compare with.",
)
@click.option("--json", "as_json_", is_flag=True, help="Same as --format json.")
@click.option(
    "--selector",
    is_flag=True,
    help="With --state: print a dbt selector of every model the change can affect "
    '(dbt build -s "$(dbt-oml impact --state prod --selector)").',
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "md"]),
    default="text",
    help="text (default), json, or md (GitHub-flavoured Markdown for a CI comment).",
)
@click.option(
    "--fail-on",
    type=click.Choice(["removed", "changed"]),
    help="Exit 1 when a removed (or any changed) column is still read downstream.",
)
@click.argument("columns", nargs=-1)
@click.pass_context
@guarded
def impact(ctx: click.Context, **opts: Any) -> int:
    from dbt_oml.errors import SelectionError
    from dbt_oml.pipeline.impact import impact as impact_of

    settings = load(ctx)
    columns, state, fail_on = _asked(opts), opts["state"], opts["fail_on"]
    project = project_options({k: opts[k] for k in PROJECT_KEYS}, Path.cwd())
    try:
        report, graph = impact_of(
            project, state=Path(state) if state else None, columns=columns, settings=settings
        )
    except SelectionError as e:
        say(f"dbt-oml impact: {e}")
        return ExitCode.USAGE
    if opts["selector"]:
        return _selector(report, graph)
    _print(report, graph, "json" if opts["as_json_"] else opts["fmt"])
    incomplete = partial(report.uncompiled, report.analysed, "impact")
    failing = report.failing(fail_on)
    if failing:  # a reader found is one for sure, partial artifacts or not
        names = ", ".join(f"{i.change.node}.{i.change.column}" for i in failing)
        say(f"dbt-oml impact: --fail-on {fail_on}: still read downstream: {names}")
        return ExitCode.DBT_FAILURE
    return ExitCode.USAGE if incomplete else ExitCode.SUCCESS


def _asked(opts: dict[str, Any]) -> tuple[str, ...]:
    """The columns asked about (MODEL.COLUMN, or lineage's MODEL COLUMN); usage checked."""
    columns, state = tuple(opts["columns"]), opts["state"]
    model_and_column = 2  # lineage's MODEL COLUMN form, as impact's MODEL.COLUMN
    if len(columns) == model_and_column and not any("." in c for c in columns):
        columns = (".".join(columns),)
    if not columns and not state:
        raise click.UsageError("needs MODEL.COLUMN ... or --state DIR")
    if opts["selector"] and not state:
        raise click.UsageError("--selector needs --state DIR (the production build)")
    return columns


def _print(report: Any, graph: Any, fmt: str) -> None:
    from dbt_oml.impact import report as impact_report

    if fmt == "json":
        click.echo(json.dumps(impact_report.as_json(report, graph), indent=1))
    elif fmt == "md":
        click.echo(impact_report.as_markdown(report, graph), nl=False)
    else:
        click.echo("\n".join(impact_report.as_text(report, graph)))


def _selector(report: Any, graph: Any) -> int:
    """The selected nodes by name, space-separated (dbt's union), on stdout; nothing when the
    change affects nothing. Partial artifacts print none: the answer could miss readers."""
    from dbt_oml.cli.lineage import partial

    if partial(report.uncompiled, report.analysed, "impact"):
        return ExitCode.USAGE
    buildable = {"model", "snapshot", "seed"}
    names = sorted(
        {
            graph.nodes[uid].name
            for uid in report.selected or ()
            if graph.nodes[uid].kind in buildable
        }
    )
    if names:
        click.echo(" ".join(names))
    return ExitCode.SUCCESS
