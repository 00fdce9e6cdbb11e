"""dbt-oml's settings and the one function that reads them (`load_settings`).

The base layer under everything but the errors: `load_settings` (loader.py) is the only code in
dbt_oml that reads dbt-oml.yml or DBT_OML_* variables; `Settings` (settings.py) is what it returns;
values.py parses (outbox_url.py: a local outbox, or a durable one's URL), relay_section.py
checks `relay:`, environment.py reads dbt-ol's and OM_* variables, openlineage.py is the one
reader of openlineage-python's own configuration (its file and OPENLINEAGE__* variables),
files.py reads the YAML files, ends.py finds the relay's two ends. It must not import any other
part of dbt_oml: only dbt_oml.errors, dbt_oml.redaction, dbt_oml.runs, dbt_oml.version and
third-party libraries.
"""

from __future__ import annotations

from dbt_oml.config.ends import (
    RelayEnds,
    find_transport,
    plan_settings,
    relay_ends,
)
from dbt_oml.config.environment import COMPAT_ENV, OM_ENV, orchestrator, secret_values
from dbt_oml.config.keys import KEYS, TABLE, Key
from dbt_oml.config.loader import load_settings
from dbt_oml.config.openlineage import OpenLineageConfig, Sourced
from dbt_oml.config.origin import describe_transport, events_destination
from dbt_oml.config.relay_section import RELAY_KEYS, RELAY_SCALARS, relay_env_name
from dbt_oml.config.settings import DEFAULT_CONFIG_FILE, Settings
from dbt_oml.config.values import TRUTHY, Parser, env_name, flag_name, truthy
from dbt_oml.runs import JobNaming, Orchestrator, RunRef

__all__ = [
    "COMPAT_ENV",
    "DEFAULT_CONFIG_FILE",
    "KEYS",
    "TABLE",
    "Key",
    "OM_ENV",
    "RELAY_KEYS",
    "RELAY_SCALARS",
    "TRUTHY",
    "JobNaming",
    "OpenLineageConfig",
    "Orchestrator",
    "Parser",
    "RelayEnds",
    "RunRef",
    "Settings",
    "Sourced",
    "describe_transport",
    "env_name",
    "events_destination",
    "find_transport",
    "flag_name",
    "load_settings",
    "orchestrator",
    "plan_settings",
    "relay_ends",
    "relay_env_name",
    "secret_values",
    "truthy",
]
