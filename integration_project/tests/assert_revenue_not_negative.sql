-- Singular test: no country has negative revenue.
select * from {{ ref('revenue_by_country') }} where "Revenue" < 0
