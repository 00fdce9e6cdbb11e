"""Shared reading of dbt's JSON artifacts: load a file, check its major schema version, and the
tolerant coercions (a wrong type reads as empty) that the manifest, run-results and catalog
readers share.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from dbt_oml.artifacts.views import Column
from dbt_oml.errors import ArtifactError

#: The newest major schema version of each artifact that dbt_oml understands.
SUPPORTED: dict[str, range] = {
    "manifest": range(2, 13),
    "run-results": range(2, 7),
    "catalog": range(1, 2),
}
_VERSION = re.compile(r"/(manifest|run-results|catalog)/v(\d+)\.json$")


def load_document(path: Path, kind: str) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ArtifactError(
            path=str(path), reason="not found", hint="run dbt first, or pass --target-path"
        ) from None
    except OSError as e:
        raise ArtifactError(path=str(path), reason=f"cannot be read ({e.strerror})") from e
    except MemoryError:
        raise _too_large(path, kind) from None
    try:
        doc = json.loads(raw)
    except MemoryError:
        raise _too_large(path, kind) from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        why = "nested too deep" if isinstance(e, RecursionError) else str(e)
        raise ArtifactError(
            path=str(path),
            reason=f"is not valid JSON ({why})",
            hint=f"re-run dbt to rewrite the {kind}",
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
        raise ArtifactError(path=str(path), reason=f"is not a dbt {kind} (no metadata object)")
    _check_version(path, kind, doc["metadata"].get("dbt_schema_version"))
    return doc


def _too_large(path: Path, kind: str) -> ArtifactError:
    return ArtifactError(
        path=str(path),
        reason="is too large to load (out of memory)",
        hint=f"give dbt-oml more memory, or re-run dbt to rewrite the {kind}",
    )


def _check_version(path: Path, kind: str, url: object) -> None:
    match = _VERSION.search(url) if isinstance(url, str) else None
    if match is None or match.group(1) != kind:
        raise ArtifactError(
            path=str(path), reason=f"has no {kind} dbt_schema_version (found {url!r})"
        )
    version = int(match.group(2))
    if version not in SUPPORTED[kind]:
        supported = SUPPORTED[kind]
        raise ArtifactError(
            path=str(path),
            reason=f"{kind} schema v{version} is not supported "
            f"(dbt-oml reads v{supported.start}-v{supported.stop - 1})",
            hint="upgrade dbt-oml" if version >= supported.stop else "upgrade dbt",
        )


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_text(value: object) -> str | None:
    return value if isinstance(value, str) and value != "" else None


def read_columns(raw: object) -> tuple[Column, ...]:
    if not isinstance(raw, dict):
        return ()
    cols = []
    for key, col in raw.items():
        if not isinstance(col, dict):
            continue
        index = col.get("index")
        # catalog.json columns (thousands) have neither tags, meta nor config: skip their parsing
        plain = "tags" not in col and "meta" not in col and "config" not in col
        name = as_text(col.get("name"))
        kind = as_text(col.get("data_type")) or as_text(col.get("type"))
        cols.append(
            Column(
                # the document's key where equal: the JSON reader makes one string of a key
                # however often it recurs (`id` in a thousand relations); a value is a new one
                name=str(key) if not name or name == key else name,
                type=sys.intern(kind) if kind is not None else None,  # a few types, 51,000 times
                description=as_text(col.get("description")) or as_text(col.get("comment")),
                index=index if isinstance(index, int) else None,
                tags=() if plain else column_tags(col),
                meta=() if plain else as_pairs(_column_meta(col)),
            )
        )
    if any(c.index is not None for c in cols):
        cols.sort(key=lambda c: c.index if c.index is not None else 1 << 30)
    return tuple(cols)


def column_tags(raw: dict[str, Any]) -> tuple[str, ...]:
    """A column's dbt tags (its own and its config's), in order, once each."""
    found = [*as_list(raw.get("tags")), *as_list(as_dict(raw.get("config")).get("tags"))]
    return tuple(dict.fromkeys(str(t) for t in found if isinstance(t, str) and t))


def as_pairs(raw: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        return ()
    return tuple(
        (str(k), v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))
        for k, v in raw.items()
        if v is not None
    )


def _column_meta(col: dict[str, Any]) -> dict[str, Any]:
    """A column's meta: its config's, overridden by its own."""
    return {**as_dict(as_dict(col.get("config")).get("meta")), **as_dict(col.get("meta"))}
