{% snapshot customers_snapshot %}
{{ config(unique_key='customer_id', strategy='check', check_cols=['email', 'country_code']) }}
select * from {{ ref('stg_customers') }}
{% endsnapshot %}
