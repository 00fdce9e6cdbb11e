"""A check of the headless chromium driver of the explorer's browser tests
(tests/support/browser.py): it opens a page, reads it and types into it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import CHROMIUM, Browser

pytestmark = pytest.mark.integration


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install -y chromium; .ci/run installs it)")
    tab = Browser(tmp_path / "profile")
    try:
        yield tab
    finally:
        tab.close()


def test_the_driver_opens_a_page_reads_it_and_types_into_it(
    browser: Browser, tmp_path: Path
) -> None:
    page = tmp_path / "page.html"
    page.write_text(
        '<input id="q"><script>document.getElementById("q").addEventListener("keydown",'
        ' (e) => { if (e.key === "Enter") document.title = e.target.value; });'
        " document.documentElement.dataset.loadedMs = 1;</script>"
    )
    browser.open(page.as_uri())
    browser.js("document.getElementById('q').focus()")
    browser.type_and_enter("typed")
    assert browser.js("document.title") == "typed"
    assert browser.js("[window.innerWidth, window.innerHeight]") == [1280, 720]
