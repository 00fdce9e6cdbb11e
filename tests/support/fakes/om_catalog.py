"""What OM's dbt ingestion writes on a table, for the OM stand-in (ref §9.2-§9.5, §9.8; D1-D6).

- D1 people: seeded users (one per principal, plus `add_person`), teams of every type, OM's
  system classifications PII and Tier and a few system test definitions. Users and teams are
  read-only here (POST/PUT on them are not modelled: 405).
- D2 owners: a reference needs `id` and `type`; a user, or a team of type Group, by id; OM's
  three owner messages otherwise.
- D3 labels: every tag label (tables, columns, data models, test cases) has TagLabel's required
  `source`, `labelType` and `state` from their enums (400; a PATCH too) and names an existing tag
  (source Classification) or glossary term (source Glossary), else 404.
- D4 classifications (generic PUT/POST) and tags: a tag lives under its `classification` or its
  `parent` tag, which must exist (404); FQN `<classification>.<name>` (quoted when dotted).
- D5 `PUT /tables/{id}/dataModel`: EditAll on the table; the model stored as sent, blank SQL
  keeps the stored one, owners copied only to an ownerless table, model tags added to the table
  and column tags to the column of the same name (exact match); descriptions are not copied; no
  version bump; 200 with the table.
- D6 `PATCH /tables/{id}` (`application/json-patch+json`, else 415 before anything else): the
  rights each path needs (description: EditDescription, owners: EditOwners, tags: EditTags,
  Tier.*: EditTier, glossary: EditGlossaryTerms, displayName: EditDisplayName, else EditAll) with
  deny rules first; a bot may replace descriptions this way; immutable fields are kept.
"""

from __future__ import annotations

import copy
import re
import time
from typing import TYPE_CHECKING, Any

from tests.support.fakes.om_auth import OMError, Principal, authorize
from tests.support.fakes.om_entities import BY_ENTITY, content
from tests.support.fakes.om_http import json_patch
from tests.support.fakes.om_rules import is_uuid, quote, stored_columns

if TYPE_CHECKING:
    from tests.support.fakes.om_http import Call
    from tests.support.fakes.openmetadata import Answer, FakeOpenMetadata

SYSTEM_TAGS = {
    "PII": ("Sensitive", "NonSensitive", "None"),
    "Tier": ("Tier1", "Tier2", "Tier3", "Tier4", "Tier5"),
}
SYSTEM_TESTS = (
    ("columnValuesToBeNotNull", "COLUMN"),
    ("columnValuesToBeUnique", "COLUMN"),
    ("tableRowCountToBeBetween", "TABLE"),
)
SYSTEM_TEAMS = (("Organization", "Organization"), ("Engineering", "Department"))
#: Fields OM never takes from a PATCH.
IMMUTABLE = (
    "id",
    "name",
    "fullyQualifiedName",
    "databaseSchema",
    "database",
    "service",
    "version",
    "updatedAt",
    "updatedBy",
    "href",
    "deleted",
)
TEAM_OWNER = "Team of type {} can't own entities. Only Team of type Group can own entities."
OTHER_OWNER = (
    "Entity of type {} can't be the owner. Only Team of type Group or a User can own entities."
)
SYSTEM = Principal("admin", roles=frozenset(), admin=True, bot=False)


def seed_defaults(fake: FakeOpenMetadata) -> None:
    """D1: what a fresh OM has: teams, PII and Tier tags, system test definitions."""
    for name, team_type in SYSTEM_TEAMS:
        fake.seed("team", {"name": name, "teamType": team_type}, check=False)
    for classification, tags in SYSTEM_TAGS.items():
        body = {"name": classification, "description": classification, "provider": "system"}
        fake.seed("classification", body, check=False)
        for tag in tags:
            body = {"name": tag, "classification": classification, "description": tag}
            fake.seed("tag", body, check=False)
    for name, entity_type in SYSTEM_TESTS:
        body = {
            "name": name,
            "description": name,
            "entityType": entity_type,
            "testPlatforms": ["OpenMetadata"],
            "provider": "system",
        }
        fake.seed("testDefinition", body, check=False)


def add_person(
    fake: FakeOpenMetadata, name: str, email: str | None = None, *, bot: bool = False
) -> dict[str, Any]:
    """A user entity (D1); GET /users/name/{name} finds it."""
    found = fake.entity("user", quote(name))
    if found is not None:
        return found
    body = {"name": name, "email": email or f"{name}@openmetadata.org", "isBot": bot}
    return fake.seed("user", body)


def add_team(
    fake: FakeOpenMetadata, name: str, *, team_type: str = "Group", email: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "teamType": team_type}
    if email:
        body["email"] = email
    return fake.seed("team", body)


def add_glossary_term(fake: FakeOpenMetadata, fqn: str) -> dict[str, Any]:
    glossary, _, term = fqn.rpartition(".")
    body = {"name": term, "glossary": glossary, "description": term}
    return fake.seed("glossaryTerm", body, fqn=fqn)


# -- D2, D3 ----------------------------------------------------------------------------------


