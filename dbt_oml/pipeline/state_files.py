"""dbt-oml's own files in dbt's target directory (`target/dbt_oml/`): node start times."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from dbt_oml.artifacts import parse_time
from dbt_oml.dbt.runner import DbtContext

#: dbt-oml's own files inside dbt's target directory.
STATE_DIR = "dbt_oml"
NODE_STARTS = "node_starts.json"


def write_node_starts(ctx: DbtContext, starts: Mapping[str, datetime]) -> None:
    folder = ctx.target_path / STATE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "invocation_id": ctx.invocation_id,
        "node_starts": {k: v.isoformat() for k, v in starts.items()},
    }
    (folder / NODE_STARTS).write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")


def read_node_starts(target: Path, invocation_id: str | None) -> dict[str, datetime]:
    """Node start times recorded live by `dbt-oml build`, if they belong to this invocation."""
    try:
        doc = json.loads((target / STATE_DIR / NODE_STARTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict) or doc.get("invocation_id") != invocation_id:
        return {}
    starts = {k: parse_time(v) for k, v in (doc.get("node_starts") or {}).items()}
    return {k: v for k, v in starts.items() if v is not None}
