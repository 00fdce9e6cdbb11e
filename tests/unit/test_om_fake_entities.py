"""The OM stand-in itself, rule by rule against docs/reference/openmetadata-api.md ("ref §n"): entity bodies, the entity and lineage APIs, scripting (§3, §5).

If one of these fails, the stand-in no longer answers like OM: fix the stand-in, not the test.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.fakes.om_models import MODELS_DIR, RELEASES, json_schema
from tests.support.fakes.openmetadata import Principal
from tests.support.om_fake_support import (
    DST,
    SRC,
    bearer,
    client,
    column_facet,
    dataset,
    edge,
    event,
    om,
    post,
)

# -- §3, §5: entity bodies ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"name": "t", "databaseSchema": "pg.shop.sales"},
            "[query param columns must not be null]",
        ),
        (
            {"name": "t", "databaseSchema": "pg.shop.sales", "columns": [{"name": "c"}]},
            "[query param dataType must not be null]",
        ),
        (
            {
                "name": "t",
                "databaseSchema": "pg.shop.sales",
                "columns": [{"name": "c", "dataType": "VARCHAR2"}],
            },
            "Invalid request format",
        ),
        (
            {"name": "a::b", "databaseSchema": "pg.shop.sales", "columns": []},
            '[query param name must match "^((?!::).)*$"]',
        ),
        (
            {"name": "x" * 257, "databaseSchema": "pg.shop.sales", "columns": []},
            "[query param name size must be between 1 and 256]",
        ),
        (
            {"name": 'a"b', "databaseSchema": "pg.shop.sales", "columns": []},
            'Invalid name a"b',
        ),
        (
            {"name": "t", "databaseSchema": "pg.shop.sales", "columns": [], "tableType": "Table"},
            "Invalid request format",
        ),
    ],
)
def test_entity_bodies_answer_like_om(body: dict[str, Any], message: str) -> None:
    """ref §3.1, §3.3, §5.1, §5.2: bean validation lists, binding errors, invalid names."""
    fake = om()
    reply = client(fake).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.json() == {"code": 400, "message": message}


def test_semantic_view_is_a_2_0_table_type() -> None:
    """ref §3.3: 2.0.7 adds tableType SemanticView (unknown enum value on 1.12)."""
    body = {
        "name": "v",
        "databaseSchema": "pg.shop.sales",
        "columns": [],
        "tableType": "SemanticView",
    }
    assert (
        client(om("2.0")).put("/api/v1/tables", json=body, headers=bearer("bot-jwt")).status_code
        == 201
    )
    old = client(om("1.12")).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert old.json()["message"] == "Invalid request format"


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ([{"name": "c", "dataType": "INT"}] * 2, "Column name c is repeated"),
        (
            [{"name": "c", "dataType": "VARBINARY"}],
            "For column data types char, varchar, binary, varbinary dataLength must not be null",
        ),
        (
            [{"name": "c", "dataType": "ARRAY"}],
            "For column data type array, arrayDataType must not be null",
        ),
        (
            [{"name": "c", "dataType": "STRUCT"}],
            "For column data type struct, children must not be null",
        ),
        (
            [{"name": "c", "dataType": "DECIMAL", "scale": 2}],
            "Scale is set but precision is not set for the column c",
        ),
        (
            [{"name": "c", "dataType": "DECIMAL", "scale": 4, "precision": 2}],
            "Scale can't be greater than the precision for the column c",
        ),
    ],
)
def test_column_rules(columns: list[dict[str, Any]], message: str) -> None:
    """ref §3.4: DatabaseUtil's column checks."""
    body = {"name": "t", "databaseSchema": "pg.shop.sales", "columns": columns}
    reply = client(om()).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.json() == {"code": 400, "message": message}


def test_columns_are_stored_as_om_stores_them() -> None:
    """ref §3.4: dataTypeDisplay lower-cased (default: the type), arrayDataType only on arrays."""
    fake = om()
    body = {
        "name": "t",
        "databaseSchema": "pg.shop.sales",
        "columns": [
            {"name": "a", "dataType": "INT", "arrayDataType": "INT"},
            {
                "name": "b.c",
                "dataType": "VARCHAR",
                "dataLength": 9,
                "dataTypeDisplay": "VARCHAR(9)",
            },
        ],
    }
    client(fake).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    a, b = fake.entity("table", "pg.shop.sales.t")["columns"]
    assert (a["dataTypeDisplay"], "arrayDataType" in a) == ("int", False)
    assert (b["dataTypeDisplay"], b["fullyQualifiedName"]) == (
        "varchar(9)",
        'pg.shop.sales.t."b.c"',
    )


# -- §3: entities ----------------------------------------------------------------------------------


