"""`python -m dbt_oml` is `dbt-oml`."""

from __future__ import annotations

from dbt_oml.cli import main

raise SystemExit(main())
