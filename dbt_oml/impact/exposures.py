"""dbt exposures (dashboards, notebooks, applications that use models) from manifest.json.

Pure apart from reading the one file it is given; raw dicts stay here, like the artifacts package.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt_oml.errors import ArtifactError


@dataclass(frozen=True, slots=True, kw_only=True)
class Exposure:
    unique_id: str
    name: str
    type: str
    owner: str
    url: str | None
    depends_on: tuple[str, ...]


def exposures_of(doc: dict[str, Any]) -> tuple[Exposure, ...]:
    """The exposures of a parsed manifest.json.

    >>> exposures_of({"exposures": {"exposure.p.d": {"name": "d", "type": "dashboard",
    ...     "owner": {"email": "a@b"}, "depends_on": {"nodes": ["model.p.m"]}}}})[0].depends_on
    ('model.p.m',)
    """
    out = []
    raw = doc.get("exposures")
    for uid, item in (raw if isinstance(raw, dict) else {}).items():
        if not isinstance(item, dict):
            continue
        owner = _obj(item.get("owner"))
        nodes = _obj(item.get("depends_on")).get("nodes")
        nodes = nodes if isinstance(nodes, list) else []
        out.append(
            Exposure(
                unique_id=str(uid),
                name=str(item.get("label") or item.get("name") or uid),
                type=str(item.get("type") or "exposure"),
                owner=str(owner.get("email") or owner.get("name") or ""),
                url=item.get("url") if isinstance(item.get("url"), str) else None,
                depends_on=tuple(n for n in nodes if isinstance(n, str)),
            )
        )
    return tuple(sorted(out, key=lambda e: e.unique_id))


def _obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def read_exposures(path: Path) -> tuple[Exposure, ...]:
    """The exposures of manifest.json at `path`.

    Raises:
        ArtifactError: the file is missing or not JSON.
    """
    try:
        doc = json.loads(path.read_bytes())
    except OSError as e:
        raise ArtifactError(path=str(path), reason=f"cannot be read ({e.strerror})") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ArtifactError(path=str(path), reason=f"is not valid JSON ({e})") from e
    return exposures_of(doc) if isinstance(doc, dict) else ()
