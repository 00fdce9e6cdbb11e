"""The stand-in's entity store (5-10; ref §3): checks, names, POST/PUT with OM's answers and
rules (a bot keeps non-empty descriptions, ref §9.4), reads with `fields`, and list pages.

Functions of the FakeOpenMetadata they answer for (`fake`); om_entities.py holds the kinds and
PUT rules, om_rules.py the body checks.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.support.fakes import om_catalog
from tests.support.fakes.om_auth import OMError, Principal, authorize
from tests.support.fakes.om_entities import TABLE_FIELDS, Kind, content, keep_column_descriptions
from tests.support.fakes.om_http import Call
from tests.support.fakes.om_rules import check_columns, quote, stored_columns

if TYPE_CHECKING:
    from tests.support.fakes.openmetadata import Answer, FakeOpenMetadata


def write(fake: FakeOpenMetadata, call: Call, kind: Kind, principal: Principal) -> Answer:
    method = call.request.method
    body = call.json()
    check_entity(fake, kind, body)  # 400 (bean validation, column rules) and parent 404
    fqn = entity_fqn(fake, kind, body)

    def rights(new: bool) -> None:
        authorize(principal, ["Create" if new else "EditAll"], kind.entity)

    return store(fake, kind, method, body, principal, fqn=fqn, rights=rights)


def store(
    fake: FakeOpenMetadata,
    kind: Kind,
    method: str,
    body: dict[str, Any],
    principal: Principal,
    *,
    fqn: str,
    rights: Callable[[bool], None],
) -> Answer:
    """POST (201, or 409) or PUT (201 or 200) an entity whose body was checked; `rights(new)`
    raises OM's 403 (new: a create)."""
    existing = fake.entities[kind.entity].get(fqn)
    try:
        rights(existing is None or method == "POST")
    except OMError:
        fake.audit.append((principal.name, method, fqn, "denied"))
        raise
    if existing is None:
        created = create(fake, kind, body, principal, fqn=fqn)
        fake.audit.append((principal.name, method, fqn, "created"))
        headers = [("Location", f"/api/v1/{kind.collection}/{created['id']}")]
        if method == "PUT":
            headers.append(("X-OpenMetadata-Change", "entityCreated"))
        return 201, created, headers
    if method == "POST":
        fake.audit.append((principal.name, method, fqn, "conflict"))
        raise OMError(409, "Entity already exists", rule="conflict")
    updated = update(fake, kind, existing, body, principal)
    changed = updated is not existing
    fake.audit.append((principal.name, method, fqn, "updated" if changed else "unchanged"))
    change = "entityUpdated" if changed else "entityNoChange"
    return 200, updated, [("X-OpenMetadata-Change", change)]


def check_entity(fake: FakeOpenMetadata, kind: Kind, body: Any) -> None:
    if not isinstance(body, dict):
        raise OMError(400, "Invalid request format", rule="format", detail="not an object")
    fake.check_body(kind.schema, body)  # 2.0.7 knows tableType SemanticView, 1.12 does not
    if kind.entity == "table":
        if not isinstance(body.get("columns"), list):
            raise OMError(400, "[query param columns must not be null]", rule="required")
        check_columns(body["columns"])
        om_catalog.check_table_labels(fake, body)  # D3


def create(
    fake: FakeOpenMetadata,
    kind: Kind,
    body: dict[str, Any],
    principal: Principal,
    fqn: str | None = None,
) -> dict[str, Any]:
    fqn = fqn or entity_fqn(fake, kind, body)
    entity = {
        **copy.deepcopy(body),
        "id": str(uuid.uuid4()),
        "fullyQualifiedName": fqn,
        "version": 0.1,
        "updatedBy": principal.name,
        "updatedAt": int(time.time() * 1000),
        "deleted": False,
    }
    if kind.entity == "table":
        entity["columns"] = stored_columns(fqn, body["columns"])
    fake.entities[kind.entity][fqn] = entity
    return entity


