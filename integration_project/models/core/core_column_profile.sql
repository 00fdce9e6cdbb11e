-- Deliberately beyond sqlglot (DuckDB's SHOW as a subquery): dbt-oml reports this model as
-- opaque (table-level lineage only) and every other model keeps its column lineage.
select column_name, column_type
from (show select * from {{ ref('stg_orders') }})
