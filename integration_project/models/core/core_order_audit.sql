-- Fails on purpose with `--vars '{fail_model: true}'` (its child is then skipped).
{% if var('fail_model') %}
select order_id, this_column_does_not_exist from {{ ref('core_orders') }}
{% else %}
select order_id, status, order_amount - paid_amount as open_amount
from {{ ref('core_orders') }}
{% endif %}
