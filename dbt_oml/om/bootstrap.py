"""Create what OpenLineage events reference in OpenMetadata, before OM is asked to resolve them.

I/O adapter over OpenMetadataClient. Everything comes from the events themselves (namespace,
name, schema facet, job, parent run), so any openlineage-python producer can use it:

- a namespace dbt-oml *owns* (the pod-local DuckDB layer) gets a CustomDatabase service and its
  database, schema and tables written with PUT (create-or-update: a re-run corrects columns);
- a namespace someone else owns (a service OM's connectors ingest) is never created; missing
  databases, schemas and tables under it are created with POST (409 = already there = fine),
  never PUT, so ingested metadata is never overwritten;
- the CustomPipeline service named by OM's `defaultPipelineService`, and one pipeline per job,
  named the way OM's resolver looks it up.

What exists is listed once per parent (paged) and cached for the transport's lifetime, so a re-run
with nothing new costs a small constant number of requests.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt_oml.errors import ConfigError
from dbt_oml.om.client import OpenMetadataClient
from dbt_oml.om.names import check_name, fqn
from dbt_oml.om.types import om_column

logger = logging.getLogger(__name__)

STORAGE_PREFIXES = ("gs://", "s3://", "s3a://", "abfss://", "abfs://", "wasbs://", "adl://")


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


@dataclass(frozen=True, slots=True)
class TableRef:
    namespace: str
    database: str
    schema: str
    table: str


@dataclass
class ServiceMapping:
    """How namespaces map to OM database services (OM's own mapping first, then dbt-oml's)."""

    om_mapping: Mapping[str, str]
    own_mapping: Mapping[str, str]
    owned_prefixes: Sequence[str]

    def service(self, namespace: str) -> tuple[str | None, bool]:
        """(service name or None, owned?) for a namespace."""
        owned = any(namespace.startswith(p) for p in self.owned_prefixes)
        for mapping in (self.om_mapping, self.own_mapping):
            if namespace in mapping:
                return mapping[namespace], owned
            prefix = next((k for k in mapping if namespace.startswith(k)), None)
            if prefix is not None:
                return mapping[prefix], owned
        return (service_name_for(namespace), True) if owned else (None, False)


@dataclass(slots=True)
class BootstrapReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)


class Bootstrap:
    """Ensures entities for events; one instance per transport (its caches live as long)."""

    def __init__(
        self,
        client: OpenMetadataClient,
        *,
        mapping: ServiceMapping,
        pipeline_service: str,
        dry_run: bool = False,
    ) -> None:
        self.client = client
        self.mapping = mapping
        self.pipeline_service = pipeline_service
        self.dry_run = dry_run
        self._services: dict[str, dict[str, Any]] | None = None
        self._children: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self._reported: set[str] = set()

    # -- listing (cached) --------------------------------------------------------------------

    def _database_services(self) -> dict[str, dict[str, Any]]:
        if self._services is None:
            self._services = {
                s["name"]: s for s in self.client.list_all("services/databaseServices")
            }
        return self._services

    def _list(
        self, collection: str, parent_field: str, parent_fqn: str
    ) -> dict[str, dict[str, Any]]:
        key = (collection, parent_fqn)
        if key not in self._children:
            params = {parent_field: parent_fqn}
            if collection == "tables":
                params["fields"] = "columns"
            self._children[key] = {
                e["name"]: e for e in self.client.list_all(collection, params=params)
            }
        return self._children[key]

    # -- ensure ------------------------------------------------------------------------------

    def ensure(self, events: Iterable[Mapping[str, Any]]) -> BootstrapReport:
        report = BootstrapReport()
        tables: dict[TableRef, dict[str, Any]] = {}
        pipelines: set[str] = set()
        folders: set[tuple[str, tuple[str, ...]]] = set()
        for event in events:
            pipelines.add(pipeline_name(event))
            for dataset in [*(event.get("inputs") or []), *(event.get("outputs") or [])]:
                folder = _folder(dataset)
                if folder is not None:
                    folders.add(folder)
                ref = _table_ref(dataset)
                if ref is not None:
                    # the richest facet wins (an output's schema over an input's echo)
                    current = tables.get(ref)
                    if current is None or len(_columns(dataset)) > len(_columns(current)):
                        tables[ref] = dataset
        for ref, dataset in tables.items():
            try:
                self._ensure_table(ref, dataset, report)
            except ConfigError as e:
                report.problems.append(str(e))
        for namespace, path in sorted(folders):
            try:
                self._ensure_containers(namespace, path, report)
            except ConfigError as e:
                report.problems.append(str(e))
        self._ensure_pipelines(sorted(pipelines), report)
        return report

    def _ensure_containers(
        self, namespace: str, path: tuple[str, ...], report: BootstrapReport
    ) -> None:
        """A storage service and one container per folder; containers OM has (by fullPath) are
        reused, new ones are created with POST and never overwritten."""
        name = self.mapping.own_mapping.get(namespace) or service_name_for(namespace)
        key = ("storageServices", "")
        if key not in self._children:
            self._children[key] = {
                s["name"]: s for s in self.client.list_all("services/storageServices")
            }
        services = self._children[key]
        if name not in services:
            scheme = namespace.split("://", 1)[0].lower()
            kind = {
                "s3": "S3",
                "s3a": "S3",
                "gs": "GCS",
                "abfss": "ADLS",
                "abfs": "ADLS",
                "wasbs": "ADLS",
                "adl": "ADLS",
            }.get(scheme, "CustomStorage")
            service = {"name": check_name(name, kind="storage service"), "serviceType": kind}
            services[name] = self._write("PUT", "services/storageServices", service, name, report)
        containers = self._list("containers", "service", name)
        by_path = {c.get("fullPath"): c for c in containers.values()}
        parent: dict[str, Any] | None = None
        for depth in range(1, len(path) + 1):
            full_path = namespace.rstrip("/") + "/" + "/".join(path[:depth])
            found = by_path.get(full_path)
            if found is None:
                body: dict[str, Any] = {
                    "name": check_name(path[depth - 1], kind="container"),
                    "service": name,
                    "fullPath": full_path,
                }
                if parent is not None and parent.get("id"):
                    body["parent"] = {"id": parent["id"], "type": "container"}
                found = self._write("POST", "containers", body, full_path, report)
                by_path[full_path] = found
            parent = found

    def _service(self, ref: TableRef, report: BootstrapReport) -> tuple[str, bool] | None:
        name, owned = self.mapping.service(ref.namespace)
        if name is None:
            self._once(
                report,
                f"namespace {ref.namespace} maps to no OpenMetadata service: add it to "
                "namespaceToServiceMapping (OM Settings > OpenLineage) or om.services in dbt-oml",
            )
            return None
        services = self._database_services()
        if owned:
            if name not in services:
                body = {
                    "name": check_name(name, kind="service"),
                    "serviceType": "CustomDatabase",
                    "connection": {"config": {"type": "CustomDatabase"}},
                }
                self._write("PUT", "services/databaseServices", body, name, report)
                services[name] = body
            return name, True
        if name in services:
            return name, False
        folded = {s.lower(): s for s in services}
        if name.lower() in folded:
            actual = folded[name.lower()]
            self._once(
                report, f"service {name!r} is spelled {actual!r} in OpenMetadata; using {actual!r}"
            )
            return actual, False
        self._once(
            report,
            f"OpenMetadata has no database service {name!r} (namespace {ref.namespace}); "
            "dbt-oml never creates services it does not own. Fix namespaceToServiceMapping "
            f"or om.services; OM has: {', '.join(sorted(services)) or 'none'}",
        )
        return None

    def _ensure_table(
        self, ref: TableRef, dataset: Mapping[str, Any], report: BootstrapReport
    ) -> None:
        found = self._service(ref, report)
        if found is None:
            return
        service, owned = found
        method = "PUT" if owned else "POST"
        databases = self._list("databases", "service", service)
        if ref.database not in databases:
            body = {"name": check_name(ref.database, kind="database"), "service": service}
            databases[ref.database] = self._write(
                method, "databases", body, fqn(service, ref.database), report
            )
        db_fqn = fqn(service, ref.database)
        schemas = self._list("databaseSchemas", "database", db_fqn)
        if ref.schema not in schemas:
            body = {"name": check_name(ref.schema, kind="schema"), "database": db_fqn}
            schemas[ref.schema] = self._write(
                method, "databaseSchemas", body, fqn(service, ref.database, ref.schema), report
            )
        schema_fqn = fqn(service, ref.database, ref.schema)
        tables = self._list("tables", "databaseSchema", schema_fqn)
        body = _table_body(ref, dataset, schema_fqn)
        existing = tables.get(ref.table)
        table_fqn = fqn(service, ref.database, ref.schema, ref.table)
        if existing is None:
            tables[ref.table] = self._write(method, "tables", body, table_fqn, report)
        elif owned and _shape(existing) != _shape(body):
            tables[ref.table] = self._write("PUT", "tables", body, table_fqn, report, update=True)

    def _ensure_pipelines(self, names: Sequence[str], report: BootstrapReport) -> None:
        services = {s["name"] for s in self.client.list_all("services/pipelineServices")}
        if self.pipeline_service not in services:
            body = {
                "name": self.pipeline_service,
                "serviceType": "CustomPipeline",
                "connection": {"config": {"type": "CustomPipeline"}},
            }
            self._write("PUT", "services/pipelineServices", body, self.pipeline_service, report)
        existing = self._list("pipelines", "service", self.pipeline_service)
        for name in names:
            if name not in existing:
                body = {
                    "name": check_name(name, kind="pipeline"),
                    "service": self.pipeline_service,
                    "description": "dbt run (created by dbt-oml)",
                }
                existing[name] = self._write(
                    "PUT", "pipelines", body, fqn(self.pipeline_service, name), report
                )

    def _write(
        self,
        method: str,
        collection: str,
        body: dict[str, Any],
        what: str,
        report: BootstrapReport,
        *,
        update: bool = False,
    ) -> dict[str, Any]:
        report.plan.append(f"{method} /api/v1/{collection} {what}")
        if self.dry_run:
            return body
        if method == "PUT":
            result = self.client.put(collection, body)
        else:
            result = self.client.create(collection, body) or body  # 409: someone made it first
        (report.updated if update else report.created).append(what)
        return result

    def _once(self, report: BootstrapReport, message: str) -> None:
        if message not in self._reported:
            self._reported.add(message)
            logger.warning("%s", message)
        report.problems.append(message)


def _table_ref(dataset: Mapping[str, Any]) -> TableRef | None:
    namespace, name = str(dataset.get("namespace", "")), str(dataset.get("name", ""))
    if namespace.lower().startswith(STORAGE_PREFIXES) or namespace == "file":
        return None  # storage and local files are not tables
    parts = name.split(".")
    if len(parts) < 3:
        return None
    return TableRef(namespace, parts[-3], parts[-2], parts[-1])


def _folder(dataset: Mapping[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """(namespace, folder path) of an object-storage dataset: its name without the file part."""
    namespace, name = str(dataset.get("namespace", "")), str(dataset.get("name", ""))
    if not namespace.lower().startswith(STORAGE_PREFIXES):
        return None
    parts = [p for p in name.strip("/").split("/") if p]
    if parts and ("." in parts[-1] or any(c in parts[-1] for c in "*?[")):
        parts = parts[:-1]  # a file or a glob: its folder is the container
    return (namespace, tuple(parts)) if parts else None


def _columns(dataset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((((dataset.get("facets") or {}).get("schema") or {}).get("fields")) or [])


def _table_body(ref: TableRef, dataset: Mapping[str, Any], schema_fqn: str) -> dict[str, Any]:
    columns = [om_column(f["name"], f.get("type"), f.get("description")) for f in _columns(dataset)]
    body: dict[str, Any] = {
        "name": check_name(ref.table, kind="table"),
        "databaseSchema": schema_fqn,
        "tableType": "Regular",
        "columns": columns,
    }
    description = ((dataset.get("facets") or {}).get("documentation") or {}).get("description")
    if description:
        body["description"] = description
    return body


def _shape(table: Mapping[str, Any]) -> tuple[Any, ...]:
    keys = ("name", "dataType", "dataLength", "precision", "scale", "arrayDataType", "description")
    columns = tuple(tuple(c.get(k) for k in keys) for c in table.get("columns") or [])
    return (columns, table.get("description"))
