with source as (
    select * from {{ source('crm', 'customers') }}
),

renamed as (
    select
        "CustomerId" as customer_id,
        "FirstName" as first_name,
        "LastName" as last_name,
        lower("Email") as email,
        "CountryCode" as country_code,
        "SignupDate" as signed_up_on
    from source
)

select * from renamed
