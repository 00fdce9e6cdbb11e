"""The explorer in a real browser (Debian's chromium, headless) on generated projects either side
of the page's full-layout limit (150 relations): what is selected (by the URL fragment, the
search, a click) is scrolled into the canvas's view; the neighbourhood control lays out only the
selection's neighbourhood; every box says which catalog and server it is on; long names are not
cut. Every check reads the rendered DOM (getBoundingClientRect against the canvas and the window).

Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: NUL-ended
JSON on fds 3 and 4; tests/support/browser.py), so the test needs no websocket
client, driver or node."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.support.browser import CHROMIUM, Browser

pytestmark = pytest.mark.integration

#: Read at import: the autouse fixture clears DBT_OML_* before each test runs.
ARTIFACTS = Path(os.environ.get("DBT_OML_TEST_ARTIFACTS") or ROOT / "tests" / ".artifacts")
#: The page's own limits (explorer.js): full layout up to FULL_LIMIT relations, boxes MAX_W wide.
FULL_LIMIT, MAX_W = 150, 420
#: Generated models: 120 (+ 12 sources = 132 relations, full layout) and 200 (+ 20 = 220, focus).
SIZES = {"full": 120, "focus": 200}
#: Two models renamed: a long name that fits a box, and one longer than any box.
LONG = "int_0003_customer_lifetime_value"
TOO_LONG = "int_0004_" + "customer_lifetime_value_by_region_and_sales_channel_" * 2
SECRET = "hunter2"


#: Where the selection (or any column) is: its rectangle, the canvas's visible part and the
#: window, and where it lies in the canvas's content (what it would take to see it unscrolled).
GEOMETRY = """((node, column) => {
  const canvas = document.getElementById("canvas"), c = canvas.getBoundingClientRect();
  const box = node === null ? document.querySelector(".box.focus")
    : document.querySelector(`.box[data-node="${CSS.escape(node)}"]`);
  const head = box && box.querySelector("h2");
  const target = !box ? null : column === undefined ? box.querySelector(".col.hl-focus") || head
    : column === null ? head : box.querySelector(`.col[data-column="${CSS.escape(column)}"]`);
  if (!target) return null;
  const r = target.getBoundingClientRect();
  return {
    node: box.dataset.node,
    column: target.dataset.column || null,
    selected: box.classList.contains("focus") &&
      (target === head || target.classList.contains("hl-focus")),
    rect: [r.left, r.top, r.right, r.bottom],
    canvas: [c.left, c.top, c.left + canvas.clientWidth, c.top + canvas.clientHeight],
    window: [window.innerWidth, window.innerHeight],
    content: [r.left - c.left + canvas.scrollLeft, r.top - c.top + canvas.scrollTop,
              r.right - c.left + canvas.scrollLeft, r.bottom - c.top + canvas.scrollTop],
    size: [canvas.clientWidth, canvas.clientHeight],
  };
})"""


def _where(browser: Browser, node: str | None = None, column: str | None = "") -> Any:
    """GEOMETRY of the selection (no node), of a box (column None) or of one column."""
    args = [json.dumps(node), "undefined" if column == "" else json.dumps(column)]
    return browser.js(f"{GEOMETRY}({', '.join(args)})")


#: The neighbourhood control set as a user would, firing its change event.
CHOOSE_HOPS = """((hops) => {
  const control = document.getElementById("hops");
  control.value = hops;
  control.dispatchEvent(new Event("change"));
})"""
#: A box's head: its name as shown, whether it fits, the tooltip and the box's width.
HEAD = """((node) => {
  const head = document.querySelector(`.box[data-node="${CSS.escape(node)}"] h2`);
  const name = head.querySelector(".name");
  return {text: name.textContent, fits: name.scrollWidth <= name.clientWidth,
          title: head.title, width: head.parentNode.offsetWidth};
})"""
BOXES = "[...document.querySelectorAll('.box')].map((b) => b.dataset.node)"


def _in_view(geometry: dict[str, Any]) -> bool:
    left, top, right, bottom = geometry["rect"]
    c_left, c_top, c_right, c_bottom = geometry["canvas"]
    width, height = geometry["window"]
    in_canvas = left >= c_left and top >= c_top and right <= c_right and bottom <= c_bottom
    return in_canvas and left >= 0 and top >= 0 and right <= width and bottom <= height


def _off_screen_unscrolled(geometry: dict[str, Any]) -> bool:
    """The element lies outside what the canvas shows at scroll (0, 0)."""
    _, _, right, bottom = geometry["content"]
    width, height = geometry["size"]
    return right > width or bottom > height


@dataclass(frozen=True)
class _Project:
    page: Path
    document: dict[str, Any]
    parents: dict[str, set[str]]
    children: dict[str, set[str]]
    expected: dict[str, tuple[str | None, str]]
    """node id -> (catalog, namespace)"""

    @property
    def nodes(self) -> dict[str, dict[str, Any]]:
        return {n["id"]: n for n in self.document["graph"]["nodes"]}

    def by_name(self, name: str) -> dict[str, Any]:
        (node,) = (n for n in self.nodes.values() if n["name"] == name)
        return node

    def depth(self, node: str, seen: dict[str, int] | None = None) -> int:
        """The longest dependency path from a relation with no parents."""
        seen = {} if seen is None else seen
        if node not in seen:
            ups = self.parents.get(node, ())
            seen[node] = 1 + max((self.depth(p, seen) for p in ups), default=-1)
        return seen[node]

    def deepest(self) -> dict[str, Any]:
        """A model deep down: the longest path from a source, then the most columns."""
        models = [n for n in self.nodes.values() if n["kind"] == "model"]
        return max(models, key=lambda n: (self.depth(n["id"]), len(n["columns"]), n["id"]))

    def tallest(self) -> dict[str, Any]:
        """The model with the most columns (its last column is far down its box)."""
        models = [n for n in self.nodes.values() if n["kind"] == "model"]
        return max(models, key=lambda n: (len(n["columns"]), self.depth(n["id"]), n["id"]))

    def neighbourhood(self, node: str, hops: float) -> set[str]:
        """The page's rule: the node and what is up to `hops` dependency hops up or down."""
        if hops == float("inf") and len(self.nodes) <= FULL_LIMIT:
            return set(self.nodes)
        out = {node}
        for index in (self.parents, self.children):
            frontier, depth = {node}, 0
            while frontier and depth < hops:
                frontier = {far for n in frontier for far in index.get(n, ())} - out
                out |= frontier
                depth += 1
        return out


