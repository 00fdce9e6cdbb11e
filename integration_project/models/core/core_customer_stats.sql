select
    customer_id,
    count(*) as order_count,
    sum(case when payment_state = 'paid' then order_amount else 0 end) as lifetime_value,
    max(order_date) as last_order_date,
    rank() over (order by sum(order_amount) desc) as value_rank
from {{ ref('core_orders') }}
where status <> 'placed'
group by customer_id
