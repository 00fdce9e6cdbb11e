"""tests/support/parse_cache.py: a copy of the project given another copy's saved parse is parsed by dbt
as its own (nothing changed, nothing parsed) and reads only its own files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import copy_project, run_cli, run_plain_dbt
from tests.support.parse_cache import SAVED, give_parse

pytestmark = pytest.mark.integration


def test_a_copy_given_another_copys_parse_reads_only_its_own_files(tmp_path: Path) -> None:
    first = copy_project(tmp_path / "first", parsed=False)
    parsed = run_plain_dbt(["parse", "--profiles-dir", "."], cwd=first)
    assert parsed.returncode == 0, parsed.stdout[-3000:]
    second = give_parse(first / SAVED, copy_project(tmp_path / "second", parsed=False))
    shutil.rmtree(first)  # nothing of the first copy is left to read
    assert str(first).encode() not in (second / SAVED).read_bytes()

    # a seed: dbt reads its CSV from the root_path the saved parse holds
    seeded = run_cli(["seed", "--profiles-dir", ".", "--no-docs-generate"], cwd=second)
    assert seeded.returncode == 0, seeded.stdout[-3000:]
    log = (second / "logs" / "dbt.log").read_text()
    assert "Partial parsing enabled, no changes found, skipping parsing" in log
    assert "Starting full parse" not in log
    assert [e["eventType"] for e in seeded.events] == ["START", "START", "COMPLETE", "COMPLETE"]
