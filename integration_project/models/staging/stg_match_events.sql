-- Nested JSON from files (the `api` source, external_location): a struct path three fields deep,
-- and UNNEST of a list of structs, one row per match event.
with landed as (
    select * from {{ source('api', 'matches') }}
),

events as (
    select
        m._meta.params.fixture as fixture_id,
        m.response.teams.home.name as home_team,
        m.season,
        unnest(m.events) as event
    from landed as m
)

select
    fixture_id,
    home_team,
    season,
    event.minute as minute,
    event['kind'] as event_kind
from events
