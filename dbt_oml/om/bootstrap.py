"""Create what OpenLineage events reference in OpenMetadata, before OM is asked to resolve them.

I/O adapter over OpenMetadataClient. Everything comes from the events themselves (namespace,
name, schema facet, job, parent run), so any openlineage-python producer can use it:

- a namespace dbt-oml *owns* (an owned prefix such as `duckdb://`, mapped to a service that
  dbt-oml created, marked in its description) gets a CustomDatabase service and its database,
  schema and tables written with PUT. Only an authoritative schema (catalog.json or the
  warehouse's own columns: the `dbt_oml_schema` facet says `complete`) may change a table's
  column list; a partial one (declared columns) may add columns and types, never remove or blank
  them;
- a namespace that maps to a service dbt-oml did not create is foreign, whatever its scheme: the
  service is never created (a name that differs only in case uses OM's spelling); missing
  databases, schemas and tables under it are created with POST (409 = already there = fine),
  never PUT, so ingested metadata is never overwritten;
- the CustomPipeline service named by OM's `defaultPipelineService`, and one pipeline per job,
  named the way OM's resolver looks it up.

What exists is listed once per parent (paged) and cached for the transport's lifetime, so a re-run
with nothing new costs a small constant number of requests.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from dbt_oml.errors import ConfigError, TerminalDeliveryError
from dbt_oml.om.client import OpenMetadataClient
from dbt_oml.om.names import check_name, fqn
from dbt_oml.om.prepare import STORAGE_PREFIXES
from dbt_oml.om.services import (
    MANAGED_MARK,
    ServiceMapping,
    is_managed,
    pipeline_name,
    service_name_for,
)
from dbt_oml.om.tables import TableRef, complete, rank, table_body, table_ref, update

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class BootstrapReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    #: namespace -> the OM database service its tables live in (as OM spells it)
    services: dict[str, str] = field(default_factory=dict)
    #: (namespace, name) of datasets whose table exists in OM after bootstrap
    ensured: set[tuple[str, str]] = field(default_factory=set)
    #: (namespace, name) -> why OM cannot hold that dataset's table (a 400, a name it refuses)
    refused: dict[tuple[str, str], str] = field(default_factory=dict)


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
        #: (namespace, name) -> table of the datasets ensured (their `hierarchy` facet read)
        self._refs: dict[tuple[str, str], TableRef] = {}
        #: what a table listing asks for (om.metadata.writer adds owners and the data model)
        self.table_fields = "columns,tags"

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
                params["fields"] = self.table_fields
            self._children[key] = {
                e["name"]: e for e in self.client.list_all(collection, params=params)
            }
        return self._children[key]

    def listed(self, collection: str, parent_fqn: str) -> dict[str, dict[str, Any]]:
        """What bootstrap has listed or written under a parent, by name (never a request)."""
        return self._children.get((collection, parent_fqn), {})

    def owned_table(self, namespace: str, name: str) -> tuple[str, dict[str, Any]] | None:
        """(FQN, entity) of the table OM holds for a dataset of an owned service; None when the
        dataset is foreign, no table, or not in OM. Reads only (listings, cached).

        In a dry run, a table bootstrap would create is its planned body (no `id`).
        """
        ref = self._refs.get((namespace, name)) or table_ref({"namespace": namespace, "name": name})
        service = self._owned_service(ref.namespace) if ref is not None else None
        if ref is None or service is None:
            return None
        if ref.database not in self._list("databases", "service", service):
            return None
        db_fqn = fqn(service, ref.database)
        if ref.schema not in self._list("databaseSchemas", "database", db_fqn):
            return None
        schema_fqn = fqn(service, ref.database, ref.schema)
        found = self._list("tables", "databaseSchema", schema_fqn).get(ref.table)
        table_fqn = fqn(service, ref.database, ref.schema, ref.table)
        return (table_fqn, found) if found is not None else None

    def reload_table(self, table_fqn: str, entity: dict[str, Any]) -> dict[str, Any]:
        """Re-read a table this run wrote (a PUT's answer may lack fields), in the cache too."""
        fresh = self.client.get_by_name("tables", table_fqn, fields=self.table_fields)
        if fresh is not None and not self.dry_run:
            entity.clear()
            entity.update(fresh)  # in place: the listing cache holds this dict
        return entity

    def _owned_service(self, namespace: str) -> str | None:
        """The service of a namespace dbt-oml owns, as OM spells it (None: foreign, or none)."""
        name, owned_prefix, _ = self.mapping.service(namespace)
        if name is None or not owned_prefix:
            return None
        services = self._database_services()
        actual = name if name in services else {s.lower(): s for s in services}.get(name.lower())
        if actual is None:
            return None
        return actual if is_managed(services[actual]) else None

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
                ref = table_ref(dataset)
                if ref is not None:
                    self._refs[(ref.namespace, str(dataset.get("name")))] = ref
                    # the best schema wins: authoritative over partial, then the longer one
                    current = tables.get(ref)
                    if current is None or rank(dataset) > rank(current):
                        tables[ref] = dataset
        self._ensure_tables(tables, report)
        for namespace, path in sorted(folders):
            try:
                self._ensure_containers(namespace, path, report)
            except ConfigError as e:
                self._once(report, str(e))
        if pipelines:
            self._ensure_pipelines(sorted(pipelines), report)
        return report

    def _ensure_tables(
        self, tables: Mapping[TableRef, Mapping[str, Any]], report: BootstrapReport
    ) -> None:
        """Each table, on its own: a 400 or a name OM refuses costs that table's events only."""
        for ref, dataset in tables.items():
            key = (ref.namespace, str(dataset.get("name")))
            try:
                if self._ensure_table(ref, dataset, report):
                    report.ensured.add(key)
            except ConfigError as e:  # a name OM would refuse
                self._once(report, str(e))
                report.refused[key] = str(e)
            except TerminalDeliveryError as e:
                if e.status != HTTPStatus.BAD_REQUEST:
                    raise  # 401, 403: every event is concerned, not this table's
                report.refused[key] = f"OpenMetadata refused its table: {e.reason}"

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
        """(service as OM spells it, owned by dbt-oml?) or None when there is none to use."""
        name, owned_prefix, _ = self.mapping.service(ref.namespace)
        if name is None:
            self._once(
                report,
                f"namespace {ref.namespace} maps to no OpenMetadata service: add it to "
                "namespaceToServiceMapping (OM Settings > OpenLineage) or om.services in dbt-oml",
                level=logging.INFO,
            )
            return None
        services = self._database_services()
        actual = name if name in services else {s.lower(): s for s in services}.get(name.lower())
        if actual is not None and actual != name:
            self._once(
                report,
                f"service {name!r} is spelled {actual!r} in OpenMetadata; using {actual!r} "
                "(fix the spelling in the mapping: OM 1.12 looks mapped names up exactly)",
                level=logging.WARNING,
            )
        if actual is None:
            if not owned_prefix:
                self._once(
                    report,
                    f"OpenMetadata has no database service {name!r} (namespace {ref.namespace}); "
                    "dbt-oml never creates services it does not own. Fix namespaceToServiceMapping"
                    f" or om.services; OM has: {', '.join(sorted(services)) or 'none'}",
                )
                return None
            self._create_service(name, ref.namespace, report)
            report.services[ref.namespace] = name
            return name, True
        # the mark alone makes a service dbt-oml's: an unmarked one is foreign, even when it is
        # a CustomDatabase named exactly as dbt-oml would have named it
        owned = owned_prefix and is_managed(services[actual])
        if owned_prefix and not owned:
            self._once(
                report,
                f"namespace {ref.namespace} maps to service {actual!r}, which dbt-oml did not "
                "create: its tables are treated as foreign (created if missing, never overwritten)",
                level=logging.INFO,
            )
        report.services[ref.namespace] = actual
        return actual, owned

    def _create_service(self, name: str, namespace: str, report: BootstrapReport) -> None:
        body = {
            "name": check_name(name, kind="service"),
            "serviceType": "CustomDatabase",
            "description": f"{MANAGED_MARK} for OpenLineage namespace {namespace}: the tables "
            "of the dbt layer that lives only while dbt runs. dbt-oml rewrites them on each run.",
            "connection": {"config": {"type": "CustomDatabase"}},
        }
        self._write("PUT", "services/databaseServices", body, name, report)
        self._database_services()[name] = body

    def _ensure_table(
        self, ref: TableRef, dataset: Mapping[str, Any], report: BootstrapReport
    ) -> bool:
        """Make the table exist (owned: match an authoritative schema); True when it does."""
        found = self._service(ref, report)
        if found is None:
            return False
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
        body = table_body(ref, dataset, schema_fqn)
        existing = tables.get(ref.table)
        table_fqn = fqn(service, ref.database, ref.schema, ref.table)
        if existing is None:
            tables[ref.table] = self._write(method, "tables", body, table_fqn, report)
            return True
        if not owned:
            return True
        changed = update(existing, body, authoritative=complete(dataset))
        if changed is not None:
            tables[ref.table] = self._write(
                "PUT", "tables", changed, table_fqn, report, update=True
            )
        return True

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

    def _once(self, report: BootstrapReport, message: str, *, level: int = 0) -> None:
        """An advisory (level given) is logged once per transport; a problem is reported once."""
        if message in self._reported:
            return
        self._reported.add(message)
        if level:
            logger.log(level, "%s", message)
        else:
            report.problems.append(message)


def _folder(dataset: Mapping[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """(namespace, folder path) of an object-storage dataset: its name without the file part."""
    namespace, name = str(dataset.get("namespace", "")), str(dataset.get("name", ""))
    if not namespace.lower().startswith(STORAGE_PREFIXES):
        return None
    parts = [p for p in name.strip("/").split("/") if p]
    if parts and ("." in parts[-1] or any(c in parts[-1] for c in "*?[")):
        parts = parts[:-1]  # a file or a glob: its folder is the container
    return (namespace, tuple(parts)) if parts else None


__all__ = ["Bootstrap", "BootstrapReport", "ServiceMapping", "pipeline_name", "service_name_for"]
