"""dbt-oml's and openlineage-python's YAML files, read with one clear error per way they fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dbt_oml.errors import ConfigError


def read_file(path: Path) -> dict[str, Any]:
    """A YAML mapping from `path`; ConfigError when missing, unreadable or not a mapping."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(key="config", source=str(path), reason="file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(key="config", source=str(path), reason=f"cannot be read ({e})") from e
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise ConfigError(key="config", source=str(path), reason=f"is not valid YAML{line}") from e
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(key="config", source=str(path), reason="must be a mapping of settings")
    return doc
