"""OM's OpenLineage mapper and resolver, per version, for the OM stand-in (ref §1.5, §2).

- Datasets resolve to tables only (containers, ref §2.3, are not resolved: unverified for 2.0.x),
  never from a storage or `file` namespace. Auto-create is not modelled: it is what OM on
  PostgreSQL does (bug #27548, ref §2.7), the dataset stays unresolved.
- 1.12 (resolver 4a4ca905): symlinks[0] name else name, last TWO segments; mapped service →
  `S.%.%<schema>.<table>` only; else datasource facet D → `D.%.<schema>.<table>` only; else
  `%<schema>.<table>`. Mapping: exact key, else the first key k with `ns.startswith(k)` or
  `k.startswith(ns)`.
- 2.0 (the name normaliser, PR #30272): every symlink then the name, normalised; last THREE
  segments; six lookups (ref §2.2). Mapping: exact key, else the first key k with
  `ns.startswith(k)`.
- LIKE: `%` is a wildcard; `_` is taken literally here (SQL would let it match any character).
  Candidates are tried in FQN order; all comparisons are case-sensitive.
- Column lineage: 1.12 reads only `outputFacets.columnLineage`; 2.0 reads `outputFacets` then
  `facets`. Server-side filtering of ref §2.5. One edge per (from, to); a post replaces its
  whole `lineageDetails` (ref §2.8).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from tests.support.fakes.om_rules import quote

STORAGE_PREFIXES = ("gs://", "s3://", "s3a://", "abfss://", "abfs://", "wasbs://", "adl://")
EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")


class MapperError(Exception):
    """What OM's mapper throws for an event (scripted with `FakeOpenMetadata.fail_events`)."""


def like(pattern: str, value: str) -> bool:
    """SQL LIKE, case-sensitive; `%` is the only wildcard (`_` is literal, see module doc)."""
    regex = ".*".join(re.escape(piece) for piece in pattern.split("%"))
    return re.fullmatch(regex, value, flags=re.DOTALL) is not None


def never_a_table(namespace: str) -> bool:
    return (
        namespace.lower().startswith(STORAGE_PREFIXES)
        or namespace.split(":", maxsplit=1)[0] == "file"
    )


def normalise(name: str) -> list[str] | None:
    """OpenLineageDatasetNameNormalizer (2.0): a name in dot form, as its parts; None if
    unparsable (ref §2.2)."""
    if not name:
        return None
    glue = re.fullmatch(r"table/([^/]+)/([^/]+)", name)
    if glue:
        return [glue.group(1), glue.group(2)]
    hive = re.search(r"(?:^|/)([^/]+)\.db/([^/]+)/?$", name)
    if hive:
        return [hive.group(1), hive.group(2)]
    if "/" in name:
        segments = name.split("/")
        if "." not in name and 2 <= len(segments) <= 3 and all(segments):
            return segments
        return None
    parts = [p for p in name.split(".") if p]
    return parts if len(parts) >= 2 else None


class Resolver:
    """Dataset → table, as OM `version` does it."""

    def __init__(self, version: str, settings: dict[str, Any], tables: dict[str, Any]) -> None:
        self.old = version.startswith("1.")
        self.mapping: dict[str, str] = dict(settings.get("namespaceToServiceMapping") or {})
        self.tables = tables
        self.fqns = sorted(tables)

    def service(self, namespace: str) -> str | None:
        if namespace in self.mapping:
            return self.mapping[namespace]
        for key, service in self.mapping.items():  # map order: the first match wins
            if namespace.startswith(key) or (self.old and key.startswith(namespace)):
                return service
        return None

    def _first(self, pattern: str) -> dict[str, Any] | None:
        fqn = next((f for f in self.fqns if like(pattern, f)), None)
        return None if fqn is None else self.tables[fqn]

    def table(self, dataset: dict[str, Any]) -> dict[str, Any] | None:
        namespace, name = dataset.get("namespace") or "", dataset.get("name") or ""
        if never_a_table(namespace):
            return None
        facets = dataset.get("facets") or {}
        identifiers = [
            i for i in (facets.get("symlinks") or {}).get("identifiers") or [] if i.get("name")
        ]
        source = (facets.get("datasource") or {}).get("name")
        mapped = self.service(namespace)
        if self.old:
            parts = (identifiers[0]["name"] if identifiers else name).split(".")
            if len(parts) < 2:
                return None
            schema, table = parts[-2], parts[-1]
            if mapped:
                return self._first(f"{mapped}.%.%{schema}.{table}")
            if source:
                return self._first(f"{source}.%.{schema}.{table}")
            return self._first(f"%{schema}.{table}")
        names = list(dict.fromkeys([*(i["name"] for i in identifiers), name]))
        for candidate in names:
            parts = normalise(candidate)
            if parts is None:
                continue
            db = parts[-3] if len(parts) >= 3 else None
            schema, table = parts[-2], parts[-1]
            patterns = [
                f"{mapped}.{db}.{schema}.{table}" if mapped and db else None,
                f"{mapped}.%.%{schema}.{table}" if mapped else None,
                f"{source}.{db}.{schema}.{table}" if source and db else None,
                f"%{db}.{schema}.{table}" if db else None,
                f"{source}.%.{schema}.{table}" if source else None,
                f"%{schema}.{table}",
            ]
            for pattern in patterns:
                found = self._first(pattern) if pattern else None
                if found is not None:
                    return found
        return None


