"""What dbt-oml asks of a transport beyond openlineage-python's `emit`/`close`, declared.

openlineage-python's Transport only emits and closes. Ours also say what they could not deliver
(`Reporting`), may know columns dbt cannot introspect (`ColumnSource`) and may plan what a
delivery would create (`Planner`). The layers above read these through the functions here, which
look inside a composite transport too, so the contract is never lost behind one.

A transport returns an `Outcome` (the relay's sink) or keeps what it could not deliver through
`delivery.outbox.Keeper`, the one writer of the outbox.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dbt_oml.delivery.emitter import TransportSummary
from dbt_oml.delivery.outbox import Keeper

#: (name, type or None) of each column a table holds
Columns = tuple[tuple[str, str | None], ...]


@dataclass(slots=True)
class Outcome:
    """What became of each event of a `deliver` call (indexes into the events given)."""

    delivered: list[int] = field(default_factory=list)
    #: not taken now; retrying later may help (an input the server could not resolve yet)
    kept: list[tuple[int, str]] = field(default_factory=list)
    #: refused for good (the server's verdict on that event, a 400 for it alone, not a RunEvent)
    rejected: list[tuple[int, str]] = field(default_factory=list)


class Keeping:
    """The half of `Reporting` a transport that keeps through a `Keeper` (`self.kept`) shares."""

    kept: Keeper

    @property
    def undelivered(self) -> int:
        return self.kept.undelivered

    @property
    def outbox(self) -> Path | None:
        return self.kept.outbox


@runtime_checkable
class Reporting(Protocol):
    """A transport that says what it could not deliver, and where it kept it."""

    @property
    def undelivered(self) -> int: ...
    @property
    def outbox(self) -> Path | None: ...
    @property
    def problems(self) -> list[str]: ...
    @property
    def notes(self) -> list[str]: ...


@runtime_checkable
class ColumnSource(Protocol):
    """A transport whose backend holds the columns of tables dbt cannot introspect."""

    def columns_for(self, namespace: str, name: str) -> Columns | None: ...


@runtime_checkable
class Planner(Protocol):
    """A transport that can say, writing nothing, what delivering `events` would create."""

    def plan(self, events: list[dict[str, Any]]) -> list[str]: ...


def members(transport: object) -> Iterator[object]:
    """`transport` itself, or each transport inside a composite (nested ones too)."""
    inner = getattr(transport, "transports", None)
    if isinstance(inner, list | tuple):
        for member in inner:
            yield from members(member)
    else:
        yield transport


def summary(transport: object) -> TransportSummary:
    """What every member of `transport` could not deliver, where it kept it, and its notes."""
    found = TransportSummary()
    for member in members(transport):
        if not isinstance(member, Reporting):
            continue
        found.undelivered += member.undelivered
        found.outbox = found.outbox or member.outbox
        found.problems += [str(p) for p in member.problems]
        found.notes += [str(n) for n in member.notes]
    return found


def column_source(transport: object) -> Callable[[str, str], Columns | None] | None:
    """The first member's `columns_for`, or None when no member knows columns."""
    sources = [m for m in members(transport) if isinstance(m, ColumnSource)]
    if not sources:
        return None

    def columns_for(namespace: str, name: str) -> Columns | None:
        for source in sources:
            found = source.columns_for(namespace, name)
            if found:
                return found
        return None

    return columns_for


def kind_of(transport: object) -> str | None:
    """The `kind` of a transport (openlineage-python's attribute), None when it has none."""
    kind = getattr(transport, "kind", None)
    return kind if isinstance(kind, str) else None


def kinds_in(transport: object) -> set[str]:
    """The kinds of `transport`'s members (a composite: each member's)."""
    return {k for m in members(transport) if (k := kind_of(m)) is not None}
