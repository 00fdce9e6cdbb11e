"""The dbt layer in OpenMetadata: what OM's own dbt ingestion would write, on dbt-oml's own tables.

`docs` reads what the events say about dbt nodes and tests (dbt-oml's facets; pure), `writer`
writes descriptions, tags, owners and the dbt tab (data model), `quality` the test definitions,
cases and results, `labels` and `columns` what they put on a table, `session` the switches, plan,
dry run, counts and refusals they share.

Must not import the pipeline, the CLI, transports, delivery or dbt (the rules of om/).
"""
