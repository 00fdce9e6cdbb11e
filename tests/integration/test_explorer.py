"""The HTML explorer in a real browser (Debian's chromium, headless): the bundled project's page
with a column in the URL fragment, its highlighted upstream and downstream columns and each
box's catalog read from the rendered DOM, a screenshot kept as the test's artifact (in
$DBT_OML_TEST_ARTIFACTS, default tests/.artifacts/, gitignored; its path recorded as the
`explorer_screenshot` property); and a generated project past the full-layout limit opening in
focus mode (its load time at 2,000 models is benchmarks/explorer_bench.py's). Scrolling to the
selection, the neighbourhood control, namespaces and box widths, driven through the page:
tests/integration/test_explorer_large.py.

That the page is self-contained (nothing fetched, the --json document inside) needs no browser:
tests/unit/test_explorer.py."""

from __future__ import annotations

import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import ROOT, CliRun, run_cli
from tests.support.browser import CHROMIUM, HEADLESS

pytestmark = pytest.mark.integration

#: Read at import: the autouse fixture clears DBT_OML_* before each test runs.
ARTIFACTS = Path(os.environ.get("DBT_OML_TEST_ARTIFACTS") or ROOT / "tests" / ".artifacts")
STG = "model.jaffle_oml.stg_customers"
CORE = "model.jaffle_oml.core_customers"


@pytest.fixture
def chromium(tmp_path: Path) -> list[str]:
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium; .ci/run installs it)")
    return [CHROMIUM, *HEADLESS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]


class _Columns(HTMLParser):
    """Every column row (`div.col`) and box (`div.box`) of the rendered page."""

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[tuple[set[str], str, str]] = []
        self.boxes: dict[str, set[str]] = {}
        self.attrs: dict[str, str] = {}
        self._reason = False
        self.reasons: list[str] = []
        self._box = ""
        self._catalog = False
        self.catalogs: dict[str, str] = {}
        """node id -> the catalog its box shows"""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        classes = set(found.get("class", "").split())
        if tag == "html":
            self.attrs = found
        if tag == "div" and "col" in classes:
            self.columns.append((classes, found["data-node"], found["data-column"]))
        if tag == "div" and "box" in classes:
            self.boxes[found["data-node"]] = classes
            self._box = found["data-node"]
        self._reason = tag == "div" and "reason" in classes
        self._catalog = tag == "span" and "catalog" in classes

    def handle_data(self, data: str) -> None:
        if self._catalog:
            self.catalogs[self._box] = data
            self._catalog = False
        if self._reason:
            self.reasons.append(data)
            self._reason = False

    def marked(self, mark: str) -> set[tuple[str, str]]:
        return {(node, column) for classes, node, column in self.columns if mark in classes}


