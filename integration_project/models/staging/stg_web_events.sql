-- A file source read by path: becomes its own dataset (file namespace), not a dbt node.
select
    event_id,
    customer_id,
    cast(event_at as timestamp) as event_at,
    page
from read_parquet('{{ var("events_parquet") }}')
