"""OpenMetadata: a thin REST client (`client`) and its auth flow and token providers (`auth`), the
entities OM needs before it can resolve events (`bootstrap`, `services`, `tables`, `types`,
`names`), the copy of an event OM gets (`prepare`, `event_check`), the dbt layer: descriptions,
tags, owners, the dbt tab and the tests (`metadata/`), and the run's retry budget and breaker
(`retry`, on tenacity, with dbt_oml.retry's backoff).

Must not import the pipeline, the CLI, transports, delivery or dbt.
"""