def update(
    fake: FakeOpenMetadata,
    kind: Kind,
    existing: dict[str, Any],
    body: dict[str, Any],
    principal: Principal,
) -> dict[str, Any]:
    """The stored entity after a PUT; `existing` itself when nothing changed."""
    fqn = existing["fullyQualifiedName"]
    updated = {
        **existing,
        **copy.deepcopy(body),
        "id": existing["id"],
        "fullyQualifiedName": fqn,
    }
    if kind.entity == "table":
        updated["columns"] = stored_columns(fqn, body["columns"])  # replaced as sent
    if principal.bot:  # EntityRepository.updateDescription: a bot's PUT keeps non-empty ones
        if existing.get("description"):
            updated["description"] = existing["description"]
        if kind.entity == "table":
            keep_column_descriptions(existing.get("columns") or [], updated["columns"])
    if content(updated) == content(existing):
        return existing
    updated["version"] = round(float(existing.get("version", 0.1)) + 0.1, 1)
    updated["updatedBy"] = principal.name
    updated["updatedAt"] = int(time.time() * 1000)
    fake.entities[kind.entity][fqn] = updated
    return updated


def entity_fqn(fake: FakeOpenMetadata, kind: Kind, body: dict[str, Any]) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise OMError(400, "[query param name must not be null]", rule="required")
    if '"' in name:
        raise OMError(400, f"Invalid name {name}", rule="name")
    if "::" in name:
        raise OMError(400, '[query param name must match "^((?!::).)*$"]', rule="pattern")
    if len(name) > 256:
        raise OMError(400, "[query param name size must be between 1 and 256]", rule="size")
    if kind.parent_field is None:
        return quote(name)
    parent_fqn = body.get(kind.parent_field)
    if not isinstance(parent_fqn, str):
        raise OMError(400, f"[query param {kind.parent_field} must not be null]", rule="required")
    if parent_fqn not in fake.entities[kind.parent_kind or ""]:
        raise OMError(
            404, f"{kind.parent_kind} instance for {parent_fqn} not found", rule="not-found"
        )
    parent = body.get("parent")
    if kind.entity == "container" and isinstance(parent, dict):
        match = fake.by_id("container", str(parent.get("id")))
        if match is None:
            raise OMError(
                404, f"container instance for {parent.get('id')} not found", rule="not-found"
            )
        return f"{match['fullyQualifiedName']}.{quote(name)}"
    return f"{parent_fqn}.{quote(name)}"


def view(
    fake: FakeOpenMetadata, kind: Kind, entity: dict[str, Any], query: dict[str, str]
) -> dict[str, Any]:
    fields = [f.strip() for f in query.get("fields", "").split(",") if f.strip()]
    if kind.entity == "table":
        bad = next((f for f in fields if f not in TABLE_FIELDS), None)
        if bad is not None:
            raise OMError(400, f"Invalid field name {bad}", rule="fields")
        # OM sets a field only when asked for it: columns, tags (column tags too), owners...
        view = {k: v for k, v in entity.items() if k not in TABLE_FIELDS or k in fields}
        if "columns" in view and "tags" not in fields:
            view["columns"] = [{k: v for k, v in c.items() if k != "tags"} for c in view["columns"]]
        return view
    return entity


def list_page(fake: FakeOpenMetadata, kind: Kind, query: dict[str, str]) -> dict[str, Any]:
    items = sorted(fake.entities[kind.entity].values(), key=lambda e: e["fullyQualifiedName"])
    if kind.parent_field and query.get(kind.parent_field):
        items = [e for e in items if e.get(kind.parent_field) == query[kind.parent_field]]
    limit = int(query.get("limit", "10"))
    start = int(query.get("after") or 0)
    page = items[start : start + limit]
    paging: dict[str, Any] = {"total": len(items)}
    if start + limit < len(items):
        paging["after"] = str(start + limit)
    return {"data": [view(fake, kind, e, query) for e in page], "paging": paging}