def column_fqns(table: dict[str, Any]) -> set[str]:
    out: set[str] = set()

    def walk(prefix: str, columns: list[dict[str, Any]]) -> None:
        for column in columns:
            fqn = column.get("fullyQualifiedName") or f"{prefix}.{quote(column['name'])}"
            out.add(fqn)
            walk(fqn, column.get("children") or [])

    walk(table["fullyQualifiedName"], table.get("columns") or [])
    return out


def server_filter(
    columns: list[dict[str, Any]], source: dict[str, Any], target: dict[str, Any]
) -> list[dict[str, Any]]:
    """LineageRepository.validateLineageDetails (lenient form): unknown columns are dropped, the
    edge stays (ref §2.5)."""
    to_ok, from_ok = column_fqns(target), column_fqns(source)
    kept = []
    for mapping in columns:
        if mapping.get("toColumn") not in to_ok:
            continue
        froms = [c for c in mapping.get("fromColumns") or [] if c in from_ok]
        if froms:
            kept.append({**mapping, "fromColumns": froms})
    return kept


class Mapper:
    """OpenLineageMapper: one event → edges written through `write(source, target, details)`."""

    def __init__(
        self,
        *,
        version: str,
        settings: dict[str, Any],
        entities: dict[str, dict[str, Any]],
        principal: str,
        write: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], None],
        fail: Callable[[dict[str, Any]], str | None] | None = None,
    ) -> None:
        self.version, self.settings, self.entities = version, settings, entities
        self.principal, self.write, self.fail = principal, write, fail
        self.resolver = Resolver(version, settings, entities["table"])

    def allowed_types(self) -> set[str]:
        chosen = self.settings.get("eventTypeFilter")
        if chosen is None:
            return {"COMPLETE"}
        if not chosen:  # 1.12.0's mapper: an empty filter lets nothing through; later: COMPLETE
            return set() if self.version.startswith("1.") else {"COMPLETE"}
        return set(chosen)

    def apply(self, event: dict[str, Any]) -> int:
        """Edges written for this event (0 = skipped); MapperError when the mapper throws."""
        reason = self.fail(event) if self.fail else None
        if reason is not None:
            raise MapperError(reason)
        if event.get("eventType", "COMPLETE") not in self.allowed_types():
            return 0
        inputs = [(d, self.resolver.table(d)) for d in event.get("inputs") or []]
        outputs = [(d, self.resolver.table(d)) for d in event.get("outputs") or []]
        resolved_in = [(d, t) for d, t in inputs if t is not None]
        resolved_out = [(d, t) for d, t in outputs if t is not None]
        if not resolved_in or not resolved_out:
            return 0
        by_key = {f"{d.get('namespace')}/{d.get('name')}": t for d, t in resolved_in}
        pipeline = self.pipeline(event)
        job, run = event["job"], event["run"]
        written = 0
        for out_ds, out_table in resolved_out:
            mappings = self._column_lineage(out_ds, out_table, by_key)
            for _, in_table in resolved_in:
                prefix = in_table["fullyQualifiedName"] + "."
                mine = [
                    {**m, "fromColumns": [c for c in m["fromColumns"] if c.startswith(prefix)]}
                    for m in mappings
                ]
                columns = server_filter([m for m in mine if m["fromColumns"]], in_table, out_table)
                now = int(time.time() * 1000)
                details = {
                    "source": "OpenLineage",
                    "description": "Lineage from OpenLineage event for job: "
                    f"{job['namespace']}/{job['name']} (run: {run['runId']})",
                    "pipeline": _ref(pipeline, "pipeline") if pipeline else None,
                    "sqlQuery": ((job.get("facets") or {}).get("sql") or {}).get("query"),
                    "columnsLineage": columns or None,
                    "createdAt": now,
                    "createdBy": self.principal,
                    "updatedAt": now,
                    "updatedBy": self.principal,
                }
                try:
                    self.write(in_table, out_table, details)
                except Exception:  # noqa: BLE001, S112 - OM logs a failed addLineage and goes on
                    continue
                written += 1
        return written

    def _column_lineage(
        self, dataset: dict[str, Any], table: dict[str, Any], by_key: dict[str, dict[str, Any]]
    ) -> list[dict[str, Any]]:
        facet = (dataset.get("outputFacets") or {}).get("columnLineage")
        if facet is None and not self.version.startswith("1."):
            facet = (dataset.get("facets") or {}).get("columnLineage")
        out = []
        for key, spec in ((facet or {}).get("fields") or {}).items():
            froms = [
                f"{by_key[k]['fullyQualifiedName']}.{f['field']}"
                for f in spec.get("inputFields") or []
                if (k := f"{f['namespace']}/{f['name']}") in by_key
            ]
            if froms:
                out.append(
                    {
                        "fromColumns": froms,
                        "toColumn": f"{table['fullyQualifiedName']}.{key}",
                        "function": spec.get("transformationDescription"),
                    }
                )
        return out

    def pipeline(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Parent job if named, else the event's job (ref §2.6). 1.12.0 looks up
        `<defaultPipelineService>.<sanitised ns>-<name>` only; 2.0 also `<ns>.<name>`."""
        parent = ((event.get("run") or {}).get("facets") or {}).get("parent") or {}
        parent_job = parent.get("job") or {}
        job = parent_job if parent_job.get("namespace") and parent_job.get("name") else event["job"]
        namespace, name = job.get("namespace") or "", job["name"]
        clean = re.sub(r"[^a-zA-Z0-9_-]", "_", namespace)
        pipeline_name = f"{clean}-{name}" if namespace else name
        service = self.settings.get("defaultPipelineService") or "openlineage"
        pipelines = self.entities["pipeline"]
        found = pipelines.get(f"{service}.{pipeline_name}")
        if found is None and not self.version.startswith("1."):
            found = pipelines.get(f"{namespace}.{name}")
        return found


def _ref(entity: dict[str, Any], kind: str) -> dict[str, Any]:
    return {
        "id": entity["id"],
        "type": kind,
        "name": entity["name"],
        "fullyQualifiedName": entity["fullyQualifiedName"],
    }


def single_response(edges: int) -> dict[str, Any]:
    """OpenLineageResource, single event (ref §1.5)."""
    message = (
        f"Created {edges} lineage edge(s)" if edges else "Event processed, no lineage edges created"
    )
    return {"status": "success", "message": message, "lineageEdgesCreated": edges}


def batch_response(
    received: int, successful: int, skipped: int, created: int, failures: list[dict[str, Any]]
) -> dict[str, Any]:
    """OpenLineageResource, batch (ref §1.5): the status rule, the message, no empty lists."""
    failed = len(failures)
    if failed == 0 and successful > 0:
        status = "success"
    elif failed > 0 and successful > 0:
        status = "partial_success"
    elif failed == received:
        status = "failure"
    else:
        status = "success"  # e.g. all skipped, or failed + skipped only
    response: dict[str, Any] = {
        "status": status,
        "message": f"Processed {received} events: {successful} successful, {failed} failed, "
        f"{skipped} skipped. Created {created} lineage edges.",
        "summary": {
            "received": received,
            "successful": successful,
            "failed": failed,
            "skipped": skipped,
        },
        "lineageEdgesCreated": created,
    }
    if failures:
        response["failedEvents"] = failures
    return response
