{#
  Plays the source server: creates and fills the tables that the `crm` sources read, in the
  attached `crm` catalog (a DuckDB file for target `local`, MariaDB for target `servers`), so a
  fresh checkout builds with no outside data. Statements are idempotent.
#}
{% macro create_source_tables() %}
  {% if execute %}
    {% set s = 'crm.' ~ source_schema() %}
    {% if target.name != 'servers' %}
      {% do run_query('create schema if not exists ' ~ s) %}
    {% endif %}
    {% for t in ['"Customers"', 'order_lines_v2', 'payments'] %}
      {% do run_query('drop table if exists ' ~ s ~ '.' ~ t) %}
    {% endfor %}
    {% do run_query('create table ' ~ s ~ '."Customers" ("CustomerId" integer, "FirstName" varchar(50), "LastName" varchar(50), "Email" varchar, "CountryCode" varchar(2), "SignupDate" date)') %}
    {% do run_query("insert into " ~ s ~ ".\"Customers\" values
        (1, 'Ada', 'Lovelace', 'ada@example.com', 'GB', '2024-01-03'),
        (2, 'Grace', 'Hopper', 'grace@example.com', 'US', '2024-02-11'),
        (3, 'Alan', 'Turing', 'alan@example.com', 'GB', '2024-03-20'),
        (4, 'Edsger', 'Dijkstra', null, 'NL', '2024-04-01'),
        (5, 'Barbara', 'Liskov', 'barbara@example.com', 'US', '2024-05-15')") %}
    {% do run_query('create table ' ~ s ~ '.order_lines_v2 (id integer, customer_id integer, ordered_at timestamp, status varchar(20), amount_cents bigint)') %}
    {% do run_query("insert into " ~ s ~ ".order_lines_v2 values
        (101, 1, '2024-06-01 10:00:00', 'completed', 2500),
        (102, 1, '2024-06-03 12:30:00', 'returned', 1200),
        (103, 2, '2024-06-04 09:15:00', 'completed', 9900),
        (104, 3, '2024-06-05 16:45:00', 'completed', 450),
        (105, 5, '2024-06-07 08:00:00', 'placed', 3000),
        (106, 2, '2024-06-08 11:11:00', 'completed', 1999)") %}
    {% do run_query('create table ' ~ s ~ '.payments (payment_id integer, order_id integer, method varchar(20), amount_cents bigint)') %}
    {% do run_query("insert into " ~ s ~ ".payments values
        (1001, 101, 'card', 2500), (1002, 102, 'card', 1200), (1003, 103, 'transfer', 9900),
        (1004, 104, 'card', 450), (1005, 106, 'voucher', 1000), (1006, 106, 'card', 999)") %}
  {% endif %}
  select 1
{% endmacro %}

{% macro source_schema() %}{{ return('dbt_oml_crm' if target.name == 'servers' else 'sales') }}{% endmacro %}
