{{ config(tags=['mart']) }}

select
    o.order_id,
    c.customer_key,
    o.order_date,
    o.order_amount,
    o.paid_amount,
    o.payment_state,
    row_number() over (partition by o.customer_id order by o.order_date) as customer_order_seq
from {{ ref('core_orders') }} as o
inner join {{ ref('core_customers') }} as c
    on o.customer_id = c.customer_id
