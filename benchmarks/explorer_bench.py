"""The lineage explorer's page load on a generated project, in headless chromium (section 6).

Generates a project with `lineage_gen.py` (2,000 models by default), analyses it, writes the
explorer page for the whole project and opens it in headless chromium with a staging column in
the URL fragment, then with no fragment. The number is the page's own measurement
(`performance.now()` when the first view is drawn, `data-loaded-ms` in the dumped DOM); the
whole chromium process is timed too. Run: `make bench-explorer` (needs chromium on PATH).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser
from pathlib import Path

from lineage_gen import generate

from dbt_oml.artifacts import read_artifacts
from dbt_oml.explorer import render
from dbt_oml.lineage.batch import analyse_models, known_columns
from dbt_oml.lineage.graph import ColumnGraph, build_graph
from dbt_oml.lineage.view import LineageView, Query, answer


class _Page(HTMLParser):
    """The root element's attributes and the number of relation boxes laid out."""

    def __init__(self) -> None:
        super().__init__()
        self.attrs: dict[str, str] = {}
        self.boxes = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "html":
            self.attrs = found
        if tag == "div" and "box" in found.get("class", "").split():
            self.boxes += 1


def _graph(models: int, work: Path) -> ColumnGraph:
    artifacts = read_artifacts(generate(work / "project", models))
    wanted = {u for u, n in artifacts.manifest.nodes.items() if n.resource_type == "model"}
    result = analyse_models(artifacts, wanted=wanted, dialect="duckdb", workers=2)
    return build_graph(
        artifacts.manifest, result.models, opaque=result.opaque, known=known_columns(artifacts)
    )


def _open(chromium: str, page: Path, fragment: str, profile: Path) -> tuple[_Page, float]:
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        f"--user-data-dir={profile}",
        "--dump-dom",
        page.as_uri() + (f"#{fragment}" if fragment else ""),
    ]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    elapsed = time.perf_counter() - started
    parsed = _Page()
    parsed.feed(proc.stdout)
    return parsed, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("explorer_bench: no chromium on PATH (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        graph = _graph(args.models, work)
        page = work / "lineage.html"
        page.write_text(render(answer(LineageView(graph), Query()).document))
        staging = min(
            (n for n in graph.nodes.values() if n.name.startswith("stg_")), key=lambda n: n.id
        )
        size = page.stat().st_size / 1e6
        print(f"{args.models} models, {len(graph.nodes)} relations, {size:.1f} MB page")
        print("| fragment | relations laid out | loaded (ms) | chromium process (s) |")
        print("|---|---|---|---|")
        for fragment in (f"column={staging.name}.{staging.columns[1]}", ""):
            for _ in range(args.repeats):
                dom, elapsed = _open(chromium, page, fragment, work / "profile")
                loaded = dom.attrs.get("data-loaded-ms", "?")
                row = f"| `{fragment or '(none)'}` | {dom.boxes} | {loaded} | {elapsed:.2f} |"
                print(row)


if __name__ == "__main__":
    main()
