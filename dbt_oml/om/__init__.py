"""OpenMetadata: a thin REST client with its auth (`client`), the entities OM needs before it can
resolve events (`bootstrap`, `tables`, `types`, `names`), the copy of an event OM gets
(`prepare`, `event_check`), dbt metadata and data quality (`dbt_metadata`, `dbt_docs`,
`dbt_session`, `labels`, `data_quality`) and the run's retry budget (`retry`).

Must not import the pipeline, the CLI, transports, delivery or dbt.
"""
