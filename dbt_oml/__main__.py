"""`python -m dbt_oml` is `dbt-oml`."""

from __future__ import annotations

from dbt_oml.cli import run

if __name__ == "__main__":
    run()
