select * from {{ ref('country_codes') }}
