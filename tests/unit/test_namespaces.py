from __future__ import annotations

import pytest

from dbt_oml.errors import NamespaceError
from dbt_oml.namespaces import CatalogSpec, Namespaces, namespace_for, resolve_namespaces

CASES = [
    # DuckDB files: the path as the profile writes it, as dbt-ol names them (issue 28 item 3)
    ("duckdb", "warehouse.duckdb", "duckdb://warehouse.duckdb"),
    ("duckdb", "data/w.duckdb", "duckdb://data/w.duckdb"),
    ("duckdb", "/data/w.duckdb", "duckdb:///data/w.duckdb"),
    ("duckdb", ":memory:", "duckdb://memory"),
    ("duckdb", "", "duckdb://memory"),
    ("duckdb", "md:analytics?motherduck_token=SECRET", "motherduck://analytics"),
    ("duckdb", "s3://bob:SECRET@lake/w.duckdb?s3_access_key_id=SECRET", "s3://lake/w.duckdb"),
    ("sqlite", "lite.db", "sqlite:///pods/run/lite.db"),
    (
        "postgres",
        "host=PG.internal port=5433 dbname=src user=etl password=SECRET",
        "postgres://pg.internal:5433",
    ),
    ("postgres", "dbname=src host=pg user=etl password='a b SECRET'", "postgres://pg:5432"),
    (
        "postgres",
        "postgresql://etl:SECRET@pg.internal:6432/src?sslmode=require",
        "postgres://pg.internal:6432",
    ),
    ("postgres", "host=/var/run/postgresql dbname=src", "postgres://localhost:5432"),
    ("mysql", "host=127.0.0.1 port=3306 user=root passwd=SECRET db=crm", "mysql://127.0.0.1:3306"),
    ("mysql", "mysql://root:SECRET@crm-db/crm", "mysql://crm-db:3306"),
    ("mssql", "Server=tcp:sql1,14330;Database=crm;Uid=sa;Pwd=SECRET", "mssql://sql1:14330"),
    ("mssql", "Data Source=sql2;Initial Catalog=dw;Password=SECRET", "mssql://sql2:1433"),
]


@pytest.mark.parametrize(
    ("kind", "path", "expected"), CASES, ids=[c[2] + "|" + c[1][:12] for c in CASES]
)
def test_namespace_for(kind: str, path: str, expected: str) -> None:
    got = namespace_for(CatalogSpec(alias="c", type=kind, path=path), cwd="/pods/run")
    assert got == expected
    assert "SECRET" not in got


def test_duckdb_default_template_names_each_file() -> None:
    spec = CatalogSpec(alias="crm", type="duckdb", path="/tmp/x/crm_src.duckdb")
    assert namespace_for(spec, duckdb_default="duckdb://pod/{alias}") == "duckdb://pod/crm"
    assert namespace_for(spec, duckdb_default="duckdb://{stem}") == "duckdb://crm_src"


def test_duckdb_default_is_the_path_as_written_whatever_the_working_directory() -> None:
    """Two checkouts (or two pods' temporary directories) name the same file alike, as dbt-ol."""
    spec = CatalogSpec(alias="warehouse", type="duckdb", path="warehouse.duckdb")
    here, there = (namespace_for(spec, cwd=cwd) for cwd in ("/tmp/ci-1/p", "/home/me/p"))
    assert here == there == "duckdb://warehouse.duckdb"
    # an explicit template still wins over the path
    assert namespace_for(spec, cwd="/x", duckdb_default="duckdb://pod/{alias}") == (
        "duckdb://pod/warehouse"
    )


def test_spec_repr_hides_the_connection_string() -> None:
    spec = CatalogSpec(alias="pg", type="postgres", path="host=h password=SECRET")
    assert "SECRET" not in repr(spec)


def test_missing_host_raises_with_the_fix() -> None:
    with pytest.raises(NamespaceError) as err:
        namespace_for(CatalogSpec(alias="pg", type="postgres", path="dbname=src"))
    assert err.value.catalog == "pg"
    assert "--namespace pg=" in str(err.value)


def test_unknown_type_raises() -> None:
    with pytest.raises(NamespaceError) as err:
        namespace_for(CatalogSpec(alias="x", type="oracle", path="whatever"))
    assert err.value.adapter == "oracle"


def test_resolve_overrides_problems_and_fallback() -> None:
    catalogs = [
        CatalogSpec(alias="warehouse", type="duckdb", path="w.duckdb"),
        CatalogSpec(alias="CRM", type="mysql", path="host=crm port=3306"),
        CatalogSpec(alias="lake", type="postgres", path="dbname=only"),
    ]
    res = resolve_namespaces(catalogs, overrides={"crm": "mysql://crm.prod:3306"}, cwd="/w")
    ns = res.namespaces
    assert ns.for_database("CRM") == "mysql://crm.prod:3306"
    assert ns.for_database("warehouse") == "duckdb://w.duckdb"
    assert ns.for_database("lake") == "postgres://lake"
    assert [p.catalog for p in res.problems] == ["lake"]
    assert ns.for_database("not_attached") == "duckdb://w.duckdb"


def test_for_database_is_case_insensitive() -> None:
    ns = Namespaces(by_catalog={"Warehouse": "duckdb://w"}, fallback="x")
    assert ns.for_database("warehouse") == "duckdb://w"


def test_an_override_must_name_a_catalog_of_the_project() -> None:
    from dbt_oml.errors import ConfigError
    from dbt_oml.namespaces import check_overrides

    check_overrides({"CRM": "mssql://s:1433", "Lake": "s3://l"}, ["crm", "dw", "lake", None])
    with pytest.raises(ConfigError) as err:
        check_overrides({"crmm": "x://a", "zzz": "x://b"}, ["crm", "dw"], source="dbt-oml.yml")
    assert (err.value.key, err.value.source) == ("namespaces", "dbt-oml.yml")
    assert (
        err.value.reason == "names no catalog of the project: 'crmm' (did you mean 'crm'?), 'zzz'"
    )
    assert err.value.hint == "its catalogs: crm, dw"
    assert "\n" not in str(err.value)


def test_an_override_in_another_case_is_that_catalogs() -> None:
    catalogs = [CatalogSpec(alias="crm", type="mysql", path="host=crm port=3306")]
    res = resolve_namespaces(catalogs, overrides={"CRM": "mysql://crm.prod:3306"})
    assert res.namespaces.by_catalog == {"crm": "mysql://crm.prod:3306"}
