"""The explorer page: one file, the lineage document inside it unchanged, nothing fetched (the
renderer alone, and `dbt-oml lineage --html` on the mini artifacts, without a browser)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dbt_oml.cli import ExitCode, main
from dbt_oml.explorer import render
from tests.conftest import PROJECT


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


def test_cli_html_is_self_contained_and_embeds_the_json_document(
    tmp_path: Path,
    mini_target: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`dbt-oml lineage --json --html FILE` on the mini artifacts (no dbt run, no browser): the
    page references nothing outside itself and carries exactly the document `--json` prints."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    page = tmp_path / "out" / "lineage.html"
    project = ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    line = ["lineage", "--json", "--html", str(page), *project, "--target-path", str(mini_target)]
    assert main(line) == ExitCode.SUCCESS
    out = capsys.readouterr()
    assert f"explorer written to {page}" in out.err
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text.replace('http-equiv="Content-Security-Policy"', "")
    assert "https://" not in text
    assert not re.search(r"""(src|href)\s*=""", text)  # no script, style or image by reference
    assert "<link" not in text
    assert "default-src 'none'" in text
    (data,) = re.findall(r'<script type="application/json" id="lineage-data">(.*?)</script>', text)
    embedded = json.loads(data)
    assert embedded == json.loads(out.out)
    ids = {n["id"] for n in embedded["graph"]["nodes"]}
    assert {"model.jaffle_oml.stg_web_events", "file:data/web_events.parquet"} <= ids
