"""`dbt-oml verify`: read back from OpenMetadata what the run's events should have made there.

\b
Exit codes:
  0  every table, edge and column lineage the events carry is in OpenMetadata
  1  something is missing or different (each printed, with the reason)
  3  usage or configuration error (no OpenMetadata transport), missing or corrupt artifacts
  4  OpenMetadata could not be read (unreachable, a refused token)
  5  a dbt-oml bug (traceback printed)
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.cli.options import (
    PROJECT_KEYS,
    console,
    guarded,
    load,
    project_options,
    project_params,
    say,
    settings_options,
    takes,
)

_CODES = (__doc__ or "").split("\n\n", 1)[1]


@click.command(
    "verify",
    short_help="Read back from OpenMetadata what the run's events should have made.",
    params=[*settings_options(only=takes("verify")), *project_params()],
    help="Read back from OpenMetadata what the events of existing artifacts (emit's) should "
    "have made there: each table, each lineage edge and its column lineage, printed as "
    "present, missing or different with the reason (an unmapped namespace, a table OM does "
    f"not have, an edge that is not there). Reads only.\n\n{_CODES}",
    context_settings={"max_content_width": 100},
)
@click.pass_context
@guarded
def verify(ctx: click.Context, **opts: Any) -> int:
    from dbt_oml.config.settings import changed
    from dbt_oml.pipeline import offline
    from dbt_oml.pipeline.sending import openmetadata_config, read_back

    settings = load(ctx)
    om = openmetadata_config(settings)  # before anything is built: no OM, nothing to read
    options = project_options({k: opts.get(k) for k in PROJECT_KEYS}, Path.cwd())
    with contextlib.redirect_stdout(sys.stderr):  # dbt's own lines: stdout is the answer
        built = offline.emit(
            changed(settings, dry_run=True),
            options,
            cwd=Path.cwd(),
            redactor=console().redactor,
            plan=False,  # the read-back makes its own dry bootstrap
        )
    checks = read_back(om, built.delivery.collected, console().redactor)
    for check in checks:
        state = check.state if check.state == "present" else check.state.upper()
        reason = f": {check.reason}" if check.reason else ""
        click.echo(f"{state:<9} {check.kind:<14} {check.name}{reason}")
    counts = {s: sum(c.state == s for c in checks) for s in ("present", "missing", "different")}
    say("dbt-oml verify: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return ExitCode.SUCCESS if counts["present"] == len(checks) else ExitCode.DBT_FAILURE
