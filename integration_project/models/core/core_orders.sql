{{ config(materialized='incremental', unique_key='order_id', incremental_strategy='delete+insert',
          on_schema_change='append_new_columns', tags=['core']) }}

with orders as (
    select * from {{ ref('stg_orders') }}
),

payments as (
    select
        order_id,
        sum(amount) as paid_amount,
        count(*) as payment_count
    from {{ ref('stg_payments') }}
    group by order_id
)

select
    o.order_id,
    o.customer_id,
    o.order_date,
    o.status,
    cast(o.amount as decimal(12, 2)) as order_amount,
    cast(coalesce(p.paid_amount, 0) as decimal(12, 2)) as paid_amount,
    coalesce(p.payment_count, 0) as payment_count,
    case
        when o.status = 'returned' then 'refund'
        when coalesce(p.paid_amount, 0) >= o.amount then 'paid'
        else 'open'
    end as payment_state
from orders as o
left join payments as p
    on o.order_id = p.order_id
{% if is_incremental() %}
where o.order_date >= (select coalesce(max(order_date), date '1900-01-01') from {{ this }})
{% endif %}
