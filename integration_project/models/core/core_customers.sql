{{ config(tags=['core', 'pii'], meta={'owner': 'data-platform@example.com'}) }}

with customers as (
    select * from {{ ref('stg_customers') }}
),

countries as (
    select * from {{ ref('stg_country_codes') }}
)

select
    md5(cast(c.customer_id as varchar) || '|' || coalesce(c.email, '')) as customer_key,
    c.customer_id,
    c.first_name || ' ' || c.last_name as full_name,
    coalesce(c.email, 'unknown') as email,
    c.country_code,
    coalesce(k.country_name, 'Unknown') as country_name,
    k.region,
    c.signed_up_on
from customers as c
left join countries as k
    on c.country_code = k.code
