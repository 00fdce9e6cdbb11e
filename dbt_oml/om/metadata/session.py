"""The writes of dbt metadata to OpenMetadata: switches, plan, dry run, counts, refusals.

I/O adapter over OpenMetadataClient, through the run's retry budget. Each part (descriptions,
tags, owners, the data model, tests) can be switched off. A part OM refuses with 403 is switched
off for the rest of the run with one WARNING naming the role to add, and the other parts go on;
any other refusal of one write (400, 404) is one WARNING and the rest goes on. A dry run only
plans (reads still happen). Timeouts and 5xx are the budget's: they end the batch as usual.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from http import HTTPStatus
from typing import Any, Final, TypeVar

from dbt_oml.config import truthy
from dbt_oml.errors import ConfigError, TerminalDeliveryError
from dbt_oml.om.client import OpenMetadataClient, Reply
from dbt_oml.redaction import mask

logger = logging.getLogger(__name__)
T = TypeVar("T")

PARTS: Final = ("descriptions", "tags", "owners", "data_model", "tests")
#: What to give the bot when OM refuses a part (ref §9.8: both bot roles allow all of it).
ROLE: Final[Mapping[str, str]] = {
    "descriptions": "IngestionBotRole or LineageBotRole (EditDescription on tables)",
    "tags": "IngestionBotRole (Create on tags; EditTags on tables)",
    "owners": "IngestionBotRole or LineageBotRole (EditOwners on tables)",
    "data_model": "IngestionBotRole or LineageBotRole (EditAll on tables)",
    "tests": "IngestionBotRole (Create on test definitions; EditTests on tables)",
}


class PartDeniedError(Exception):
    """OM refused a part with 403 (already logged): the caller stops that part."""


@dataclass(slots=True)
class DbtCounts:
    """What dbt metadata a run wrote (a re-run with nothing new: all zero)."""

    descriptions: int = 0
    tags: int = 0
    owners: int = 0
    data_models: int = 0
    test_cases: int = 0
    results: int = 0

    def line(self, parts: set[str]) -> str:
        """`descriptions 12, tags 4, ...` for the parts switched on.

        >>> DbtCounts(descriptions=2, results=1).line({"descriptions", "tests"})
        'descriptions 2, test cases 0, results 1'
        """
        part_of = {"data_models": "data_model", "test_cases": "tests", "results": "tests"}
        return ", ".join(
            f"{f.name.replace('_', ' ')} {getattr(self, f.name)}"
            for f in fields(self)
            if part_of.get(f.name, f.name) in parts
        )


class Session:
    """One per transport: the parts switched on, the plan, the counts, what was said once."""

    def __init__(
        self,
        client: OpenMetadataClient,
        *,
        call: Callable[[Callable[[], Any]], Any],
        parts: Mapping[str, bool],
    ) -> None:
        self.client = client
        self._call = call
        self.enabled = {p for p in PARTS if parts.get(p, True)}
        self.parts = set(self.enabled)
        self.dry_run = False
        self.plan: list[str] = []
        self.counts = DbtCounts()
        self.seen = False
        self._said: set[str] = set()

    def on(self, part: str) -> bool:
        return part in self.parts

    def call(self, part: str, action: Callable[[], T]) -> T:
        """`action()` through the retry budget; a 403 switches the part off (PartDeniedError)."""
        try:
            return self._call(action)  # type: ignore[no-any-return]
        except TerminalDeliveryError as e:
            if e.status != HTTPStatus.FORBIDDEN:
                raise
            self.parts.discard(part)
            hint = e.hint or f"give the bot {ROLE[part]}"
            self.say(
                f"OpenMetadata refused dbt {part.replace('_', ' ')} ({e.reason}); {hint}. "
                "The other parts go on.",
                level=logging.WARNING,
            )
            raise PartDeniedError(part) from e

    def read(
        self, part: str, collection: str, fqn: str, *, fields: str | None = None
    ) -> dict[str, Any] | None:
        return self.call(part, lambda: self.client.get_by_name(collection, fqn, fields=fields))

    def write(self, part: str, method: str, path: str, body: Any, what: str) -> Reply | None:
        """Plan the write; in a dry run that is all (None). Else send it: the reply (2xx, or a
        refusal already logged once; 409 is the caller's)."""
        self.plan.append(f"{method} /api/v1/{path.split('?', maxsplit=1)[0]} {what}")
        if self.dry_run:
            return None
        if method == "PATCH":
            reply = self.call(part, lambda: self.client.patch(path, body))
        else:
            reply = self.call(
                part, lambda: self.client.request(method, f"/api/v1/{path}", json=body)
            )
        if not reply.ok and reply.status != HTTPStatus.CONFLICT:
            self.say(
                f"OpenMetadata refused {method} {what}: {reply.status} {mask(reply.message)}",
                level=logging.WARNING,
            )
        return reply

    def say(self, message: str, *, level: int = logging.INFO) -> None:
        """Log a line once per transport."""
        if message not in self._said:
            self._said.add(message)
            logger.log(level, "%s", message)


def dbt_parts(value: Any) -> dict[str, bool]:
    """`dbt_metadata`: parts to booleans (strings from the environment too), that as JSON text,
    or `true`/`false` for every part.

    >>> dbt_parts({"tests": "false"})["tests"], dbt_parts("false")["tags"]
    (False, False)
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text in {"true", "false", "1", "0", "yes", "no", "on", "off"}:
            return dict.fromkeys(PARTS, text in {"true", "1", "yes", "on"})
        value = _json(value) if text.startswith("{") else None
    if not isinstance(value, Mapping):
        raise ConfigError(
            key="transport.dbt_metadata",
            source="openmetadata transport",
            reason="is not a mapping of parts to true/false",
            hint="e.g. {tests: false}; parts: " + ", ".join(PARTS),
        )
    unknown = sorted(set(value) - set(PARTS))
    if unknown:
        raise ConfigError(
            key=f"transport.dbt_metadata.{unknown[0]}",
            source="openmetadata transport",
            reason="unknown part",
            hint="valid parts: " + ", ".join(PARTS),
        )
    return {p: _true(value.get(p, True)) for p in PARTS}


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            key="transport.dbt_metadata", source="openmetadata transport", reason=f"bad JSON ({e})"
        ) from e


def _true(value: object) -> bool:
    """A boolean, or its text as the environment gives it (`"false"`, `"0"`, ...)."""
    if isinstance(value, str):
        return truthy(value)
    return bool(value)
