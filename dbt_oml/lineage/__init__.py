"""The column-lineage engine, with sqlglot: one compiled model's lineage (`model`, light to
import, over `engine`: parse and qualify, loaded on the first analysis; the cache keys'
`version`; `survey` of the parsed tree, `walk` over its scopes, `resolve` DuckDB's name rules with
`scopes` helpers, `structs`, `generated`; `expand` of DuckDB's column sets: `pivots`, `colsets`;
sqlglot's own log lines kept `quiet`), the value `types` and how transformations compose, a
run's worth of models (`batch`, bounded worker processes in `workers`, a content-addressed
on-disk `cache` of `codec` JSON), file references in SQL (`filerefs`), and the project's column
graph and its views (`graph`, `view`).

Must not import dbt, DuckDB, httpx2, NATS, events, delivery, transports, OpenMetadata, the
pipeline or the CLI. The cache is its only disk access, at a path it is given.
"""
