"""The dbt tab's columns when the schema is partial: never fewer, never blanker, than OM holds.

Pure. A partial schema (the YAML's declared columns, e.g. an `emit` without catalog.json) knows
some columns and maybe no types; the data model OM holds (from an earlier, complete run) knows
more. Sending ours alone would shrink the dbt tab (5 columns to 1, types UNKNOWN): instead the
held columns stay, in their order, each with what ours adds; ours that OM lacks come after.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dbt_oml.om.types import TYPE_FIELDS


def kept_columns(held: Any, ours: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The columns to send: `held` (OM's dataModel columns) merged with `ours`, positions anew.

    >>> held = [{"name": "id", "dataType": "INT"}, {"name": "email", "dataType": "STRING"}]
    >>> ours = [{"name": "ID", "dataType": "UNKNOWN"}]
    >>> [(c["name"], c["dataType"]) for c in kept_columns(held, ours)]
    [('id', 'INT'), ('email', 'STRING')]
    """
    if not isinstance(held, list) or not held:
        return [dict(c) for c in ours]
    by_name = {str(c.get("name")).lower(): c for c in ours}
    out: list[dict[str, Any]] = []
    for column in held:
        if not isinstance(column, Mapping) or not column.get("name"):
            continue
        kept = {k: v for k, v in column.items() if k != "fullyQualifiedName"}  # OM sets it
        mine = by_name.pop(str(column["name"]).lower(), None)
        if mine is not None:
            known_type = mine.get("dataType") not in (None, "UNKNOWN")
            kept.update(
                {
                    k: v
                    for k, v in mine.items()
                    if v not in (None, "", [])
                    and (known_type or k not in TYPE_FIELDS)
                    and k != "name"
                }
            )
        out.append(kept)
    out += [dict(c) for c in ours if str(c.get("name")).lower() in by_name]
    for position, column in enumerate(out, start=1):
        column["ordinalPosition"] = position
    return out
