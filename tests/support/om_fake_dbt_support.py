"""Shared helpers of the OM stand-in's dbt-metadata tests (tests/unit/test_om_fake_dbt*.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from tests.support.fakes.openmetadata import FakeOpenMetadata, Principal
from tests.support.om_fake_support import bearer, client, seed_table

TABLE = "svc.shop.core.orders"
PATCH = {"Content-Type": "application/json-patch+json"}


def om(version: str = "2.0") -> FakeOpenMetadata:
    """The bot (bot-jwt), a steward (steward-jwt), a consumer (consumer-jwt) and TABLE."""
    fake = FakeOpenMetadata.with_bot(version=version)
    fake.add_token("steward-jwt", Principal("steward", roles=frozenset({"DataSteward"}), bot=False))
    fake.add_token(
        "consumer-jwt", Principal("consumer", roles=frozenset({"DataConsumer"}), bot=False)
    )
    fake.add_token("lineage-jwt", Principal("lineage-bot", roles=frozenset({"LineageBotRole"})))
    seed_table(fake, TABLE, ("id", "status"))
    return fake


def call(
    fake: FakeOpenMetadata,
    method: str,
    path: str,
    body: Any = None,
    *,
    token: str = "bot-jwt",
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
) -> httpx2.Response:
    extra = {**bearer(token), **(headers or {})}
    if method == "PATCH":
        return client(fake).request(
            method,
            f"/api/v1/{path}",
            content=json.dumps(body),
            headers={**PATCH, **extra},
            params=params,
        )
    return client(fake).request(method, f"/api/v1/{path}", json=body, headers=extra, params=params)


def said(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json().get("message", "")


def table_id(fake: FakeOpenMetadata) -> str:
    return str(fake.entity("table", TABLE)["id"])  # type: ignore[index]


def label(fqn: str, source: str = "Classification") -> dict[str, str]:
    return {"tagFQN": fqn, "source": source, "labelType": "Automated", "state": "Suggested"}


def dbt_definition(fake: FakeOpenMetadata, name: str = "not_null", entity_type: str = "COLUMN"):
    body = {
        "name": name,
        "description": "dbt test",
        "entityType": entity_type,
        "testPlatforms": ["dbt"],
        "parameterDefinition": [{"name": name, "displayName": name, "required": False}],
    }
    return call(fake, "PUT", "dataQuality/testDefinitions", body)


def case_body(name: str = "not_null_orders_id", link: str | None = None, **extra: Any) -> dict:
    return {
        "name": name,
        "testDefinition": "not_null",
        "entityLink": link or f"<#E::table::{TABLE}::columns::id>",
        "parameterValues": [{"name": "not_null", "value": "id"}],
        **extra,
    }


def result_body(timestamp: int = 1_780_000_000_000, status: str = "Success") -> dict:
    return {"timestamp": timestamp, "testCaseStatus": status, "testResultValue": []}
