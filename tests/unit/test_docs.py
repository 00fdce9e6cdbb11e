"""The README and the manual stay true: they build, their links resolve, and the tables the code
owns (settings, exit codes, the OM reference the code cites) list what the code has."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dbt_oml.cli.codes import ExitCode
from dbt_oml.config import TABLE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CITATION = re.compile(r"ref §(\d+(?:\.\d+)?)")


def _table_rows(text: str, header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))])
    return rows


def test_the_manual_builds_strictly(tmp_path: Path) -> None:
    """mkdocs --strict: a broken link or anchor, or a page missing from the nav, fails."""
    site = tmp_path / "site"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-q"]
    done = subprocess.run(
        [*command, "-f", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # mkdocs-material's banner, not ours
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (site / "configuration" / "index.html").is_file()


def test_the_readme_is_a_readme() -> None:
    """At most 16 KB, starting with the two commands; every link it has resolves in the clone."""
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) <= 16 * 1024
    first_block = text.split("```")[1]
    assert "make demo" in first_block
    assert "make test" in first_block
    targets = [t for t in LINK.findall(text) if "://" not in t]
    assert targets, "the README links to the manual"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert missing == []


def test_the_configuration_reference_lists_every_key() -> None:
    rows = _table_rows((DOCS / "configuration.md").read_text(encoding="utf-8"), "| key")
    documented = {row[0].strip("`"): row for row in rows}
    for key in TABLE:
        assert key.name in documented, key.name
        if key.file_only:
            continue
        flag, variable = documented[key.name][1], documented[key.name][2]
        assert f"--{key.name.replace('_', '-')}" in flag, key.name
        assert f"DBT_OML_{key.name.upper()}" in variable, key.name
    assert set(documented) - {"—"} <= {key.name for key in TABLE}


@pytest.mark.parametrize("page", [README, DOCS / "failures.md"], ids=["README", "failures"])
def test_the_exit_code_tables_name_every_code(page: Path) -> None:
    rows = _table_rows(page.read_text(encoding="utf-8"), "| code")
    listed = {int(code) for row in rows for code in re.findall(r"\d", row[0])}
    assert listed == {int(code) for code in ExitCode}


def test_every_cited_section_of_the_om_reference_exists() -> None:
    """The code cites OM's behaviour as "ref §n": each n is a section of docs/reference."""
    reference = (DOCS / "reference" / "openmetadata-api.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,4} (\d+(?:\.\d+)?)\.? ", reference, flags=re.MULTILINE))
    cited: set[str] = set()
    for folder in ("dbt_oml", "tests"):
        for path in (ROOT / folder).rglob("*.py"):
            cited |= set(CITATION.findall(path.read_text(encoding="utf-8")))
    assert cited, "the code cites the reference"
    assert sorted(cited - sections) == []
