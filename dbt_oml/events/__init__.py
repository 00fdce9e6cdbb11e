"""The event core: OpenLineage RunEvents for one dbt invocation, from its artifacts.

Shaped as dbt-ol shapes them (a parent run for the invocation, a run per executed node with the
invocation as parent, test assertions per tested dataset), with a namespace per dataset, datasets
resolved through ephemeral models, and `Z` times with milliseconds. The entry points:
`invocation_events` (`build_events`, `iter_events`: every event of an invocation, in time order)
and `node_events` (`EventBuilder`: START/COMPLETE/FAIL/ABORT per node, with its `datasets` and
`runs` halves). Beside them: `quality` (dbt tests as data-quality events), `facets` and
`node_facets` (standard and dbt-oml facets), `invocation` (the invocation's identity and what
shapes events), `ids` (deterministic run ids), `serialize` (JSON in one pass).

Pure: no I/O, no environment, no clock (times and ids are given). Must not import dbt, DuckDB,
httpx2, NATS, delivery, transports, OpenMetadata, the pipeline or the CLI.
"""
