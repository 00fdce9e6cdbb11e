"""dbt.catalog_file gives up with a reason, never an exception, when dbt holds no adapter (the
wrapper then runs `dbt docs generate` as before); tests/integration/test_build.py holds the
catalog it writes equal to a plain docs generate's."""

from __future__ import annotations

from pathlib import Path

from dbt_oml.dbt.catalog_file import write_catalog


def test_without_an_adapter_it_says_why_and_writes_nothing(tmp_path: Path) -> None:
    from dbt.adapters.factory import FACTORY

    assert not getattr(FACTORY, "adapters", {})  # this process never ran dbt
    assert write_catalog(tmp_path) == "no single adapter registered"
    assert list(tmp_path.iterdir()) == []
