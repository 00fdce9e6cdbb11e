"""Read catalog.json (the real columns and types of every relation), required or optional."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbt_oml.artifacts.reading import load_document, read_columns
from dbt_oml.artifacts.views import Catalog, Column, parse_time
from dbt_oml.errors import ArtifactError


def read_catalog(path: Path) -> Catalog:
    """Read catalog.json (schema v1): the real columns and types of every relation."""
    return catalog_from_document(load_document(path, "catalog"), path)


def catalog_from_document(doc: dict[str, Any], path: Path) -> Catalog:
    """A catalog.json document, already loaded (or about to be written: dbt.catalog_file), as
    the Catalog `read_catalog` reads from the file."""
    columns: dict[str, tuple[Column, ...]] = {}
    for section in ("nodes", "sources"):
        entries = doc.get(section)
        entries = {} if entries is None else entries
        if not isinstance(entries, dict):
            raise ArtifactError(
                path=str(path),
                reason=f"`{section}` is a {type(entries).__name__}, not an object",
                hint="re-run `dbt docs generate`",
            )
        for unique_id, entry in entries.items():
            if isinstance(entry, dict):
                columns[str(unique_id)] = read_columns(entry.get("columns"))
    generated = parse_time(doc["metadata"].get("generated_at"))
    return Catalog(path=str(path), generated_at=generated, columns=columns)


def read_optional_catalog(path: Path) -> tuple[Catalog | None, tuple[str, ...]]:
    """catalog.json if it is there and readable; an unreadable one is a warning, not an error.

    The catalog only improves schema facets (real columns and types); without it the declared
    columns are used, so a corrupt or foreign file must never cost the run its events.
    """
    if not path.exists():
        return None, ()
    try:
        return read_catalog(path), ()
    except ArtifactError as e:
        return None, (f"{e}; schema facets use the declared columns",)
