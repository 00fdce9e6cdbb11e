"""OpenLineage events to JSON in one pass: what `Serde.to_dict`/`to_json` give, 3-5x faster.

Pure. openlineage-python's `Serde` copies an event with `attr.asdict`, then walks the copy again to
drop nulls and enums; at 2,000 models that was most of `dbt-oml emit`. Here one walk reads the
attrs fields (names cached per class) and builds the finished dict, equal to `Serde.to_dict`.

The JSON is that dict with sorted keys, as `Serde.to_json` writes it, but compact and in UTF-8
(orjson, where it installs: 6x the standard library's encoder, a fifth of a warm emit's main
process). So it equals `Serde.to_json`'s as JSON, not byte for byte: no space after `:` and `,`,
and a character outside ASCII as itself, not as a `\\u` escape. A value orjson refuses (a lone
surrogate, an integer beyond 64 bits) gets the standard library's encoder, in the same compact
form; with an indent (the file transport's debug mode) it is `Serde.to_json`'s byte for byte.
Tests hold all of it to that.
"""

from __future__ import annotations

import datetime
import functools
import json
import uuid
from collections.abc import Callable
from enum import Enum
from typing import Any

import attr
from openlineage.client.generated.base import DatasetFacet
from openlineage.client.generated.column_lineage_dataset import (
    ColumnLineageDatasetFacet,
    Transformation,
)

try:
    import orjson
except ImportError:  # no wheel for this Python (not CPython): the standard library's encoder
    orjson = None  # type: ignore[assignment]

_PLAIN = frozenset({str, int, float, bool})


@functools.cache  # attrs classes are few and never change: a pure function, remembered
def _fields(cls: type) -> tuple[str, ...] | None:
    return tuple(a.name for a in attr.fields(cls)) if attr.has(cls) else None


@functools.cache
def _shared(cls: type) -> bool:
    """Whether objects of `cls` may be shared by many events: a node's dataset facets (built
    once, never changed, events.datasets) and column lineage's transformations (a handful,
    events.facets). Not a column lineage facet: one event's own."""
    if issubclass(cls, Transformation):
        return True
    return issubclass(cls, DatasetFacet) and not issubclass(cls, ColumnLineageDatasetFacet)


class FacetMemo:
    """Shared objects (`_shared`: dataset facets, column lineage's transformations) already
    turned into dicts, by identity, for a caller that dumps each dict at once (the dicts are
    shared): a file of events converts a facet once while it is recent.

    Holds at most `size` facets, first in first out (1,024: 2 MiB; all 8,600 facets of 2,000
    models would hold 15 MiB for little more). Each entry keeps its facet alive, so its id is
    never another object's while it is remembered.
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._entries: dict[int, tuple[object, dict[str, Any]]] = {}
        self.convert = _converter(self)

    def get(self, obj: object) -> dict[str, Any] | None:
        found = self._entries.get(id(obj))
        return found[1] if found is not None and found[0] is obj else None

    def put(self, obj: object, doc: dict[str, Any]) -> None:
        entries = self._entries
        entries[id(obj)] = (obj, doc)
        if len(entries) > self.size:
            del entries[next(iter(entries))]


def _converter(memo: FacetMemo | None) -> Callable[[Any], Any]:  # noqa: C901 - the ladder below
    """`_value`, remembering shared facets in `memo` when one is given."""

    # one branch per kind of value, as Serde has; inline on purpose: the hot loop of every emit
    # (benchmarks/), where helper calls per value cost measurably
    def _value(obj: Any) -> Any:  # noqa: C901, PLR0912 - Serde's ladder, hot loop
        cls: type = type(obj)
        if cls in _PLAIN or obj is None:
            return obj
        names = _fields(cls)
        if names is not None:
            remember = memo is not None and _shared(cls)
            if remember and (known := memo.get(obj)) is not None:  # type: ignore[union-attr]
                return known
            out = {}
            for name in names:
                value = getattr(obj, name)
                if value is None:
                    continue
                if type(value) not in _PLAIN:
                    value = _value(value)
                    if value is None:
                        continue
                out[name] = value
            if remember:
                memo.put(obj, out)  # type: ignore[union-attr]
            return out
        if cls is list or cls is tuple or isinstance(obj, (list, tuple, set, frozenset)):
            items = []
            for item in obj:
                if item is None:
                    continue
                if type(item) in _PLAIN:
                    items.append(item)
                    continue
                value = _value(item)
                if value is None or value == {}:
                    continue
                items.append(value)
            return items
        if isinstance(obj, dict):
            out = {}
            for key, item in obj.items():
                if item is None:
                    continue
                value = item if type(item) in _PLAIN else _value(item)
                if value is not None:
                    out[key] = value
            return out
        return _scalar(obj)

    return _value


def _scalar(obj: Any) -> Any:
    """A value that is no attrs object, list or dict, as Serde gives it."""
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, datetime.date):
        return obj.isoformat()
    if isinstance(obj, uuid.UUID):
        return str(obj)
    if type(obj).__name__ == "int64":  # numpy, as Serde allows
        return int(obj)
    return obj


_value = _converter(None)


def to_dict(event: Any, *, memo: FacetMemo | None = None) -> dict[str, Any]:
    """The event (any attrs object of the client) as `Serde.to_dict` gives it; with `memo`,
    its shared dataset facets' dicts may be those of earlier events (dump it at once)."""
    out = (_value if memo is None else memo.convert)(event)
    if not isinstance(out, dict):
        raise TypeError(f"not an OpenLineage event (an attrs object): {type(event).__qualname__}")
    return out


def _unserialisable(o: object) -> str:
    return f"<<non-serializable: {type(o).__qualname__}>>"


#: The standard library's encoder in the compact form (no circular-reference check: a dict from
#: `to_dict` is a tree); ASCII, so that a lone surrogate is an escape, not an encoding error.
_COMPACT = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), default=_unserialisable, check_circular=False
)
#: orjson's options: sorted keys; a datetime or dataclass goes to `default`, as json's would
_ORJSON = (
    orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
    if orjson is not None
    else 0
)


def dumps_bytes(doc: dict[str, Any]) -> bytes:
    """A dict from `to_dict` as compact JSON in UTF-8, keys sorted (the module's docstring)."""
    if orjson is not None:
        try:
            return orjson.dumps(doc, default=_unserialisable, option=_ORJSON)
        except orjson.JSONEncodeError:  # a lone surrogate, an integer beyond 64 bits
            pass
    return _COMPACT.encode(doc).encode()


def dumps(doc: dict[str, Any], *, indent: int | None = None) -> str:
    """`dumps_bytes` as text; with `indent`, `Serde.to_json(..., indent=indent)`'s very text."""
    if indent is not None:
        return json.dumps(doc, sort_keys=True, default=_unserialisable, indent=indent)
    return dumps_bytes(doc).decode()


def to_json_bytes(event: Any, *, memo: FacetMemo | None = None) -> bytes:
    """The event as compact JSON in UTF-8 (`dumps_bytes`)."""
    return dumps_bytes(to_dict(event, memo=memo))


def to_json(event: Any, *, indent: int | None = None, memo: FacetMemo | None = None) -> str:
    """The event as `dumps` writes it: equal to `Serde.to_json(event)` as JSON."""
    return dumps(to_dict(event, memo=memo), indent=indent)
