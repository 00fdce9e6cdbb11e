"""The explorer page: one file, the lineage document inside it unchanged, nothing fetched."""

from __future__ import annotations

import json
import re

from dbt_oml.explorer import render


def _doc() -> dict[str, object]:
    node = {
        "id": "model.p.m",
        "kind": "model",
        "name": "m</script><script>alert(1)</script>",
        "relation": "w.m.m",
        "columns": ["a"],
        "opaque": None,
        "path": None,
        "materialized": "view",
    }
    return {"version": 1, "model": None, "graph": {"nodes": [node], "edges": [], "rows": []}}


def test_the_page_holds_the_document_and_its_own_script() -> None:
    page = render(_doc())
    assert "__DATA__" not in page
    assert "__SCRIPT__" not in page
    (data,) = re.findall(r'<script type="application/json" id="lineage-data">(.*?)</script>', page)
    assert json.loads(data) == _doc()
    assert page.count("</script>") == 2  # the data's own text cannot close its element
    assert "function trace(" in page
    assert ".box" in page


def test_nothing_is_fetched() -> None:
    page = render(_doc())
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "default-src 'none'" in page
    assert "https://" not in page
