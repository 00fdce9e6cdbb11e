"""OpenMetadata: a thin REST client (`client`) and its auth flow and token providers (`auth`), the
entities OM needs before it can resolve events (`bootstrap`, `services`, `tables`, `types`,
`names`), the copy of an event OM gets (`prepare`, `event_check`), dbt metadata and data quality
(`dbt_metadata`, `dbt_docs`, `dbt_session`, `labels`, `data_quality`) and dbt_oml's one retry
mechanism, with the run's retry budget (`retry`, on tenacity).

Must not import the pipeline, the CLI, transports, delivery or dbt.
"""