def test_post_creates_then_409_after_the_create_check() -> None:
    """ref §3.1: POST → 201 + Location; the same FQN again → 409; Create is checked first."""
    fake = om()
    fake.add_token("lineage-jwt", Principal("lineage-bot", roles=frozenset({"LineageBotRole"})))
    http = client(fake)
    body = {"name": "warehouse", "service": "pg"}
    created = http.post("/api/v1/databases", json=body, headers=bearer("bot-jwt"))
    assert created.status_code == 201
    assert created.headers["Location"].endswith(created.json()["id"])
    assert "X-OpenMetadata-Change" not in created.headers
    again = http.post("/api/v1/databases", json=body, headers=bearer("bot-jwt"))
    assert again.json() == {"code": 409, "message": "Entity already exists"}
    assert again.headers["WWW-Authenticate"] == "om-auth"
    denied = http.post("/api/v1/databases", json=body, headers=bearer("lineage-jwt"))
    assert denied.status_code == 403
    assert fake.audit == [
        ("ingestion-bot", "POST", "pg.warehouse", "created"),
        ("ingestion-bot", "POST", "pg.warehouse", "conflict"),
        ("lineage-bot", "POST", "pg.warehouse", "denied"),
    ]


def test_put_change_header_and_version() -> None:
    """ref §3.1: PUT → 201 entityCreated, then 200 entityNoChange / entityUpdated."""
    fake = om()
    http = client(fake)
    body = {"name": "svc", "serviceType": "CustomDatabase"}
    path = "/api/v1/services/databaseServices"
    changes = []
    for sent in (body, body, {**body, "description": "d"}):
        reply = http.put(path, json=sent, headers=bearer("bot-jwt"))
        changes.append((reply.status_code, reply.headers["X-OpenMetadata-Change"]))
    assert changes == [(201, "entityCreated"), (200, "entityNoChange"), (200, "entityUpdated")]
    assert fake.entity("databaseService", "svc")["version"] == 0.2
    assert [a[3] for a in fake.audit] == ["created", "unchanged", "updated"]


def test_parent_must_exist() -> None:
    """ref §3.1, checklist 6: a missing parent → 404 with the parent's type."""
    body = {"name": "t", "databaseSchema": "pg.shop.nope", "columns": []}
    reply = client(om()).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.json() == {
        "code": 404,
        "message": "databaseSchema instance for pg.shop.nope not found",
    }


def test_put_replaces_columns_as_sent() -> None:
    """ref §3.1: a PUT's columns replace the stored ones (a wipe to [] is visible)."""
    fake = om()
    body = {"name": "orders", "databaseSchema": "pg.shop.sales", "columns": []}
    reply = client(fake).put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert reply.headers["X-OpenMetadata-Change"] == "entityUpdated"
    assert fake.entity("table", SRC)["columns"] == []


def test_a_bots_put_never_replaces_non_empty_descriptions() -> None:
    """ref §9.4: EntityRepository.updateDescription; admins and people may replace them."""
    fake = om()
    fake.seed(
        "table",
        {
            "name": "people",
            "databaseSchema": "pg.shop.sales",
            "description": "Ingested.",
            "columns": [
                {"name": "id", "dataType": "INT", "description": "ingested id"},
                {"name": "email", "dataType": "INT"},
            ],
        },
    )
    body = {
        "name": "people",
        "databaseSchema": "pg.shop.sales",
        "description": "From dbt.",
        "columns": [
            {"name": "id", "dataType": "INT", "description": "dbt id"},
            {"name": "email", "dataType": "INT", "description": "dbt email"},
        ],
    }
    http = client(fake)
    http.put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    table = fake.entity("table", "pg.shop.sales.people")
    assert table["description"] == "Ingested."
    assert [c.get("description") for c in table["columns"]] == ["ingested id", "dbt email"]
    again = http.put("/api/v1/tables", json=body, headers=bearer("bot-jwt"))
    assert again.headers["X-OpenMetadata-Change"] == "entityNoChange"
    http.put("/api/v1/tables", json=body, headers=bearer("admin-jwt"))
    table = fake.entity("table", "pg.shop.sales.people")
    assert table["description"] == "From dbt."
    assert [c["description"] for c in table["columns"]] == ["dbt id", "dbt email"]


def test_get_by_name_fields_and_404() -> None:
    """ref §3.1, §3.3: columns only when asked for; unknown field → 400; missing → 404."""
    http = client(om())
    plain = http.get(f"/api/v1/tables/name/{SRC}", headers=bearer("bot-jwt"))
    assert "columns" not in plain.json()
    full = http.get(
        f"/api/v1/tables/name/{SRC}", params={"fields": "columns,tags"}, headers=bearer("bot-jwt")
    )
    assert [c["name"] for c in full.json()["columns"]] == ["id", "amount"]
    bad = http.get(
        f"/api/v1/tables/name/{SRC}", params={"fields": "colums"}, headers=bearer("bot-jwt")
    )
    assert bad.json() == {"code": 400, "message": "Invalid field name colums"}
    missing = http.get("/api/v1/tables/name/pg.shop.sales.nope", headers=bearer("bot-jwt"))
    assert missing.json() == {
        "code": 404,
        "message": "table instance for pg.shop.sales.nope not found",
    }


