"""dbt-oml: OpenLineage for dbt(-duckdb) with per-dataset namespaces, for OpenMetadata and more.

Importing the package is cheap and inert: it registers no transport and reads no configuration.
dbt-core looks for a `plugins` list in every installed `dbt_*` module; ours is loaded only when
dbt asks for it, and stays inert unless switched on (see dbt_oml.plugin).
"""

from __future__ import annotations

from typing import Any

from dbt_oml.errors import DbtOmlError
from dbt_oml.version import __version__

__all__ = ["DbtOmlError", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "plugins":
        try:
            from dbt_oml.plugin import plugins
        except Exception:  # noqa: BLE001 - a dbt without the plugin API: no plugin, dbt runs on
            return []
        return plugins
    raise AttributeError(f"module 'dbt_oml' has no attribute {name!r}")
