{{ config(meta={'owner': ['analytics@example.com', 'bi@example.com']}, tags=['mart']) }}

select
    c.customer_key,
    c.customer_id,
    c.full_name,
    c.country_name,
    c.region,
    coalesce(s.order_count, 0) as order_count,
    coalesce(s.lifetime_value, 0) as lifetime_value,
    s.value_rank
from {{ ref('core_customers') }} as c
left join {{ ref('core_customer_stats') }} as s
    on c.customer_id = s.customer_id
