with source as (
    select * from {{ source('crm', 'orders') }}
),

renamed as (
    select
        id as order_id,
        customer_id,
        cast(ordered_at as date) as order_date,
        status,
        amount_cents / 100.0 as amount
    from source
)

select * from renamed
