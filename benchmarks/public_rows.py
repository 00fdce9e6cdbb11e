"""Our rows for public projects whose data is not in their repository (`public_projects.py --rows`).

The project's SQL stays theirs and unmodified; only its sources get rows, written into the
temporary copy (never into a checkout), with the columns the project's SQL reads from them. A
PIVOT's ON values then come from these rows (or from the project's own seeds, where its SQL maps
our rows through one). Each writer returns the DuckDB files the profile must attach.

- `expat` (timhiebenthal/expat, `dbt/`): dlt-loaded sources in the database `dwh` (Numbeo cost of
  living, forex rates, config, LLM earnings). Numbeo's categories are the project's own seed's
  `category` column, so the PIVOT's columns are the seed's activity types.
- `atp` (the DuckDB in Action chapter 8 project): the source's `external_location` reads Jeff
  Sackmann's `tennis_atp` CSV files over HTTP; the copy reads the same file names from `data/`
  instead (the URL prefix is the only change), with a few rows each, under that data's header.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable
from pathlib import Path

import duckdb

_CITIES = [
    ("Berlin", "Germany", "EUR"),
    ("Lisbon", "Portugal", "EUR"),
    ("Zurich", "Switzerland", "CHF"),
]
_JOBS = [("Data Engineer", 3), ("Data Engineer", 8), ("Nurse", 5)]


def expat(copy: Path) -> list[Path]:
    rng = random.Random(30)
    with (copy / "seeds" / "seed_activity_mapping.csv").open(newline="") as seed:
        categories = [row["category"] for row in csv.DictReader(seed)]
    path = copy / "dwh.duckdb"
    con = duckdb.connect(str(path))
    for schema in ("raw_numbeo", "raw_forex", "raw_config", "raw_earnings"):
        con.execute(f"create schema {schema}")
    con.execute("create table raw_config.cities (name varchar, country varchar)")
    con.execute("create table raw_config.jobs (job_title varchar, years_experience bigint)")
    con.executemany("insert into raw_config.cities values (?, ?)", [c[:2] for c in _CITIES])
    con.executemany("insert into raw_config.jobs values (?, ?)", _JOBS)
    con.execute(
        "create table raw_numbeo.cost_of_living (city varchar, _dlt_load_id varchar, _dlt_id varchar)"
    )
    con.execute(
        "create table raw_numbeo.cost_of_living__data (category varchar, cost varchar, "
        "_dlt_parent_id varchar, _dlt_list_idx bigint, _dlt_id varchar)"
    )
    for n, (city, _, _) in enumerate(_CITIES):
        con.execute(
            "insert into raw_numbeo.cost_of_living values (?, '1717000000.5', ?)",
            [city, f"city{n}"],
        )
        con.executemany(
            "insert into raw_numbeo.cost_of_living__data values (?, ?, ?, ?, ?)",
            [
                (cat, f"{rng.uniform(1, 3000):,.2f} €", f"city{n}", i, f"city{n}-{i}")
                for i, cat in enumerate(categories)
            ],
        )
    con.execute(
        "create table raw_forex.forex_daily (date date, open double, high double, low double, "
        "close double, from_currency varchar, to_currency varchar, _dlt_load_id varchar, "
        "_dlt_id varchar)"
    )
    con.executemany(
        "insert into raw_forex.forex_daily values "
        "(date '2024-06-01' + ?, ?, ?, ?, ?, 'CHF', 'EUR', '1717000000.5', ?)",
        [(d, r, r, r, r, f"fx{d}") for d in range(5) for r in [rng.uniform(0.9, 1.1)]],
    )
    con.execute(
        "create table raw_earnings.job_earnings (city varchar, country varchar, "
        "jobtitle_and_experience varchar, currency varchar, average_monthly_gross_salary double, "
        "net_to_gross_salary_ratio double, _dlt_load_id varchar, _dlt_id varchar)"
    )
    con.executemany(
        "insert into raw_earnings.job_earnings values (?, ?, ?, ?, ?, ?, '1717000000.5', ?)",
        [
            (
                city,
                country,
                f"{job} with {years} years",
                currency,
                rng.uniform(3000, 9000),
                0.6,
                f"e{i}-{j}",
            )
            for i, (city, country, currency) in enumerate(_CITIES)
            for j, (job, years) in enumerate(_JOBS)
        ],
    )
    con.close()
    return [path]


_ATP_HEADER = (
    "tourney_id,tourney_name,surface,draw_size,tourney_level,tourney_date,match_num,winner_id,"
    "winner_seed,winner_entry,winner_name,winner_hand,winner_ht,winner_ioc,winner_age,loser_id,"
    "loser_seed,loser_entry,loser_name,loser_hand,loser_ht,loser_ioc,loser_age,score,best_of,"
    "round,minutes,w_ace,w_df,w_svpt,w_1stIn,w_1stWon,w_2ndWon,w_SvGms,w_bpSaved,w_bpFaced,"
    "l_ace,l_df,l_svpt,l_1stIn,l_1stWon,l_2ndWon,l_SvGms,l_bpSaved,l_bpFaced,winner_rank,"
    "winner_rank_points,loser_rank,loser_rank_points"
)
_ATP_URL = "https://raw.githubusercontent.com/JeffSackmann/tennis_atp/master/"


def atp(copy: Path) -> list[Path]:
    rng = random.Random(30)
    sources = next(copy.glob("models/**/sources.yml"))
    sources.write_text(sources.read_text().replace(_ATP_URL, "data/"))
    (copy / "data").mkdir()
    (copy / "output").mkdir(exist_ok=True)  # the model's `location` (ignored by their git)
    columns = _ATP_HEADER.split(",")
    for year in range(1968, 2023):
        rows = []
        for match in range(3):
            row = {c: str(rng.randint(1, 99)) for c in columns}
            row |= {
                "tourney_id": f"{year}-{match}",
                "tourney_name": "Open",
                "tourney_level": "A",
                "surface": rng.choice(["Hard", "Clay", "Grass", ""]),
                "tourney_date": f"{year}0{rng.randint(1, 9)}1{rng.randint(0, 9)}",
                "winner_name": "A. Player",
                "loser_name": "B. Player",
                "winner_hand": "R",
                "loser_hand": "L",
                "winner_ioc": "SUI",
                "loser_ioc": "ESP",
                "winner_entry": "",
                "loser_entry": "Q",
                "score": "6-4 6-3",
                "round": "F",
            }
            rows.append(",".join(row[c] for c in columns))
        (copy / "data" / f"atp_matches_{year}.csv").write_text("\n".join([_ATP_HEADER, *rows]))
    return []


WRITERS: dict[str, Callable[[Path], list[Path]]] = {"expat": expat, "atp": atp}