def _dom(chromium: list[str], page: Path, fragment: str) -> _Columns:
    proc = subprocess.run(
        [*chromium, "--dump-dom", f"{page.as_uri()}#{fragment}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    parsed = _Columns()
    parsed.feed(proc.stdout)
    return parsed


def test_a_column_in_the_fragment_highlights_its_lineage(
    built: CliRun, tmp_path: Path, chromium: list[str], record_property: pytest.RecordProperty
) -> None:
    page = tmp_path / "lineage.html"
    run = run_cli(["lineage", "--html", str(page), "--profiles-dir", "."], cwd=built.project)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"explorer written to {page}" in run.stderr

    dom = _dom(chromium, page, "column=stg_customers.email")
    assert dom.marked("hl-focus") == {(STG, "email")}
    assert dom.marked("hl-up") == {("source.jaffle_oml.crm.customers", "Email")}
    assert dom.marked("hl-down") == {
        (CORE, "customer_key"),
        (CORE, "email"),
        ("model.jaffle_oml.dim_customers", "customer_key"),
        ("model.jaffle_oml.fct_orders", "customer_key"),
        ("snapshot.jaffle_oml.customers_snapshot", "email"),
    }
    assert int(dom.attrs["data-loaded-ms"]) >= 0
    # each box names its catalog (the attach alias: crm plays the source server, dw the target)
    assert set(dom.catalogs.values()) == {"crm", "warehouse", "dw"}
    assert set(dom.catalogs) == {n for n in dom.boxes if not n.startswith("file:")}
    assert (dom.catalogs["source.jaffle_oml.crm.customers"], dom.catalogs[CORE]) == (
        "crm",
        "warehouse",
    )

    seed = _dom(chromium, page, "column=model.jaffle_oml.dim_customers.region")
    assert seed.marked("hl-up") == {
        (CORE, "region"),
        ("model.jaffle_oml.stg_country_codes", "region"),
        ("seed.jaffle_oml.country_codes", "region"),
        ("file:seeds/country_codes.csv", "region"),
    }
    assert seed.marked("hl-down") == set()
    assert "opaque" in seed.boxes["model.jaffle_oml.core_column_profile"]
    assert any(r.startswith("opaque: SQL does not parse") for r in seed.reasons)

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "explorer.png"
    shot.unlink(missing_ok=True)  # a screenshot left by an earlier run must not pass for this one
    proc = subprocess.run(
        [
            *chromium,
            "--window-size=1400,900",
            f"--screenshot={shot}",
            f"{page.as_uri()}#column=dim_customers.customer_key",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
    record_property("explorer_screenshot", str(shot))


#: Above the page's FULL_LIMIT (150 relations): the page lays out a neighbourhood, not everything
FOCUS_MODELS = 200


def test_a_large_project_opens_in_focus_mode(tmp_path: Path, chromium: list[str]) -> None:
    """A generated project past the page's full-layout limit: the column in the fragment is
    focused and only its neighbourhood is laid out. Its load time at 2,000 models is measured
    by benchmarks/explorer_bench.py (benchmarks/README.md section 6), never here."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from lineage_gen import generate  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from dbt_oml.artifacts import read_artifacts
    from dbt_oml.explorer import render
    from dbt_oml.lineage.batch import analyse_models, known_columns
    from dbt_oml.lineage.graph import build_graph
    from dbt_oml.lineage.view import LineageView, Query, answer

    artifacts = read_artifacts(generate(tmp_path / "generated", FOCUS_MODELS))
    wanted = {u for u, n in artifacts.manifest.nodes.items() if n.resource_type == "model"}
    result = analyse_models(artifacts, wanted=wanted, dialect="duckdb", workers=1)
    graph = build_graph(
        artifacts.manifest, result.models, opaque=result.opaque, known=known_columns(artifacts)
    )
    assert len(graph.nodes) > 150
    page = tmp_path / "generated.html"
    page.write_text(render(answer(LineageView(graph), Query()).document))
    staging = min(
        (n for n in graph.nodes.values() if n.name.startswith("stg_")), key=lambda n: n.id
    )
    dom = _dom(chromium, page, f"column={staging.name}.{staging.columns[1]}")
    assert dom.marked("hl-focus") == {(staging.id, staging.columns[1])}
    assert dom.marked("hl-down")  # a staging column feeds the layers above it
    assert staging.id in dom.boxes
    assert len(dom.boxes) < len(graph.nodes) / 4  # focus mode: only the neighbourhood laid out


def test_build_writes_the_explorer_next_to_the_events_when_asked(tmp_path: Path) -> None:
    from tests.conftest import RUN_STG_ORDERS, copy_project

    proj = copy_project(tmp_path / "p")
    run = run_cli([*RUN_STG_ORDERS, "--explorer"], cwd=proj)
    assert run.returncode == 0, run.stderr[-3000:]
    page = proj / "target" / "openlineage" / "lineage.html"
    assert f"lineage explorer: {page}" in run.stderr
    text = page.read_text()
    assert "stg_orders" in text
    assert "<script" in text
    assert 'src="http' not in text  # nothing fetched: self-contained
    assert "<link" not in text
    plain = run_cli(RUN_STG_ORDERS, cwd=copy_project(tmp_path / "q"))
    assert not (tmp_path / "q" / "target" / "openlineage" / "lineage.html").exists(), plain.stderr
