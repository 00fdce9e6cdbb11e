"""Read dbt's manifest.json, run_results.json and catalog.json into small frozen views.

Pure: the readers take bytes or a path and return dataclasses; raw dicts never leave this module.
Unknown fields are ignored (dbt adds fields in minor versions); a missing file, invalid JSON or an
unsupported major schema version raises ArtifactError naming the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dbt_oml.errors import ArtifactError

#: The newest major schema version of each artifact that dbt_oml understands.
SUPPORTED: dict[str, range] = {
    "manifest": range(2, 13),
    "run-results": range(2, 7),
    "catalog": range(1, 2),
}
#: Where `dbt-oml build` keeps the build's artifacts before `dbt docs generate` overwrites them.
KEPT_RUN_RESULTS = "run_results.build.json"
KEPT_MANIFEST = "manifest.build.json"
_VERSION = re.compile(r"/(manifest|run-results|catalog)/v(\d+)\.json$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Column:
    """A column as dbt declares or the catalog reports it."""

    name: str
    type: str | None = None
    description: str | None = None
    index: int | None = None
    tags: tuple[str, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TestInfo:
    """What a data test checks (generic tests carry test_metadata; singular ones do not)."""

    assertion: str
    column: str | None
    severity: str
    kwargs: tuple[tuple[str, str], ...] = ()
    attached_node: str | None = None
    generic: bool = True
    """False for singular tests (a SQL file in tests/)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """A manifest node or source, reduced to what events need."""

    unique_id: str
    resource_type: str
    name: str
    package_name: str
    database: str | None
    schema: str | None
    identifier: str | None
    materialized: str | None = None
    compiled_code: str | None = None
    relation_name: str | None = None
    """What `ref()`/`source()` renders to; a file read for a dbt-duckdb `external_location`."""
    depends_on: tuple[str, ...] = ()
    description: str = ""
    columns: tuple[Column, ...] = ()
    tags: tuple[str, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    owners: tuple[str, ...] = ()
    original_file_path: str | None = None
    test: TestInfo | None = None
    config: tuple[tuple[str, str], ...] = ()
    raw_code: str | None = None
    group: str | None = None

    @property
    def is_relation(self) -> bool:
        """True for nodes that are (or will be) a table or view in a catalog."""
        return self.resource_type in {"model", "seed", "snapshot", "source"} and (
            self.materialized != "ephemeral"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    path: str
    dbt_version: str
    invocation_id: str | None
    adapter_type: str | None
    project_name: str | None
    nodes: Mapping[str, Node]
    groups: Mapping[str, str] = field(default_factory=dict)
    """dbt group name -> its owner (e-mail, else name)."""

    def get(self, unique_id: str) -> Node | None:
        return self.nodes.get(unique_id)

    def relations_read(self, node: Node) -> list[Node]:
        """The relations a node reads, in dependency order, looking through ephemeral models
        (inlined into their readers' SQL) to what they read."""
        found: dict[str, Node] = {}
        stack, seen = list(reversed(node.depends_on)), set()
        while stack:
            uid = stack.pop()
            if uid in seen:
                continue
            seen.add(uid)
            parent = self.nodes.get(uid)
            if parent is None:
                continue
            if parent.resource_type == "model" and parent.materialized == "ephemeral":
                stack.extend(reversed(parent.depends_on))
            elif parent.is_relation:
                found.setdefault(uid, parent)
        return list(found.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    name: str
    started_at: datetime | None
    completed_at: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeResult:
    unique_id: str
    status: str
    message: str | None
    timing: tuple[Timing, ...]
    rows_affected: int | None
    failures: int | None
    compiled_code: str | None = None

    @property
    def started_at(self) -> datetime | None:
        return next((t.started_at for t in self.timing if t.started_at), None)

    @property
    def completed_at(self) -> datetime | None:
        ends = [t.completed_at for t in self.timing if t.completed_at]
        return max(ends) if ends else None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResults:
    path: str
    dbt_version: str
    invocation_id: str | None
    invocation_started_at: datetime | None
    generated_at: datetime | None
    command: str | None
    args: Mapping[str, str] = field(default_factory=dict)
    results: tuple[NodeResult, ...] = ()
    problems: tuple[str, ...] = ()
    """Results dbt-oml reads with a fallback (bad timing, unknown status): one line each."""


def failure_summary(results: Iterable[tuple[str, str]]) -> str:
    """One line naming the failed nodes of (unique_id, status) pairs.

    >>> failure_summary([("model.p.a", "success"), ("model.p.b", "error")])
    '1 node(s) failed: model.p.b (error)'
    """
    failed = [f"{uid} ({status})" for uid, status in results if status in {"error", "fail"}]
    if not failed:
        return "dbt reported failure"
    shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
    return f"{len(failed)} node(s) failed: {shown}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    path: str
    generated_at: datetime | None
    columns: Mapping[str, tuple[Column, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunArtifacts:
    """The artifacts of one dbt invocation; the catalog is optional."""

    manifest: Manifest
    run_results: RunResults | None
    catalog: Catalog | None = None
    problems: tuple[str, ...] = ()
    """What was read with a fallback (an unreadable catalog.json, odd results): warnings."""


def parse_time(value: object) -> datetime | None:
    """Parse dbt's timestamps (naive UTC, `Z` or offset) into aware UTC datetimes.

    >>> parse_time("2026-11-30T03:49:04.189079Z").isoformat()
    '2026-11-30T03:49:04.189079+00:00'
    >>> parse_time("2026-11-30T03:49:04") .tzinfo is not None
    True
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def _load(path: Path, kind: str) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(
            path=str(path), reason="not found", hint="run dbt first, or pass --target-path"
        ) from None
    except OSError as e:
        raise ArtifactError(path=str(path), reason=f"cannot be read ({e.strerror})") from e
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArtifactError(
            path=str(path),
            reason=f"is not valid JSON ({e})",
            hint=f"re-run dbt to rewrite the {kind}",
        ) from e
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        raise ArtifactError(path=str(path), reason=f"is not a dbt {kind} (no metadata object)")
    _check_version(path, kind, doc["metadata"].get("dbt_schema_version"))
    return doc


def _check_version(path: Path, kind: str, url: object) -> None:
    match = _VERSION.search(url) if isinstance(url, str) else None
    if match is None or match.group(1) != kind:
        raise ArtifactError(
            path=str(path), reason=f"has no {kind} dbt_schema_version (found {url!r})"
        )
    version = int(match.group(2))
    if version not in SUPPORTED[kind]:
        supported = SUPPORTED[kind]
        raise ArtifactError(
            path=str(path),
            reason=f"{kind} schema v{version} is not supported "
            f"(dbt-oml reads v{supported.start}-v{supported.stop - 1})",
            hint="upgrade dbt-oml" if version >= supported.stop else "upgrade dbt",
        )


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value != "" else None


def _columns(raw: object) -> tuple[Column, ...]:
    if not isinstance(raw, dict):
        return ()
    cols = []
    for key, col in raw.items():
        if not isinstance(col, dict):
            continue
        index = col.get("index")
        # catalog.json columns (thousands) have neither tags, meta nor config: skip their parsing
        plain = "tags" not in col and "meta" not in col and "config" not in col
        cols.append(
            Column(
                name=_str(col.get("name")) or str(key),
                type=_str(col.get("data_type")) or _str(col.get("type")),
                description=_str(col.get("description")) or _str(col.get("comment")),
                index=index if isinstance(index, int) else None,
                tags=() if plain else _tags(col),
                meta=()
                if plain
                else _pairs({**_obj(_obj(col.get("config")).get("meta")), **_obj(col.get("meta"))}),
            )
        )
    if any(c.index is not None for c in cols):
        cols.sort(key=lambda c: c.index if c.index is not None else 1 << 30)
    return tuple(cols)


def _tags(raw: dict[str, Any]) -> tuple[str, ...]:
    """A column's dbt tags (its own and its config's), in order, once each."""
    found = [*_list(raw.get("tags")), *_list(_obj(raw.get("config")).get("tags"))]
    return tuple(dict.fromkeys(str(t) for t in found if isinstance(t, str) and t))


def _groups(raw: object) -> dict[str, str]:
    """dbt groups (manifest v10+): name -> owner e-mail, else owner name."""
    out = {}
    for group in _obj(raw).values():
        owner = _obj(_obj(group).get("owner"))
        who = _str(owner.get("email")) or _str(owner.get("name"))
        name = _str(_obj(group).get("name"))
        if name and who:
            out[name] = who
    return out


def _pairs(raw: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        return ()
    return tuple(
        (str(k), v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
        for k, v in raw.items()
        if v is not None
    )


def _owners(meta: dict[str, Any]) -> tuple[str, ...]:
    owner = meta.get("owner")
    if isinstance(owner, str) and owner:
        return (owner,)
    if isinstance(owner, list):
        return tuple(o for o in owner if isinstance(o, str) and o)
    return ()


def _test_info(raw: dict[str, Any], config: dict[str, Any]) -> TestInfo:
    meta = raw.get("test_metadata") if isinstance(raw.get("test_metadata"), dict) else None
    severity = str(config.get("severity") or "error").lower()
    column = _str(raw.get("column_name"))
    kwargs: tuple[tuple[str, str], ...] = ()
    if meta is not None:
        kw = {k: v for k, v in (meta.get("kwargs") or {}).items() if k != "model"}
        kwargs = _pairs(kw)
        column = column or _str(kw.get("column_name"))
        assertion = _str(meta.get("name")) or str(raw.get("name"))
    else:
        assertion = str(raw.get("name"))
    return TestInfo(
        assertion=assertion,
        column=column,
        severity=severity,
        kwargs=kwargs,
        attached_node=_str(raw.get("attached_node")),
        generic=meta is not None,
    )


_CONFIG_KEYS = ("materialized", "access", "unique_key", "incremental_strategy", "on_schema_change")


def _node(raw: dict[str, Any]) -> Node:
    config = _obj(raw.get("config"))
    meta = {**_obj(config.get("meta")), **_obj(raw.get("meta"))}
    resource_type = str(raw.get("resource_type"))
    is_source = resource_type == "source"
    depends = _obj(raw.get("depends_on"))
    tags = _list(raw.get("tags"))
    return Node(
        unique_id=str(raw["unique_id"]),
        resource_type=resource_type,
        name=str(raw.get("name")),
        package_name=str(raw.get("package_name") or ""),
        database=_str(raw.get("database")),
        schema=_str(raw.get("schema")),
        identifier=_str(raw.get("identifier" if is_source else "alias")) or _str(raw.get("name")),
        materialized=None if is_source else _str(config.get("materialized")),
        compiled_code=_str(raw.get("compiled_code")) or _str(raw.get("compiled_sql")),
        relation_name=_str(raw.get("relation_name")),
        depends_on=tuple(n for n in _list(depends.get("nodes")) if isinstance(n, str)),
        description=str(raw.get("description") or ""),
        columns=_columns(raw.get("columns")),
        tags=tuple(str(t) for t in tags),
        meta=_pairs(meta),
        owners=_owners(meta),
        original_file_path=_str(raw.get("original_file_path")),
        test=_test_info(raw, config) if resource_type == "test" else None,
        config=_pairs({k: config.get(k) for k in _CONFIG_KEYS}),
        raw_code=_str(raw.get("raw_code")) or _str(raw.get("raw_sql")),
        group=_str(config.get("group")) or _str(raw.get("group")),
    )


def read_manifest(path: Path) -> Manifest:
    """Read manifest.json (schema v2-v12)."""
    doc = _load(path, "manifest")
    meta = doc["metadata"]
    nodes: dict[str, Node] = {}
    try:
        for section in ("nodes", "sources"):
            for raw in (doc.get(section) or {}).values():
                node = _node(raw)
                nodes[node.unique_id] = node
    except (KeyError, TypeError, AttributeError) as e:
        raise ArtifactError(
            path=str(path), reason=f"has a malformed node ({e!r})", hint="re-run dbt"
        ) from e
    project = _str(meta.get("project_name")) or next(
        (n.package_name for n in nodes.values() if n.resource_type == "model"), None
    )
    return Manifest(
        path=str(path),
        dbt_version=str(meta.get("dbt_version") or "unknown"),
        invocation_id=_str(meta.get("invocation_id")),
        adapter_type=_str(meta.get("adapter_type")),
        project_name=project,
        nodes=nodes,
        groups=_groups(doc.get("groups")),
    )


#: Every status dbt writes into run_results.json (dbt's NodeStatus / RunStatus / TestStatus).
KNOWN_STATUSES = frozenset(
    {
        "success",
        "error",
        "skipped",
        "pass",
        "fail",
        "warn",
        "runtime error",
        "partial success",
        "no-op",
    }
)


def _timing(raw: object) -> tuple[Timing, ...]:
    return tuple(
        Timing(
            name=str(t.get("name")),
            started_at=parse_time(t.get("started_at")),
            completed_at=parse_time(t.get("completed_at")),
        )
        for t in _list(raw)
        if isinstance(t, dict)
    )


def _result_problem(raw: dict[str, Any], result: NodeResult) -> str | None:
    """What of a result only reads with a fallback (None: all of it reads as dbt wrote it)."""
    timing = raw.get("timing")
    times = [
        f"{key}={t.get(key)!r}"
        for t in _list(timing)
        if isinstance(t, dict)
        for key in ("started_at", "completed_at")
        if t.get(key) not in (None, "") and parse_time(t.get(key)) is None
    ]
    if timing not in (None, []) and not isinstance(timing, list):
        times.append(f"timing={timing!r}")
    found = []
    if times:
        found.append(f"unreadable {', '.join(times)} (its events use the run's times)")
    if result.status not in KNOWN_STATUSES:
        found.append(f"unknown status {result.status!r} (its run ends as FAIL)")
    return f"run_results.json: {result.unique_id}: {'; '.join(found)}" if found else None


def _result(raw: dict[str, Any]) -> NodeResult:
    timing = _timing(raw.get("timing"))
    response = _obj(raw.get("adapter_response"))
    rows = response.get("rows_affected")
    failures = raw.get("failures")
    return NodeResult(
        unique_id=str(raw["unique_id"]),
        status=str(raw.get("status") or "unknown").lower(),
        message=_str(raw.get("message")),
        timing=timing,
        rows_affected=rows if isinstance(rows, int) and rows >= 0 else None,
        failures=failures if isinstance(failures, int) else None,
        compiled_code=_str(raw.get("compiled_code")),
    )


def read_run_results(path: Path) -> RunResults:
    """Read run_results.json (schema v2-v6)."""
    doc = _load(path, "run-results")
    meta = doc["metadata"]
    args = _obj(doc.get("args"))
    raw_results = doc.get("results") or []
    if not isinstance(raw_results, list):
        raise ArtifactError(
            path=str(path),
            reason=f"`results` is a {type(raw_results).__name__}, not a list",
            hint="re-run dbt to rewrite it",
        )
    try:
        results = tuple(_result(r) for r in raw_results)
    except (KeyError, TypeError, AttributeError) as e:
        raise ArtifactError(
            path=str(path), reason=f"has a malformed result ({e!r})", hint="re-run dbt"
        ) from e
    problems = tuple(
        p for r, raw in zip(results, raw_results, strict=True) if (p := _result_problem(raw, r))
    )
    return RunResults(
        path=str(path),
        dbt_version=str(meta.get("dbt_version") or "unknown"),
        invocation_id=_str(meta.get("invocation_id")),
        invocation_started_at=parse_time(meta.get("invocation_started_at")),
        generated_at=parse_time(meta.get("generated_at")),
        command=_str(args.get("which")),
        args={k: str(v) for k, v in args.items() if isinstance(v, str | int | float | bool)},
        results=results,
        problems=problems,
    )


def read_catalog(path: Path) -> Catalog:
    """Read catalog.json (schema v1): the real columns and types of every relation."""
    doc = _load(path, "catalog")
    columns: dict[str, tuple[Column, ...]] = {}
    for section in ("nodes", "sources"):
        entries = doc.get(section)
        entries = {} if entries is None else entries
        if not isinstance(entries, dict):
            raise ArtifactError(
                path=str(path),
                reason=f"`{section}` is a {type(entries).__name__}, not an object",
                hint="re-run `dbt docs generate`",
            )
        for unique_id, entry in entries.items():
            if isinstance(entry, dict):
                columns[str(unique_id)] = _columns(entry.get("columns"))
    generated = parse_time(doc["metadata"].get("generated_at"))
    return Catalog(path=str(path), generated_at=generated, columns=columns)


def read_artifacts(target: Path, *, run_results: Path | None = None) -> RunArtifacts:
    """Read the artifacts in a target directory.

    run_results.json is optional (a parse error leaves none); catalog.json is optional. A
    run_results.json written by `dbt docs generate` is replaced by the build's copy
    (run_results.build.json) when one exists.
    """
    results_path = run_results or target / "run_results.json"
    results = read_run_results(results_path) if results_path.exists() else None
    manifest_path = target / "manifest.json"
    kept = target / KEPT_RUN_RESULTS
    if run_results is None and kept.exists() and (results is None or results.command == "generate"):
        # `dbt docs generate` overwrote run_results.json (and manifest.json): use the build's copies
        results = read_run_results(kept)
        if (target / KEPT_MANIFEST).exists():
            manifest_path = target / KEPT_MANIFEST
    manifest = read_manifest(manifest_path)
    catalog, problems = read_optional_catalog(target / "catalog.json")
    if results is not None:
        problems += results.problems
    return RunArtifacts(manifest=manifest, run_results=results, catalog=catalog, problems=problems)


def read_optional_catalog(path: Path) -> tuple[Catalog | None, tuple[str, ...]]:
    """catalog.json if it is there and readable; an unreadable one is a warning, not an error.

    The catalog only improves schema facets (real columns and types); without it the declared
    columns are used, so a corrupt or foreign file must never cost the run its events.
    """
    if not path.exists():
        return None, ()
    try:
        return read_catalog(path), ()
    except ArtifactError as e:
        return None, (f"{e}; schema facets use the declared columns",)
