"""Which OpenMetadata database service a namespace maps to, which ones dbt-oml owns, and the
pipeline name OM looks up for an event."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def service_name_for(namespace: str) -> str:
    """A readable service name for a namespace dbt-oml owns.

    >>> service_name_for("duckdb://my_dbt"), service_name_for("duckdb:///tmp/pod/warehouse.duckdb")
    ('duckdb_my_dbt', 'duckdb_tmp_pod_warehouse_duckdb')
    """
    scheme, _, rest = namespace.partition("://")
    body = re.sub(r"[^A-Za-z0-9_]+", "_", rest).strip("_")
    return f"{scheme}_{body}" if body else scheme


def pipeline_name(event: Mapping[str, Any]) -> str:
    """The pipeline OM looks up for an event: from the parent run's job, else the event's job.

    >>> pipeline_name({"job": {"namespace": "dbt", "name": "dbt-run-shop"}, "run": {}})
    'dbt-dbt-run-shop'
    """
    parent = ((event.get("run") or {}).get("facets") or {}).get("parent") or {}
    job: Mapping[str, Any] = (
        parent["job"] if (parent.get("job") or {}).get("name") else event["job"]
    )
    namespace = str(job.get("namespace") or "")
    clean = re.sub(r"[^a-zA-Z0-9_-]", "_", namespace)
    return f"{clean}-{job['name']}" if namespace else str(job["name"])


#: The first words of the description of every database service dbt-oml creates: its mark of
#: ownership. A service without it (ingested, or made by a person) is never written with PUT.
MANAGED_MARK = "Managed by dbt-oml"


@dataclass
class ServiceMapping:
    """How namespaces map to OM database services (OM's own mapping first, then dbt-oml's)."""

    om_mapping: Mapping[str, str]
    own_mapping: Mapping[str, str]
    owned_prefixes: Sequence[str]

    def service(self, namespace: str) -> tuple[str | None, bool, bool]:
        """(service name or None, under an owned prefix?, named by a mapping?) for a namespace."""
        owned = any(namespace.startswith(p) for p in self.owned_prefixes)
        for mapping in (self.om_mapping, self.own_mapping):
            if namespace in mapping:
                return mapping[namespace], owned, True
            prefix = next((k for k in mapping if namespace.startswith(k)), None)
            if prefix is not None:
                return mapping[prefix], owned, True
        return (service_name_for(namespace), True, False) if owned else (None, False, False)


def is_managed(service: Mapping[str, Any]) -> bool:
    """Whether dbt-oml created this database service (its description carries the mark)."""
    return str(service.get("description") or "").startswith(MANAGED_MARK)
