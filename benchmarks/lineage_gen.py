"""A synthetic dbt-duckdb project, as artifacts, with its column lineage ground truth.

Layers: sources (raw tables) -> staging (select-* CTE chains with renames, casts, functions) ->
intermediate (joins, aggregates, windows, CASE, COALESCE) -> marts (md5 surrogate keys,
COALESCE, QUALIFY). Every model has 10-40 columns. The truth is one hop per output column: the
(relation, column) pairs of its direct parents, which is what a columnLineage facet carries.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

SCHEMA_URL = "https://schemas.getdbt.com/dbt/{kind}/v{v}.json"
Truth = dict[str, dict[str, list[list[str]]]]


def _rel(db: str, schema: str, name: str) -> str:
    return f'"{db}"."{schema}"."{name}"'


def generate(dest: Path, models: int, seed: int = 7) -> Path:
    """Write manifest.json, run_results.json, catalog.json and truth.json into `dest`."""
    rng = random.Random(seed)
    dest.mkdir(parents=True, exist_ok=True)
    nodes: dict[str, dict] = {}
    sources: dict[str, dict] = {}
    catalog: dict[str, dict] = {}
    truth: Truth = {}
    columns: dict[str, list[str]] = {}  # unique_id -> output columns
    relation: dict[str, tuple[str, str, str]] = {}

    def add_catalog(uid: str, cols: list[str]) -> None:
        catalog[uid] = {
            "metadata": {"type": "BASE TABLE"},
            "columns": {
                c: {"name": c, "type": "INTEGER" if c.endswith("id") else "VARCHAR", "index": i + 1}
                for i, c in enumerate(cols)
            },
        }

    n_sources = max(5, models // 10)
    for i in range(n_sources):
        uid = f"source.synth.raw.src_{i:04d}"
        cols = ["id", *(f"c{j:02d}" for j in range(rng.randint(10, 40)))]
        sources[uid] = {
            "unique_id": uid,
            "resource_type": "source",
            "name": f"src_{i:04d}",
            "package_name": "synth",
            "database": "raw",
            "schema": "src",
            "identifier": f"src_{i:04d}",
            "columns": {},
        }
        columns[uid], relation[uid] = cols, ("raw", "src", f"src_{i:04d}")
        add_catalog(uid, cols)

    n_stg, n_int = int(models * 0.4), int(models * 0.4)
    n_mart = models - n_stg - n_int

    def model(
        uid: str,
        layer: str,
        name: str,
        sql: str,
        parents: list[str],
        out: dict[str, list[list[str]]],
    ) -> None:
        nodes[uid] = {
            "unique_id": uid,
            "resource_type": "model",
            "name": name,
            "package_name": "synth",
            "database": "warehouse",
            "schema": layer,
            "alias": name,
            "compiled_code": sql,
            "depends_on": {"nodes": parents},
            "config": {"materialized": "table"},
            "columns": {},
        }
        columns[uid], relation[uid] = list(out), ("warehouse", layer, name)
        truth[uid] = out
        add_catalog(uid, list(out))

    staging: list[str] = []
    for i in range(n_stg):
        src = f"source.synth.raw.src_{rng.randrange(n_sources):04d}"
        src_cols = columns[src]
        picked = rng.sample(src_cols[1:], k=min(len(src_cols) - 1, rng.randint(9, 39)))
        rel = relation[src]
        exprs, out = ["id as row_id"], {"row_id": [[*rel, "id"]]}
        for j, c in enumerate(picked):
            kind = j % 4
            name = f"s{i}_{c}"
            exprs.append(
                [
                    f"{c} as {name}",
                    f"lower({c}) as {name}",
                    f"cast({c} as varchar) as {name}",
                    f"trim({c}) || '' as {name}",
                ][kind]
            )
            out[name] = [[*rel, c]]
        sql = (
            f"with source as (\n    select * from {_rel(*rel)}\n),\nrenamed as (\n    select "
            + ",\n        ".join(exprs)
            + "\n    from source\n)\nselect * from renamed\n"
        )
        uid = f"model.synth.stg_{i:04d}"
        model(uid, "staging", f"stg_{i:04d}", sql, [src], out)
        staging.append(uid)

    upstream = list(staging)
    for i in range(n_int):
        a, b = rng.sample(upstream[-200:] if len(upstream) > 200 else upstream, 2)
        ra, rb = relation[a], relation[b]
        ca, cb = columns[a][1:], columns[b][1:]
        out: dict[str, list[list[str]]] = {"row_id": [[*ra, "row_id"]]}
        exprs = ["a.row_id as row_id"]
        width = rng.randint(9, 39)
        for j in range(width):
            x, y = ca[j % len(ca)], cb[j % len(cb)]
            name = f"i{i}_{j:02d}"
            kind = j % 5
            if kind == 0:
                exprs.append(f"a.{x} as {name}")
                out[name] = [[*ra, x]]
            elif kind == 1:
                exprs.append(f"coalesce(a.{x}, b.{y}) as {name}")
                out[name] = [[*ra, x], [*rb, y]]
            elif kind == 2:
                exprs.append(f"case when a.{x} is null then b.{y} else 'z' end as {name}")
                out[name] = [[*ra, x], [*rb, y]]
            elif kind == 3:
                exprs.append(f"count(b.{y}) over (partition by a.{x}) as {name}")
                out[name] = [[*rb, y], [*ra, x]]
            else:
                exprs.append(f"b.{y} as {name}")
                out[name] = [[*rb, y]]
        sql = (
            f"with a as (select * from {_rel(*ra)}),\nb as (select * from {_rel(*rb)})\nselect "
            + ",\n    ".join(exprs)
            + "\nfrom a\nleft join b on a.row_id = b.row_id\nwhere a.row_id is not null\n"
        )
        uid = f"model.synth.int_{i:04d}"
        model(uid, "intermediate", f"int_{i:04d}", sql, [a, b], out)
        upstream.append(uid)

    intermediates = upstream[len(staging) :] or staging
    for i in range(n_mart):
        p = rng.choice(intermediates)
        rp, cp = relation[p], columns[p][1:]
        out = {"mart_key": [[*rp, "row_id"], [*rp, cp[0]]], "row_id": [[*rp, "row_id"]]}
        exprs = [
            f"md5(cast(row_id as varchar) || '-' || coalesce(cast({cp[0]} as varchar), '')) as mart_key",
            "row_id",
        ]
        for c in cp[1:]:
            exprs.append(f"coalesce({c}, 'n/a') as m_{c}")
            out[f"m_{c}"] = [[*rp, c]]
        sql = (
            "select " + ",\n    ".join(exprs) + f"\nfrom {_rel(*rp)}\n"
            f"qualify row_number() over (partition by row_id order by row_id) = 1\n"
        )
        uid = f"model.synth.mart_{i:04d}"
        model(uid, "marts", f"mart_{i:04d}", sql, [p], out)

    meta = {
        "dbt_version": "1.11.16",
        "invocation_id": "00000000-0000-0000-0000-000000000001",
        "generated_at": "2026-11-30T00:00:00Z",
        "invocation_started_at": "2026-11-30T00:00:00Z",
        "adapter_type": "duckdb",
        "project_name": "synth",
    }
    manifest = {
        "metadata": {**meta, "dbt_schema_version": SCHEMA_URL.format(kind="manifest", v=12)},
        "nodes": nodes,
        "sources": sources,
    }
    results = {
        "metadata": {**meta, "dbt_schema_version": SCHEMA_URL.format(kind="run-results", v=6)},
        "args": {"which": "build"},
        "results": [
            {
                "unique_id": uid,
                "status": "success",
                "timing": [],
                "message": None,
                "adapter_response": {},
                "failures": None,
            }
            for uid in nodes
        ],
    }
    cat = {
        "metadata": {**meta, "dbt_schema_version": SCHEMA_URL.format(kind="catalog", v=1)},
        "nodes": {k: v for k, v in catalog.items() if k in nodes},
        "sources": {k: v for k, v in catalog.items() if k in sources},
        "errors": None,
    }
    for name, doc in (
        ("manifest", manifest),
        ("run_results", results),
        ("catalog", cat),
        ("truth", truth),
    ):
        (dest / f"{name}.json").write_text(json.dumps(doc))
    return dest
