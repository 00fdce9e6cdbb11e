{#
  Plays the API loader: lands a football API's fixtures as newline-delimited JSON, one folder per
  season (hive partitioning: data/matches/season=2024/data_0.json), as loaders land them. The
  `api` source reads them through `external_location` (no table, no catalog entry): nested structs
  and a list of structs. DuckDB's JSON writer cannot partition, so the JSON lines (to_json output:
  no raw tab, newline or quote to escape) go through the CSV writer, unquoted. Idempotent. Only
  when a model reading them runs: the path is relative to where dbt runs, like data/web_events.
#}
{% macro land_api_json() %}
  {% if execute and 'model.jaffle_oml.stg_match_events' in selected_resources %}
    {% do run_query("copy (
        select season, to_json(struct_pack(_meta := _meta, response := response, events := events)) as line
        from (values
          (2024,
           {'source': 'api-football', 'params': {'fixture': 101, 'league': 'L1'}},
           {'teams': {'home': {'id': 1, 'name': 'Ada FC'}, 'away': {'id': 3, 'name': 'Turing Town'}},
            'goals': {'home': 2, 'away': 1}},
           [{'minute': 12, 'kind': 'goal'}, {'minute': 67, 'kind': 'card'}]),
          (2024,
           {'source': 'api-football', 'params': {'fixture': 102, 'league': 'L1'}},
           {'teams': {'home': {'id': 2, 'name': 'Hopper Rovers'}, 'away': {'id': 1, 'name': 'Ada FC'}},
            'goals': {'home': 0, 'away': 0}},
           [{'minute': 30, 'kind': 'card'}]),
          (2025,
           {'source': 'api-football', 'params': {'fixture': 201, 'league': 'L1'}},
           {'teams': {'home': {'id': 3, 'name': 'Turing Town'}, 'away': {'id': 2, 'name': 'Hopper Rovers'}},
            'goals': {'home': 1, 'away': 3}},
           [{'minute': 5, 'kind': 'goal'}, {'minute': 88, 'kind': 'goal'}])
        ) as m(season, _meta, response, events)
      ) to 'data/matches' (format csv, header false, quote '', escape '', delimiter '\t',
                           partition_by (season), file_extension 'json', overwrite_or_ignore true)") %}
  {% endif %}
  select 1
{% endmacro %}