def _generate(dest: Path, models: int) -> _Project:
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
    from dbt_oml.namespaces import CatalogSpec, resolve_namespaces

    target = generate(dest / "target", models)
    manifest = json.loads((target / "manifest.json").read_text())
    for uid, name in (("model.synth.int_0003", LONG), ("model.synth.int_0004", TOO_LONG)):
        manifest["nodes"][uid]["name"] = name
    (target / "manifest.json").write_text(json.dumps(manifest))
    artifacts = read_artifacts(target)
    wanted = {u for u, n in artifacts.manifest.nodes.items() if n.resource_type == "model"}
    result = analyse_models(artifacts, wanted=wanted, dialect="duckdb", workers=1)
    graph = build_graph(
        artifacts.manifest, result.models, opaque=result.opaque, known=known_columns(artifacts)
    )
    catalogs = [
        CatalogSpec(alias="warehouse", type="duckdb", path="/srv/dbt/warehouse.duckdb"),
        CatalogSpec(
            alias="raw",
            type="postgres",
            path=f"host=pg.internal port=5433 dbname=raw user=dbt password={SECRET}",
        ),
    ]
    namespaces = resolve_namespaces(catalogs, overrides={}).namespaces
    document = answer(LineageView(graph, namespaces=namespaces), Query()).document
    page = dest / "lineage.html"
    page.write_text(render(document), encoding="utf-8")
    parents: dict[str, set[str]] = {}
    children: dict[str, set[str]] = {}
    links = [(e["from"][0], e["to"][0]) for e in document["graph"]["edges"]]
    links += [(r["from"][0], r["to"]) for r in document["graph"]["rows"]]
    links += [(d, n["id"]) for n in document["graph"]["nodes"] for d in n["depends_on"]]
    for a, b in links:
        if a != b:
            children.setdefault(a, set()).add(b)
            parents.setdefault(b, set()).add(a)
    expected = {
        "warehouse": "duckdb:///srv/dbt/warehouse.duckdb",
        "raw": "postgres://pg.internal:5433",
    }
    where = {
        n["id"]: (n["relation"].split(".")[0], expected[n["relation"].split(".")[0]])
        for n in document["graph"]["nodes"]
    }
    return _Project(page, document, parents, children, where)


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, _Project]:
    return {
        mode: _generate(tmp_path_factory.mktemp(f"explorer-{mode}"), models)
        for mode, models in SIZES.items()
    }


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium; .ci/run installs it)")
    tab = Browser(tmp_path_factory.mktemp("chromium") / "profile", viewport=(1280, 720))
    try:
        yield tab
    finally:
        tab.close()


