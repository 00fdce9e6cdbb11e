"""A ModelLineage as compact JSON and back (the disk cache's entries).

Pure: distinct sources and transformations are written once, edges as indexes into them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from dbt_oml.lineage.types import ColumnEdge, Lasting, ModelLineage, SourceColumn, Transformation


def lineage_to_json(value: ModelLineage) -> str:
    """Compact JSON: distinct sources and transformations once, edges as indexes into them."""
    sources: dict[SourceColumn, int] = {}
    transforms: dict[Transformation, int] = {}

    def pairs(items: tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...]) -> list[Any]:
        return [
            [
                sources.setdefault(s, len(sources)),
                [transforms.setdefault(t, len(transforms)) for t in ts],
            ]
            for s, ts in items
        ]

    columns = [[e.output, e.expression, pairs(e.inputs)] for e in value.columns]
    dataset = pairs(value.dataset)
    doc = {"s": list(sources), "t": list(transforms), "c": columns, "d": dataset}
    return json.dumps(doc, separators=(",", ":"))


def outcome_to_json(value: ModelLineage | Lasting) -> str:
    """A model's lineage, or its lasting verdict (`{"o": reason}`), as a cache entry."""
    if isinstance(value, Lasting):
        return json.dumps({"o": str(value)}, separators=(",", ":"))
    return lineage_to_json(value)


def outcome_from_json(text: str) -> ModelLineage | Lasting:
    """The entry `outcome_to_json` wrote (ValueError, KeyError, TypeError: a damaged one)."""
    if text.startswith('{"o":'):
        reason = json.loads(text)["o"]
        if not isinstance(reason, str):
            raise TypeError("an opaque entry's reason is not text")
        return Lasting(reason)
    return lineage_from_json(text)


def lineage_from_json(text: str) -> ModelLineage:
    doc = json.loads(text)
    # one string per name (json makes one per occurrence): a run holds every model's lineage
    intern = sys.intern
    sources = [SourceColumn._make(map(intern, s)) for s in doc["s"]]
    transforms = [Transformation(intern(k), intern(sub), m, d) for k, sub, m, d in doc["t"]]

    def pairs(items: list[Any]) -> tuple[tuple[SourceColumn, tuple[Transformation, ...]], ...]:
        return tuple((sources[s], tuple([transforms[t] for t in ts])) for s, ts in items)

    return ModelLineage(
        columns=tuple(
            ColumnEdge(output=intern(o), inputs=pairs(i), expression=x) for o, x, i in doc["c"]
        ),
        dataset=pairs(doc["d"]),
    )