# -- §3.5, §3.6: lineage API --------------------------------------------------------------------


def test_lineage_read_and_get_lineage_edge() -> None:
    """ref §3.6: EntityLineage with UUID edges and columnsLineage; getLineageEdge; nulls left out."""
    fake = om()
    post(
        fake,
        [event(outputs=[dataset("shop.marts.revenue", columnLineage=column_facet(("id", "id")))])],
    )
    http = client(fake)
    src, dst = fake.entity("table", SRC), fake.entity("table", DST)
    read = http.get(
        f"/api/v1/lineage/table/name/{DST}", params={"upstreamDepth": 1}, headers=bearer("bot-jwt")
    ).json()
    assert read["entity"]["fullyQualifiedName"] == DST
    assert [n["fullyQualifiedName"] for n in read["nodes"]] == [SRC]
    (up,) = read["upstreamEdges"]
    assert (up["fromEntity"], up["toEntity"]) == (src["id"], dst["id"])
    assert up["lineageDetails"]["columnsLineage"][0]["toColumn"] == f"{DST}.id"
    assert "pipeline" not in up["lineageDetails"]  # null fields are omitted
    got = http.get(
        f"/api/v1/lineage/getLineageEdge/{src['id']}/{dst['id']}", headers=bearer("bot-jwt")
    )
    assert got.json()["edge"]["source"] == "OpenLineage"
    none = http.get(
        f"/api/v1/lineage/getLineageEdge/{dst['id']}/{src['id']}", headers=bearer("bot-jwt")
    )
    assert none.json() == {
        "code": 404,
        "message": f"Lineage edge not found between {dst['id']} and {src['id']}",
    }


def test_put_lineage_takes_ids_and_needs_edit_lineage() -> None:
    """ref §3.5: AddLineage by ids, 200 with no body, `Manual` source, 404, EditLineage."""
    fake = om()
    fake.add_token("reader", Principal("reader", roles=frozenset({"DataConsumer"}), bot=False))
    src, dst = fake.entity("table", SRC), fake.entity("table", DST)
    body = {
        "edge": {
            "fromEntity": {"id": src["id"], "type": "table"},
            "toEntity": {"id": dst["id"], "type": "table"},
        }
    }
    http = client(fake)
    done = http.put("/api/v1/lineage", json=body, headers=bearer("bot-jwt"))
    assert (done.status_code, done.content) == (200, b"")
    assert edge(fake)["source"] == "Manual"  # type: ignore[index]
    assert http.put("/api/v1/lineage", json=body, headers=bearer("reader")).status_code == 403
    missing_id = "00000000-0000-0000-0000-000000000000"
    body["edge"]["toEntity"]["id"] = missing_id
    gone = http.put("/api/v1/lineage", json=body, headers=bearer("bot-jwt"))
    assert gone.json() == {"code": 404, "message": f"table instance for {missing_id} not found"}
    by_fqn = {"edge": {"fromEntity": {"type": "table"}, "toEntity": {"type": "table"}}}
    assert http.put("/api/v1/lineage", json=by_fqn, headers=bearer("bot-jwt")).json()[
        "message"
    ] == ("[query param id must not be null, query param id must not be null]")


# -- scripting and schemas --------------------------------------------------------------------------


def test_fail_next_answers_the_next_matching_request() -> None:
    """Scripted faults: the next request under the prefix gets the status, then normal answers."""
    fake = om()
    fake.fail_next([503], "/api/v1/openlineage")
    http = client(fake)
    assert http.get("/api/v1/tables", headers=bearer("bot-jwt")).status_code == 200
    assert post(fake, [event()]).status_code == 503
    assert post(fake, [event()]).status_code == 200
    assert fake.requests[-2].violation == "fault"


def test_the_schemas_are_the_pinned_releases_generated_models() -> None:
    """The checks read OM's own generated models (a clone alone has them, ../shared or not)."""
    for release in RELEASES.values():
        assert (MODELS_DIR / release / f"openmetadata_ingestion-{release}.dist-info").is_dir()
    schema = json_schema("api/data/createTable.json", "2.0")
    assert {"name", "columns", "databaseSchema"} <= set(schema["required"])
    no_producer = event()
    del no_producer["producer"]
    reply = post(om(), [no_producer])
    assert reply.status_code == 400
    assert reply.json()["message"] == "[query param producer must not be null]"
