{# Use custom schema names as they are (staging, core, marts), not <target_schema>_<custom>. #}
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
