from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from dbt_oml.events.ids import run_id
from dbt_oml.lineage.filerefs import file_dataset, file_paths, may_name_file

T0 = datetime(2026, 11, 30, 3, 49, 4, 189000, tzinfo=timezone.utc)


def test_run_id_is_a_uuid7_with_the_start_time() -> None:
    rid = uuid.UUID(run_id("inv", "model.p.m", T0))
    assert rid.version == 7
    assert rid.variant == uuid.RFC_4122
    assert rid.int >> 80 == int(T0.timestamp() * 1000)


def test_run_id_depends_on_invocation_key_and_time() -> None:
    base = run_id("inv", "model.p.m", T0)
    assert base == run_id("inv", "model.p.m", T0)
    assert base != run_id("inv2", "model.p.m", T0)
    assert base != run_id("inv", "model.p.n", T0)
    assert base != run_id("inv", "model.p.m", T0 + timedelta(milliseconds=1))


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("select * from read_parquet('a/b.parquet')", ["a/b.parquet"]),
        ("select * from read_csv(['x.csv', 'y.csv'], header = true)", ["x.csv", "y.csv"]),
        ("select * from 's3://lake/raw/e.parquet'", ["s3://lake/raw/e.parquet"]),
        (
            "select * from read_json_auto('j.json') join parquet_scan('p.parquet') using (id)",
            ["j.json", "p.parquet"],
        ),
        ('select * from "warehouse"."main"."t"', []),
        ('select * from "Customers"', []),
        ("select * from (((", []),
        ("select 1; select * from read_parquet('a.parquet')", ["a.parquet"]),
    ],
)
def test_file_paths(sql: str, expected: list[str]) -> None:
    assert file_paths(sql) == expected
    assert may_name_file(sql) or not expected  # the pre-check never hides a file


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        # a `/` between two string literals is no path: the quotes pair around 'a' and 'b'
        ("select 'a' as x, round(amount / 100.0, 2) as y, 'b' as z from t", False),
        ("select coalesce(c, 'n/a') as c from t", False),
        ("select a / b from t -- it's a ratio\nwhere s = 'x'", False),
        ("select 'it''s' as a, x / 2 as b, 'y' as c from t /* don't */", False),
        ('select "a/b" as c, 1 / 2 from t', False),
        ("select * from 'data/events.parquet'", True),
        ("select * from 's3://lake/raw/e'", True),
        ("select * from 'data/events'", True),
        ('select * from "data/x.csv.gz"', True),
        ("select * from read_parquet(getvariable('p'))", True),
        ("select * from READ_Parquet (getvariable('p'))", True),  # any case, as DuckDB reads it
        ("select * from delta_\u017fcan(getvariable('p'))", True),  # long s: IGNORECASE's `s`
        ("select * from read_me join my_scan using (id)", False),  # names, not calls
        ("select 'unpaired from t", True),
    ],
)
def test_may_name_file_pairs_quotes(sql: str, expected: bool) -> None:
    assert may_name_file(sql) is expected


@pytest.mark.parametrize(
    ("path", "namespace", "name"),
    [
        ("s3://lake/raw/e.parquet", "s3://lake", "raw/e.parquet"),
        ("gcs://bkt/x.csv", "gs://bkt", "x.csv"),
        (
            "abfss://cont@acct.dfs.core.windows.net/d/x.parquet",
            "abfss://cont@acct.dfs.core.windows.net",
            "d/x.parquet",
        ),
        ("https://host:8443/files/x.csv", "https://host:8443", "files/x.csv"),
        ("https://user:SECRET@host/x.csv", "https://host", "x.csv"),
        ("data/x.parquet", "file", "/w/data/x.parquet"),
        ("/abs/../abs/x.parquet", "file", "/abs/x.parquet"),
        ("file:///abs/x.parquet", "file", "/abs/x.parquet"),
    ],
)
def test_file_dataset(path: str, namespace: str, name: str) -> None:
    ref = file_dataset(path, cwd="/w")
    assert (ref.namespace, ref.name) == (namespace, name)
