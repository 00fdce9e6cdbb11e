"""`python -m dbt_oml` is `dbt-oml`."""

from __future__ import annotations

from dbt_oml.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