def test_the_projects_sit_either_side_of_the_full_layout_limit(
    projects: dict[str, _Project],
) -> None:
    assert len(projects["full"].nodes) == 132
    assert len(projects["focus"].nodes) == 220


@pytest.mark.parametrize(
    ("mode", "pick", "hops"),
    [("full", "deepest", ""), ("focus", "deepest", "&hops=all"), ("focus", "tallest", "")],
    ids=["full-layout", "focus-all-hops", "focus-tall-box"],
)
def test_a_fragment_column_deep_down_is_scrolled_into_view(
    projects: dict[str, _Project], browser: Browser, mode: str, pick: str, hops: str
) -> None:
    """Far right (a model many layers deep) or far down (the last column of the tallest box)."""
    project = projects[mode]
    deep = project.deepest() if pick == "deepest" else project.tallest()
    column = deep["columns"][-1]
    browser.open(f"{project.page.as_uri()}#column={deep['name']}.{column}{hops}")
    geometry = _where(browser)
    assert (geometry["node"], geometry["column"], geometry["selected"]) == (
        deep["id"],
        column,
        True,
    )
    assert _off_screen_unscrolled(geometry), geometry  # so the page had to scroll to show it
    assert _in_view(geometry), geometry


@pytest.mark.parametrize("mode", SIZES)
def test_the_search_scrolls_to_what_it_finds(
    projects: dict[str, _Project], browser: Browser, mode: str
) -> None:
    project = projects[mode]
    deep = project.tallest()
    column = deep["columns"][-1]
    browser.open(f"{project.page.as_uri()}#model=stg_0000")
    before = _where(browser, deep["id"], column)
    assert before is None or not _in_view(before), before  # not laid out, or out of view
    browser.js("document.getElementById('search').focus()")
    browser.type_and_enter(f"{deep['name']}.{column}")
    geometry = _where(browser)
    assert (geometry["node"], geometry["column"], geometry["selected"]) == (
        deep["id"],
        column,
        True,
    )
    assert _off_screen_unscrolled(geometry), geometry
    assert _in_view(geometry), geometry
    assert browser.js("decodeURIComponent(location.hash)") == f"#column={deep['id']}.{column}"


#: The column rows wholly inside the canvas's view, outside the selected box, lowest last.
VISIBLE_ROWS = """((focus) => {
  const canvas = document.getElementById("canvas"), c = canvas.getBoundingClientRect();
  return [...document.querySelectorAll(".col")].map((row) => [row, row.getBoundingClientRect()])
    .filter(([row, r]) => row.dataset.node !== focus && r.left >= c.left && r.top >= c.top &&
      r.right <= c.left + canvas.clientWidth && r.bottom <= c.top + canvas.clientHeight)
    .sort(([, a], [, b]) => a.bottom - b.bottom || a.left - b.left)
    .map(([row, r]) => ({node: row.dataset.node, column: row.dataset.column,
                         x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2}));
})"""
SCROLL = (
    "[document.getElementById('canvas').scrollLeft, document.getElementById('canvas').scrollTop]"
)


@pytest.mark.parametrize(
    ("mode", "hops", "needs_scroll"),
    [("focus", "", True), ("full", "&hops=1", False)],
    ids=["focus-mode", "full-layout-1-hop"],
)
def test_a_click_keeps_what_it_selects_in_view(
    projects: dict[str, _Project], browser: Browser, mode: str, hops: str, needs_scroll: bool
) -> None:
    """A click on the lowest column in view of another box: the layout changes around the new
    selection (its neighbourhood), and the clicked column is in view after it. In focus mode,
    at the scroll position before the click it would not be: the page scrolled to it."""
    project = projects[mode]
    deep = project.deepest()
    browser.open(f"{project.page.as_uri()}#column={deep['name']}.{deep['columns'][-1]}{hops}")
    target = browser.js(f"{VISIBLE_ROWS}({json.dumps(deep['id'])})")[-1]
    before = _where(browser, target["node"], target["column"])
    left, top = browser.js(SCROLL)
    browser.click(target["x"], target["y"])
    geometry = _where(browser)
    assert (geometry["node"], geometry["column"], geometry["selected"]) == (
        target["node"],
        target["column"],
        True,
    )
    assert geometry["content"] != before["content"]  # laid out anew around the new selection
    width, height = geometry["size"]
    c_left, c_top, c_right, c_bottom = geometry["content"]
    in_old_view = c_left >= left and c_top >= top and c_right <= left + width
    in_old_view = in_old_view and c_bottom <= top + height
    assert in_old_view is not needs_scroll, (geometry, left, top)
    assert _in_view(geometry), geometry
    hash_ = browser.js("decodeURIComponent(location.hash)")
    assert hash_.startswith(f"#column={target['node']}.{target['column']}")