def check_owners(fake: FakeOpenMetadata, refs: Any) -> list[dict[str, Any]]:
    """Owner references as OM stores them, or OM's 400/404 (ref §9.5)."""
    out = []
    for ref in refs or []:
        if not isinstance(ref, dict) or not ref.get("id"):
            raise OMError(400, "[query param id must not be null]", rule="required")
        if not ref.get("type"):
            raise OMError(400, "[query param type must not be null]", rule="required")
        kind = str(ref["type"])
        if kind not in ("user", "team"):
            raise OMError(400, OTHER_OWNER.format(kind), rule="owner")
        found = fake.by_id(kind, str(ref["id"]))
        if found is None:
            raise OMError(404, f"{kind} instance for {ref['id']} not found", rule="not-found")
        if kind == "team" and found.get("teamType") != "Group":
            raise OMError(400, TEAM_OWNER.format(found.get("teamType")), rule="owner")
        out.append(
            {
                "id": found["id"],
                "type": kind,
                "name": found["name"],
                "fullyQualifiedName": found["fullyQualifiedName"],
                "displayName": found.get("displayName") or found["name"],
            }
        )
    return out


#: TagLabel's enums (ref §9.2; `$defs/TagLabel` of the derived table schema), all required.
LABEL_ENUMS = {
    "source": ("Classification", "Glossary"),
    "labelType": ("Manual", "Propagated", "Automated", "Derived", "Generated"),
    "state": ("Suggested", "Confirmed"),
}


def check_labels(fake: FakeOpenMetadata, labels: Any) -> None:
    """D3: a label is a TagLabel (tagFQN and the three enums, as the schema says; this also
    holds for a PATCH, which no schema check sees) naming an existing tag or glossary term
    (404 otherwise). An enum value OM does not know fails Jackson's binding: 400 (text [I])."""
    for label in labels or []:
        if not isinstance(label, dict) or not label.get("tagFQN"):
            raise OMError(400, "[query param tagFQN must not be null]", rule="required")
        for key, allowed in LABEL_ENUMS.items():
            if label.get(key) is None:
                raise OMError(400, f"[query param {key} must not be null]", rule="required")
            if label[key] not in allowed:
                detail = f"tags: {label[key]!r} is not one of {list(allowed)} ({key})"
                raise OMError(400, "Invalid request format", rule="format", detail=detail)
        fqn = str(label["tagFQN"])
        kind = "glossaryTerm" if label.get("source") == "Glossary" else "tag"
        if fake.entity(kind, fqn) is None:
            raise OMError(404, f"{kind} instance for {fqn} not found", rule="not-found")


def check_table_labels(fake: FakeOpenMetadata, table: dict[str, Any]) -> None:
    check_labels(fake, table.get("tags"))
    for column in table.get("columns") or []:
        check_labels(fake, column.get("tags"))


# -- routing ---------------------------------------------------------------------------------


def route(fake: FakeOpenMetadata, call: Call, principal: Principal) -> Answer | None:
    method, rest = call.request.method, call.request.path[len("/api/v1/") :]
    if rest in ("users", "teams", "glossaryTerms") and method in ("POST", "PUT"):
        raise OMError(405, "HTTP 405 Method Not Allowed", rule="not-modelled")
    if rest == "tags" and method in ("POST", "PUT"):
        return write_tag(fake, call, principal)
    match = re.fullmatch(r"tables/([^/]+)/dataModel", rest)
    if match and method == "PUT":
        return data_model(fake, call, principal, match.group(1))
    match = re.fullmatch(r"tables/([^/]+)", rest)
    if match and method == "PATCH":
        return patch_table(fake, call, principal, match.group(1))
    return None


def write_tag(fake: FakeOpenMetadata, call: Call, principal: Principal) -> Answer:
    """D4: POST/PUT /tags under a classification or a parent tag."""
    kind = BY_ENTITY["tag"]
    body = call.json()
    fake.check_body(kind.schema, body)
    name = str(body.get("name"))
    if body.get("parent"):
        parent = str(body["parent"])
        if fake.entity("tag", parent) is None:
            raise OMError(404, f"tag instance for {parent} not found", rule="not-found")
        fqn = f"{parent}.{quote(name)}"
    elif body.get("classification"):
        classification = str(body["classification"])
        if fake.entity("classification", classification) is None:
            raise OMError(
                404, f"classification instance for {classification} not found", rule="not-found"
            )
        fqn = f"{classification}.{quote(name)}"
    else:
        raise OMError(400, "[query param classification must not be null]", rule="required")

    def rights(new: bool) -> None:
        authorize(principal, ["Create" if new else "EditAll"], "tag")

    return fake.store(kind, call.request.method, body, principal, fqn=fqn, rights=rights)


def _table_by_id(fake: FakeOpenMetadata, table_id: str) -> dict[str, Any]:
    if not is_uuid(table_id):
        raise OMError(404, "HTTP 404 Not Found", rule="not-found")
    table = fake.by_id("table", table_id)
    if table is None:
        raise OMError(404, f"table instance for {table_id} not found", rule="not-found")
    return table


