"""Read manifest.json into a Manifest of Nodes (models, seeds, snapshots, tests, sources)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbt_oml.artifacts.reading import (
    as_dict,
    as_list,
    as_pairs,
    as_text,
    load_document,
    read_columns,
)
from dbt_oml.artifacts.views import Manifest, Node, TestInfo
from dbt_oml.errors import ArtifactError


def _groups(raw: object) -> dict[str, str]:
    """dbt groups (manifest v10+): name -> owner e-mail, else owner name."""
    out = {}
    for group in as_dict(raw).values():
        owner = as_dict(as_dict(group).get("owner"))
        who = as_text(owner.get("email")) or as_text(owner.get("name"))
        name = as_text(as_dict(group).get("name"))
        if name and who:
            out[name] = who
    return out


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
    column = as_text(raw.get("column_name"))
    kwargs: tuple[tuple[str, str], ...] = ()
    if meta is not None:
        kw = {k: v for k, v in (meta.get("kwargs") or {}).items() if k != "model"}
        kwargs = as_pairs(kw)
        column = column or as_text(kw.get("column_name"))
        assertion = as_text(meta.get("name")) or str(raw.get("name"))
    else:
        assertion = str(raw.get("name"))
    return TestInfo(
        assertion=assertion,
        column=column,
        severity=severity,
        kwargs=kwargs,
        attached_node=as_text(raw.get("attached_node")),
        generic=meta is not None,
    )


_CONFIG_KEYS = ("materialized", "access", "unique_key", "incremental_strategy", "on_schema_change")


def _node(raw: dict[str, Any]) -> Node:
    config = as_dict(raw.get("config"))
    meta = {**as_dict(config.get("meta")), **as_dict(raw.get("meta"))}
    resource_type = str(raw.get("resource_type"))
    is_source = resource_type == "source"
    depends = as_dict(raw.get("depends_on"))
    tags = as_list(raw.get("tags"))
    return Node(
        unique_id=str(raw["unique_id"]),
        resource_type=resource_type,
        name=str(raw.get("name")),
        package_name=str(raw.get("package_name") or ""),
        database=as_text(raw.get("database")),
        schema=as_text(raw.get("schema")),
        identifier=as_text(raw.get("identifier" if is_source else "alias"))
        or as_text(raw.get("name")),
        materialized=None if is_source else as_text(config.get("materialized")),
        compiled_code=as_text(raw.get("compiled_code")) or as_text(raw.get("compiled_sql")),
        relation_name=as_text(raw.get("relation_name")),
        depends_on=tuple(n for n in as_list(depends.get("nodes")) if isinstance(n, str)),
        description=str(raw.get("description") or ""),
        columns=read_columns(raw.get("columns")),
        tags=tuple(str(t) for t in tags),
        meta=as_pairs(meta),
        owners=_owners(meta),
        original_file_path=as_text(raw.get("original_file_path")),
        test=_test_info(raw, config) if resource_type == "test" else None,
        config=as_pairs({k: config.get(k) for k in _CONFIG_KEYS}),
        raw_code=as_text(raw.get("raw_code")) or as_text(raw.get("raw_sql")),
        group=as_text(config.get("group")) or as_text(raw.get("group")),
        checksum=as_text(as_dict(raw.get("checksum")).get("checksum")),
    )


def read_manifest(path: Path) -> Manifest:
    """Read manifest.json (schema v2-v12)."""
    doc = load_document(path, "manifest")
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
    project = as_text(meta.get("project_name")) or next(
        (n.package_name for n in nodes.values() if n.resource_type == "model"), None
    )
    return Manifest(
        path=str(path),
        dbt_version=str(meta.get("dbt_version") or "unknown"),
        invocation_id=as_text(meta.get("invocation_id")),
        adapter_type=as_text(meta.get("adapter_type")),
        project_name=project,
        nodes=nodes,
        groups=_groups(doc.get("groups")),
    )