@pytest.mark.parametrize("mode", SIZES)
def test_the_neighbourhood_lays_out_only_the_selections_neighbourhood(
    projects: dict[str, _Project],
    browser: Browser,
    mode: str,
    record_property: pytest.RecordProperty,
) -> None:
    """1, 2, 3 hops: the selected relation and what is up to N dependency hops upstream or
    downstream of it; all: every relation (full layout) or its whole lineage (focus mode)."""
    project = projects[mode]
    # an intermediate model that reads models and is read by models
    focus = min(
        (n for n in project.nodes.values() if n["name"].startswith("int_")),
        key=lambda n: (-len(project.neighbourhood(n["id"], 1)), n["id"]),
    )
    browser.open(f"{project.page.as_uri()}#model={focus['name']}")
    shown = {}
    for hops in ("all", "3", "2", "1"):
        browser.js(f"{CHOOSE_HOPS}({json.dumps(hops)})")
        shown[hops] = set(browser.js(BOXES))
        n = float("inf") if hops == "all" else int(hops)
        assert shown[hops] == project.neighbourhood(focus["id"], n), hops
        assert _in_view(_where(browser))
    assert shown["1"] < shown["2"] <= shown["3"] <= shown["all"]
    assert len(shown["1"]) < len(shown["all"])
    if mode == "full":
        assert len(shown["all"]) == len(project.nodes)
    assert browser.js("location.hash").endswith("hops=1")
    browser.open(f"{project.page.as_uri()}#model={focus['name']}&hops=1")  # a link keeps it
    assert set(browser.js(BOXES)) == shown["1"]
    assert browser.js("document.getElementById('hops').value") == "1"
    counts = {hops: len(ids) for hops, ids in shown.items()}
    record_property("boxes_by_neighbourhood", f"{len(project.nodes)} relations: {counts}")


def test_every_box_shows_its_catalog_and_namespace(
    projects: dict[str, _Project], browser: Browser
) -> None:
    """In the full layout, so every relation of the project has its box."""
    project = projects["full"]
    assert SECRET not in project.page.read_text()
    browser.open(project.page.as_uri())
    found = browser.js(
        """[...document.querySelectorAll(".box")].map((b) => {
      const catalog = b.querySelector(".where .catalog"), ns = b.querySelector(".where .ns");
      return [b.dataset.node, catalog && catalog.textContent, ns && ns.textContent,
              ns && ns.scrollWidth <= ns.clientWidth];
    })"""
    )
    assert len(found) == len(project.nodes)
    for node, catalog, namespace, fits in found:
        assert (catalog, namespace) == project.expected[node]
        assert fits, node
    assert {project.expected[node][1] for node, *_ in found} == {
        "duckdb:///srv/dbt/warehouse.duckdb",
        "postgres://pg.internal:5433",
    }


#: Every name in a box, fitted or not: [class, text, fits, the title (tooltip)].
NAMES = """[...document.querySelectorAll(".box")].flatMap((b) =>
  [...b.querySelectorAll("h2 .name, .col, .where .ns")].map((e) => [
    e.className.split(" ")[0], e.textContent, e.scrollWidth <= e.clientWidth,
    (e.classList.contains("name") ? e.parentNode.title : e.title) || ""]))"""


def test_boxes_fit_long_names_and_the_rest_is_in_the_tooltip(
    projects: dict[str, _Project], browser: Browser
) -> None:
    project = projects["focus"]
    for name in (LONG, TOO_LONG):
        browser.open(f"{project.page.as_uri()}#model={name}")
        head = browser.js(f"{HEAD}({json.dumps(project.by_name(name)['id'])})")
        assert head["text"] == name
        assert head["title"].splitlines()[0] == name
        if name == LONG:
            assert head["fits"], head
            assert head["width"] > 240, head  # the old fixed width would have cut it
        else:
            assert not head["fits"], head  # longer than any box: cut, with an ellipsis ...
            assert head["width"] == MAX_W, head
        for cls, text, fits, title in browser.js(NAMES):
            assert fits or text in title or title.endswith(text), (cls, text, title)


def test_a_screenshot_of_the_focus_mode(
    projects: dict[str, _Project], browser: Browser, record_property: pytest.RecordProperty
) -> None:
    project = projects["focus"]
    deep = project.deepest()
    browser.open(f"{project.page.as_uri()}#column={deep['name']}.{deep['columns'][-1]}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "explorer-focus.png"
    shot.unlink(missing_ok=True)  # a screenshot left by an earlier run must not pass for this one
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    record_property("explorer_focus_screenshot", str(shot))
