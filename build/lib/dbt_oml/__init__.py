"""dbt-oml: OpenLineage for dbt(-duckdb) with per-dataset namespaces, for OpenMetadata and more.

Importing the package is cheap and inert: it registers no transport and reads no configuration.
"""

from __future__ import annotations

__version__ = "0.1.0"

from dbt_oml.errors import DbtOmlError

__all__ = ["DbtOmlError", "__version__"]
