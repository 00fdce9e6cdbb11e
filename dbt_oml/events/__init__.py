"""The event core: OpenLineage RunEvents for one dbt invocation, from its artifacts.

`builder` (the entry points), `node_events` (EventBuilder: START/COMPLETE/FAIL/ABORT per
node), `datasets` and `runs` (its datasets and runs halves), `invocation_events` (every event of
an invocation, in time order), `quality` (dbt tests as
data-quality events), `facets` and `node_facets` (standard and dbt-oml facets), `invocation` (the
invocation's identity and what shapes events), `ids` (deterministic run ids), `serialize` (JSON in
one pass).

Pure: no I/O, no environment, no clock (times and ids are given). Must not import dbt, DuckDB,
httpx2, NATS, delivery, transports, OpenMetadata, the pipeline or the CLI.
"""
