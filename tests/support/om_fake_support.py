"""Shared helpers of the OM stand-in's own tests (tests/unit/test_om_fake_*.py)."""

from __future__ import annotations

from typing import Any

import httpx2

from tests.support.fakes.openmetadata import FakeOpenMetadata, Principal

BASE = "http://om.test"
RUN_ID = "01a22a97-c811-7ab0-b0d7-94051423011d"
NS = "postgres://db:5432"
SRC, DST = "pg.shop.sales.orders", "pg.shop.marts.revenue"


def client(fake: FakeOpenMetadata) -> httpx2.Client:
    return httpx2.Client(transport=httpx2.WSGITransport(app=fake), base_url=BASE)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def om(version: str = "2.0", **kwargs: Any) -> FakeOpenMetadata:
    """A stand-in with ingestion-bot (bot-jwt), an admin (admin-jwt) and the tables SRC, DST."""
    fake = FakeOpenMetadata.with_bot(version=version, **kwargs)
    fake.add_token("admin-jwt", Principal("admin", roles=frozenset(), admin=True, bot=False))
    seed_table(fake, SRC, ("id", "amount"))
    seed_table(fake, DST, ("id", "total"))
    return fake


def seed_table(fake: FakeOpenMetadata, fqn: str, columns: tuple[str, ...] = ("id",)) -> None:
    fake.seed_table(
        fqn, "CustomDatabase", {"columns": [{"name": c, "dataType": "INT"} for c in columns]}
    )


def dataset(name: str, namespace: str = NS, **facets: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"namespace": namespace, "name": name}
    if facets:
        out["facets"] = facets
    return out


def event(
    inputs: list[dict[str, Any]] | None = None,
    outputs: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A valid COMPLETE event from shop.sales.orders to shop.marts.revenue (resolves to SRC, DST)."""
    return {
        "eventTime": "2026-11-30T03:55:00.123Z",
        "eventType": "COMPLETE",
        "producer": "https://example.com/producer",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": RUN_ID},
        "job": {"namespace": "dbt", "name": "shop"},
        "inputs": [dataset("shop.sales.orders")] if inputs is None else inputs,
        "outputs": [dataset("shop.marts.revenue")] if outputs is None else outputs,
        **fields,
    }


def post(
    fake: FakeOpenMetadata, events: Any, *, token: str | None = "bot-jwt", batch: bool = True
) -> httpx2.Response:
    path = "/api/v1/openlineage/lineage" + ("/batch" if batch else "")
    body = {"events": events} if batch else events
    headers = bearer(token) if token else {}
    return client(fake).post(path, json=body, headers=headers)


def edge(fake: FakeOpenMetadata, src: str = SRC, dst: str = DST) -> dict[str, Any] | None:
    a, b = fake.entity("table", src), fake.entity("table", dst)
    assert a is not None
    assert b is not None
    return fake.edges.get((a["id"], b["id"]))


def error(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json()["message"]


def column_facet(*pairs: tuple[str, str], source: str = "shop.sales.orders") -> dict[str, Any]:
    return {
        "fields": {
            out: {
                "inputFields": [{"namespace": NS, "name": source, "field": col}],
                "transformationDescription": f"from {col}",
            }
            for out, col in pairs
        }
    }
