"""dbt-oml's settings and the one function that reads them (`load_settings`).

The base layer under everything but the errors: `load_settings` (loader.py) is the only code in
dbt_oml that reads dbt-oml.yml or DBT_OML_* variables; `Settings` (settings.py) is what it returns;
values.py parses, relay_section.py checks `relay:`, environment.py reads dbt-ol's and OM_*
variables, ends.py finds the relay's two ends. It must not import any other part of dbt_oml:
only dbt_oml.errors, dbt_oml.redaction, dbt_oml.runs, dbt_oml.version and third-party libraries.
"""

from __future__ import annotations

from dbt_oml.config.ends import (
    RelayEnds,
    Sourced,
    find_transport,
    openlineage_transport,
    relay_ends,
)
from dbt_oml.config.environment import COMPAT_ENV, OM_ENV, orchestrator, secret_values
from dbt_oml.config.loader import KEYS, load_settings
from dbt_oml.config.relay_section import RELAY_KEYS, RELAY_SCALARS, relay_env_name
from dbt_oml.config.settings import DEFAULT_CONFIG_FILE, Settings
from dbt_oml.config.values import TRUTHY, Parser, env_name, flag_name, truthy
from dbt_oml.runs import JobNaming, Orchestrator, RunRef

__all__ = [
    "COMPAT_ENV",
    "DEFAULT_CONFIG_FILE",
    "KEYS",
    "OM_ENV",
    "RELAY_KEYS",
    "RELAY_SCALARS",
    "TRUTHY",
    "JobNaming",
    "Orchestrator",
    "Parser",
    "RelayEnds",
    "RunRef",
    "Settings",
    "Sourced",
    "env_name",
    "find_transport",
    "flag_name",
    "load_settings",
    "openlineage_transport",
    "orchestrator",
    "relay_ends",
    "relay_env_name",
    "secret_values",
    "truthy",
]
