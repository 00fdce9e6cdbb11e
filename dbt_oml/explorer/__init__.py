"""The column-lineage explorer: one self-contained HTML file (no network, no CDN) holding the
`dbt-oml lineage --json` document and the page's own small script and style (package data in
dbt_oml/explorer/).

Reads only the package's template files; the caller writes the page.

Pure: must not import dbt, I/O libraries, the pipeline or the CLI.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from importlib.resources import files
from typing import Any


def _template(name: str) -> str:
    return files("dbt_oml").joinpath("explorer", name).read_text(encoding="utf-8")


def embed_json(document: Mapping[str, Any]) -> str:
    """JSON safe inside `<script type="application/json">`: no `</script>`, no `<!--`.

    >>> embed_json({"sql": "</script><!--"})
    '{"sql":"\\\\u003c/script>\\\\u003c!--"}'
    """
    return json.dumps(document, separators=(",", ":")).replace("<", "\\u003c")


def render(document: Mapping[str, Any]) -> str:
    """The explorer page for a lineage document (`LineageView` answer's `document`)."""
    title = document.get("model") or "project"
    page = _template("explorer.html")
    for marker, value in (
        ("__TITLE__", html.escape(str(title))),
        ("__STYLE__", _template("explorer.css")),
        ("__SCRIPT__", _template("explorer.js")),
        ("__DATA__", embed_json(document)),
    ):
        page = page.replace(marker, value, 1)
    return page
