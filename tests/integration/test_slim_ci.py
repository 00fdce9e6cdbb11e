"""`dbt-oml impact --state PROD --selector`: the models a change can affect, never fewer.

Each case changes one model of the bundled project in a copy of a production build (its DuckDB
files included) and builds the copy with plain dbt. The oracle is the warehouse itself: every
model whose table (columns or rows, dbt's own snapshot columns aside) differs between the two
builds must be selected; and the selector is never wider than dbt's `state:modified+`.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import PROJECT, copy_project, run_cli, run_plain_dbt

pytestmark = pytest.mark.integration

BUILDABLE = ("--resource-type", "model", "--resource-type", "snapshot", "--resource-type", "seed")


@pytest.fixture(scope="module")
def prod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = copy_project(tmp_path_factory.mktemp("slim") / "prod")
    built = run_plain_dbt(["build", "--profiles-dir", "."], cwd=project)
    assert built.returncode == 0, built.stdout[-2000:]
    return project


def _tables(root: Path, names: dict[str, tuple[str, str, str]]) -> dict[str, object]:
    """Each relation's columns and rows (a multiset), dbt's `dbt_*` snapshot columns aside."""
    con = duckdb.connect(str(root / "warehouse.duckdb"), read_only=True)
    for catalog in ("crm", "dw"):
        con.execute(f"attach '{root / catalog}.duckdb' as {catalog} (read_only)")
    con.execute(f"set file_search_path = '{root}'")  # views reading files by relative path
    out: dict[str, object] = {}
    for name, (database, schema, table) in names.items():
        columns = [
            row[0]
            for row in con.execute(
                "select column_name from duckdb_columns() where database_name = ? and "
                "schema_name = ? and table_name = ? order by column_index",
                [database, schema, table],
            ).fetchall()
        ]
        kept = ", ".join(f'"{c}"' for c in columns if not c.startswith("dbt_"))
        rows = con.execute(f'select {kept} from "{database}"."{schema}"."{table}"').fetchall()
        out[name] = (tuple(columns), Counter(repr(r) for r in rows))
    con.close()
    return out


def _changed_outputs(prod: Path, dev: Path) -> set[str]:
    """The models, snapshots and seeds whose table differs between the two builds."""
    manifest = json.loads((dev / "target" / "manifest.json").read_text())
    names = {
        n["name"]: (n["database"], n["schema"], n.get("alias") or n["name"])
        for n in manifest["nodes"].values()
        if n["resource_type"] in ("model", "snapshot", "seed")
        and n["config"].get("materialized") != "ephemeral"
    }
    before, after = _tables(prod, names), _tables(dev, names)
    return {name for name in names if before.get(name) != after.get(name)}


def _changed(prod: Path, tmp_path: Path, path: str, old: str, new: str) -> Path:
    dev = tmp_path / "dev"
    shutil.copytree(prod, dev, ignore=shutil.ignore_patterns("logs"))
    model = dev / path
    text = model.read_text()
    assert old in text
    model.write_text(text.replace(old, new))
    built = run_plain_dbt(["build", "--profiles-dir", "."], cwd=dev)
    assert built.returncode == 0, built.stdout[-2000:]
    return dev


def _selector(prod: Path, dev: Path) -> set[str]:
    args = ["impact", "--state", str(prod / "target"), "--selector", "--profiles-dir", "."]
    run = run_cli(args, cwd=dev)
    assert run.returncode == 0, run.stderr[-2000:]
    return set(run.stdout.split())


def _modified_plus(prod: Path, dev: Path) -> set[str]:
    state = ["--state", str(prod / "target"), "--output", "name", "-q"]
    run = run_plain_dbt(
        ["ls", "-s", "state:modified+", *state, *BUILDABLE, "--profiles-dir", "."], cwd=dev
    )
    assert run.returncode == 0, run.stdout[-2000:]
    return set(run.stdout.split())


CASES = {
    # a value inside the staging CTE: its readers, not the models reading other columns
    "an expression in a CTE": (
        "models/staging/stg_customers.sql",
        '"LastName" as last_name,',
        'upper("LastName") as last_name,',
        {"stg_customers", "core_customers", "dim_customers", "customers_snapshot"},
    ),
    # an added column reaches only the `select *` reader (core_column_profile, opaque)
    "an added column": (
        "models/staging/stg_orders.sql",
        "        status,\n",
        "        status,\n        upper(status) as status_code,\n",
        {"stg_orders", "core_column_profile"},
    ),
    # a filter changes the rows: the model and every reader of them
    "a filter": (
        "models/core/core_customer_stats.sql",
        "where status <> 'placed'",
        "where status <> 'shipped'",
        {"core_customer_stats", "dim_customers"},
    ),
    # a seed's file: its rows, and every reader of them, whole
    "a seed's rows": (
        "seeds/country_codes.csv",
        "GB,United Kingdom,Europe",
        "GB,Great Britain,Europe",
        {
            "country_codes",
            "stg_country_codes",
            "core_customers",
            "dim_customers",
            "fct_orders",
            "revenue_by_country",
        },
    ),
    # a value in an ephemeral model, inlined into an incremental reader: that reader's compiled
    # SQL is its own change, not the other is_incremental() branch (found by the generated test)
    "an ephemeral model's value": (
        "models/staging/stg_payments.sql",
        "    amount_cents / 100.0 as amount",
        "    nullif(amount_cents / 100.0, amount_cents / 100.0) as amount",
        {  # the ephemeral model itself is no relation to build
            "core_orders",
            "core_open_balances",
            "core_order_audit",
            "core_customer_stats",
            "dim_customers",
            "fct_orders",
            "revenue_by_country",
        },
    ),
    # one aggregate's value: dim_customers reads other columns of it
    "an aggregate": (
        "models/core/core_customer_stats.sql",
        "max(order_date) as last_order_date",
        "min(order_date) as last_order_date",
        {"core_customer_stats"},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_selector_holds_every_model_whose_output_changed(
    prod: Path, tmp_path: Path, case: str
) -> None:
    path, old, new, expected = CASES[case]
    dev = _changed(prod, tmp_path, path, old, new)
    changed, selected, modified = (
        _changed_outputs(prod, dev),
        _selector(prod, dev),
        _modified_plus(prod, dev),
    )
    assert changed <= selected, f"missed: {changed - selected}"
    assert selected <= modified, f"wider than state:modified+: {selected - modified}"
    assert selected == expected
    print(f"{case}: selected {len(selected)}, state:modified+ {len(modified)}")  # noqa: T201


def test_dbt_builds_what_the_selector_prints(prod: Path, tmp_path: Path) -> None:
    path, old, new, _ = CASES["an added column"]
    dev = _changed(prod, tmp_path, path, old, new)
    selector = " ".join(sorted(_selector(prod, dev)))
    run = run_plain_dbt(["build", "-s", selector, "--profiles-dir", "."], cwd=dev)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "PASS=" in run.stdout


def test_nothing_changed_selects_nothing(prod: Path, tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    shutil.copytree(prod, dev, ignore=shutil.ignore_patterns("logs"))
    assert _selector(prod, dev) == set()


_ITEM = re.compile(r"^(\s+)(.+?) as (\w+)(,?)$")
_NOT_AN_ITEM = re.compile(
    r"^\s*(from|join|left|right|inner|full|cross|on|with|select|where|group|order|union|\)|\w+ as \()",
    re.IGNORECASE,
)


def _items() -> list[tuple[str, int]]:
    """(file, line) of every one-line `<expression> as <name>` SELECT item of the models."""
    found = []
    for path in sorted((PROJECT / "models").rglob("*.sql")):
        for number, line in enumerate(path.read_text().splitlines()):
            plain = "{{" not in line and " over " not in line
            if plain and _ITEM.match(line) and not _NOT_AN_ITEM.match(line):
                found.append((str(path.relative_to(PROJECT)), number))
    return found


@settings(max_examples=5, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(item=st.sampled_from(_items()))
def test_a_generated_change_never_escapes_the_selector(
    prod: Path, tmp_path_factory: pytest.TempPathFactory, item: tuple[str, int]
) -> None:
    """Any one SELECT item made NULL (`nullif(x, x)`: the same type, other values) in a copy of
    production, built with plain dbt: every model whose table changed is selected, and the
    selector stays inside `state:modified+`."""
    path, number = item
    dev = tmp_path_factory.mktemp("generated") / "dev"
    shutil.copytree(prod, dev, ignore=shutil.ignore_patterns("logs"))
    lines = (dev / path).read_text().splitlines()
    lines[number] = _ITEM.sub(r"\1nullif(\2, \2) as \3\4", lines[number])
    (dev / path).write_text("\n".join(lines) + "\n")
    # dbt's tests may fail on NULLs: everything else is built
    built = run_plain_dbt(
        ["build", "--exclude", "resource_type:test", "--profiles-dir", "."], cwd=dev
    )
    assume(built.returncode == 0)
    changed, selected = _changed_outputs(prod, dev), _selector(prod, dev)
    assert changed <= selected, f"{path}:{number + 1} missed {changed - selected}"
    assert selected <= _modified_plus(prod, dev)
