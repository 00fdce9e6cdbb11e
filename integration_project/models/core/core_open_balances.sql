select sum(open_amount) as open_amount_total, count(*) as open_orders
from {{ ref('core_order_audit') }}
where open_amount > 0
