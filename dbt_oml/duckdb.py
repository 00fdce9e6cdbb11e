"""The dbt-duckdb plugin entry: `plugins: [{module: dbt_oml.duckdb, config: {...}}]` in a target.

dbt-duckdb instantiates `Plugin` when the adapter starts; it does nothing to the connection. Its
presence in the profile switches dbt-oml's dbt plugin (dbt_oml.plugin) on for that target, and
its `config:` holds dbt-oml's settings (as in dbt-oml.yml: namespaces, transport, ...), read by
`config.load_settings`. The dbt plugin finds the entry in the profile dbt resolved, before any
node runs; this class only has to exist, and never raises into dbt-duckdb.
"""

from __future__ import annotations

from typing import Any, Final

from dbt.adapters.duckdb.plugins import BasePlugin

#: The module name a profile's `plugins:` entry gives.
MODULE: Final = "dbt_oml.duckdb"


class Plugin(BasePlugin):
    """Inert on the DuckDB connection; see the module docstring."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        self.settings = dict(plugin_config or {})