def _add_labels(held: list[dict[str, Any]] | None, new: Any) -> list[dict[str, Any]]:
    out = list(held or [])
    known = {label.get("tagFQN") for label in out}
    for label in new or []:
        if label.get("tagFQN") not in known:
            out.append(copy.deepcopy(label))
            known.add(label.get("tagFQN"))
    return out


def data_model(fake: FakeOpenMetadata, call: Call, principal: Principal, table_id: str) -> Answer:
    """D5: PUT /tables/{id}/dataModel (ref §9.3)."""
    body = call.json()
    fake.check_body("entity/data/table.json#DataModel", body)
    table = _table_by_id(fake, table_id)
    fqn = table["fullyQualifiedName"]
    try:
        authorize(principal, ["EditAll"], "table")
    except OMError:
        fake.audit.append((principal.name, "PUT", fqn, "denied"))
        raise
    check_labels(fake, body.get("tags"))
    for column in body.get("columns") or []:
        check_labels(fake, column.get("tags"))
    owners = check_owners(fake, body.get("owners"))
    model = copy.deepcopy(body)
    held = table.get("dataModel") or {}
    for key in ("rawSql", "sql"):
        if not str(model.get(key) or "").strip() and held.get(key):
            model[key] = held[key]  # a blank SQL keeps the stored one
    if owners:
        model["owners"] = owners
    table["dataModel"] = model
    if owners and not table.get("owners"):
        table["owners"] = owners
    if body.get("tags"):
        table["tags"] = _add_labels(table.get("tags"), body["tags"])
    by_name = {c["name"]: c for c in table.get("columns") or []}
    for column in body.get("columns") or []:
        target = by_name.get(column.get("name"))
        if target is not None and column.get("tags"):
            target["tags"] = _add_labels(target.get("tags"), column["tags"])
    fake.audit.append((principal.name, "PUT", fqn, "dataModel"))  # plain dao.update: no version
    return 200, table, []


def _patch_rights(ops: list[dict[str, Any]]) -> list[str]:
    """The operations a JSON Patch needs (JsonPatchUtils, ref §9.4)."""
    needed: list[str] = []
    for op in ops:
        parts = str(op.get("path", "")).split("/")[1:]
        field = parts[2] if parts[:1] == ["columns"] and len(parts) > 2 else parts[0]
        if field == "description":
            needed.append("EditDescription")
        elif field == "owners":
            needed.append("EditOwners")
        elif field == "displayName":
            needed.append("EditDisplayName")
        elif field == "tags":
            value = op.get("value")
            labels = value if isinstance(value, list) else [value] if value else []
            for given in labels or [{}]:
                label = given if isinstance(given, dict) else {}
                if str(label.get("tagFQN", "")).startswith("Tier."):
                    needed.append("EditTier")
                elif label.get("source") == "Glossary":
                    needed.append("EditGlossaryTerms")
                else:
                    needed.append("EditTags")
        else:
            needed.append("EditAll")
    return list(dict.fromkeys(needed))


def _with_empty_tags(table: dict[str, Any]) -> dict[str, Any]:
    """The entity as OM serialises it for a patch: `tags` lists present, if empty."""
    doc = copy.deepcopy(table)
    doc.setdefault("tags", [])
    for column in doc.get("columns") or []:
        column.setdefault("tags", [])
    return doc


def _without_empty_tags(doc: dict[str, Any]) -> dict[str, Any]:
    for holder in [doc, *(doc.get("columns") or [])]:
        if holder.get("tags") == []:
            del holder["tags"]
    return doc


def patch_table(fake: FakeOpenMetadata, call: Call, principal: Principal, table_id: str) -> Answer:
    """D6: PATCH /tables/{id} with RFC 6902 operations."""
    ops = call.json()
    if not isinstance(ops, list):
        raise OMError(400, "Invalid request format", rule="format", detail="JSON Patch")
    table = _table_by_id(fake, table_id)
    fqn = table["fullyQualifiedName"]
    try:
        authorize(principal, _patch_rights(ops), "table")
    except OMError:
        fake.audit.append((principal.name, "PATCH", fqn, "denied"))
        raise
    try:
        patched = _without_empty_tags(json_patch(_with_empty_tags(table), ops))
    except (IndexError, KeyError, ValueError, TypeError) as e:
        raise OMError(400, "Invalid request format", rule="format", detail=str(e)) from e
    for key in IMMUTABLE:
        if key in table:
            patched[key] = table[key]
    patched["columns"] = stored_columns(fqn, patched.get("columns") or [])
    check_table_labels(fake, patched)
    if "owners" in patched:
        patched["owners"] = check_owners(fake, patched["owners"])
    if content(patched) == content(table):
        fake.audit.append((principal.name, "PATCH", fqn, "unchanged"))
        return 200, table, [("X-OpenMetadata-Change", "entityNoChange")]
    patched["version"] = round(float(table.get("version", 0.1)) + 0.1, 1)
    patched["updatedBy"], patched["updatedAt"] = principal.name, int(time.time() * 1000)
    table.clear()
    table.update(patched)  # in place: the store and the lists hold this dict
    fake.audit.append((principal.name, "PATCH", fqn, "updated"))
    return 200, table, [("X-OpenMetadata-Change", "entityFieldsChanged")]
