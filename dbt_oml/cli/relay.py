"""`dbt-oml relay`: drain the JetStream stream into OpenMetadata (docs/nats.md)."""

from __future__ import annotations

import click

from dbt_oml.cli.codes import ExitCode
from dbt_oml.cli.options import base_options, console, guarded, load, say

RELAY_HELP = """Drain the JetStream stream into OpenMetadata, acknowledging only what OM took.

Reads the stream `dbt-oml build` publishes to (its jetstream transport, or relay.jetstream in
dbt-oml.yml) and writes to relay.openmetadata, else OM_HOST and friends. Each option is also the
`relay:` key of the same name in dbt-oml.yml and a DBT_OML_RELAY_<KEY> variable.

\b
Exit codes:
  0  done (or stopped by SIGTERM)
  3  configuration error (a bad relay setting, no stream, no OpenMetadata, bad dead-letter subject)
  4  --once left messages for later (OpenMetadata did not take them) or NATS is unreachable
  5  a dbt-oml bug (traceback printed)
"""


@click.command(
    "relay",
    params=base_options(),
    short_help="Drain the JetStream stream into OpenMetadata.",
    help=RELAY_HELP,
    context_settings={"max_content_width": 100},
)
@click.option("--once", is_flag=True, help="Drain what is there and exit (cron, CI).")
@click.option("--batch", metavar="N", help="Messages per fetch (relay.batch, default 100).")
@click.option("--durable", metavar="NAME", help="Durable consumer (default dbt-oml-relay).")
@click.option("--ack-wait", metavar="SECONDS", help="Seconds before JetStream redelivers (30).")
@click.option("--fetch-timeout", metavar="SECONDS", help="Seconds one fetch waits (2).")
@click.option(
    "--dead-letter-subject", metavar="SUBJECT", help="Where refused messages go (<subject>.dead)."
)
@click.pass_context
@guarded
def relay(ctx: click.Context, once: bool, **opts: object) -> int:
    from dbt_oml.config import RELAY_SCALARS, relay_ends
    from dbt_oml.relay import relay_from, run_relay
    from dbt_oml.transports.jetstream import NatsUnavailableError

    given = {k: v for k, v in opts.items() if k in RELAY_SCALARS and v is not None}
    settings = load(ctx, relay=given)
    relay = relay_from(
        relay_ends(settings),
        settings.relay,
        batch=None,
        durable=None,
        redactor=console().redactor,
    )
    try:
        report = run_relay(relay, once=once)
    except NatsUnavailableError as e:
        say(
            f"dbt-oml relay: NATS {e.server}: {e.cause}; unacked messages stay in the stream, "
            "run again when NATS is reachable"
        )
        return ExitCode.DELIVERY_FAILED
    if report.received or report.batches or not once:
        say(
            f"dbt-oml relay: received {report.received}, delivered {report.delivered}, "
            f"retried {report.retried}, dead-lettered {report.dead_lettered}"
        )
    else:
        say(f"dbt-oml relay: nothing to relay on {relay.source.subject!r}")
    if report.retried and once and not report.stopped:
        say(f"dbt-oml relay: OpenMetadata did not take everything: {report.last_error}")
        return ExitCode.DELIVERY_FAILED
    return ExitCode.SUCCESS
