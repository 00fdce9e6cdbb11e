{{ config(alias='RevenueByCountry', tags=['mart']) }}

select
    c.country_name as "CountryName",
    c.region as "Region",
    sum(o.order_amount) as "Revenue",
    count(distinct o.customer_id) as "Customers"
from {{ ref('core_orders') }} as o
inner join {{ ref('core_customers') }} as c
    on o.customer_id = c.customer_id
group by all
