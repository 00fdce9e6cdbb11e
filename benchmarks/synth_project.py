"""The synthetic corpus of lineage_gen.py as a real dbt-duckdb project, with its ground truth.

Sources are empty tables in an attached DuckDB file (`raw`); every model is a view in
`warehouse.duckdb`, schema = layer (staging, intermediate, marts). `truth.json` holds, per model,
each output column's direct inputs as (database, schema, table, column), as lineage_gen writes it.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lineage_gen

_RELATION = re.compile(r'"(raw|warehouse)"\."(\w+)"\."(\w+)"')
#: window counts are BIGINT; cast to VARCHAR as the corpus' other columns, so DuckDB binds every
#: COALESCE and CASE over them (the lineage, and so the truth, is unchanged)
_COUNT = re.compile(r"(count\(\w+\.\w+\) over \(partition by \w+\.\w+\))")

PROJECT = """\
name: synth
version: "1.0"
profile: synth
model-paths: ["models"]
macro-paths: ["macros"]
models:
  synth:
    +materialized: view
    staging: {+schema: staging}
    intermediate: {+schema: intermediate}
    marts: {+schema: marts}
"""
PROFILES = """\
synth:
  target: local
  outputs:
    local:
      type: duckdb
      path: warehouse.duckdb
      threads: 2
      attach:
        - path: raw.duckdb
          alias: raw
"""
SCHEMA_NAME = """\
{% macro generate_schema_name(custom_schema_name, node) -%}
  {{ custom_schema_name or target.schema }}
{%- endmacro %}
"""


def _templated(sql: str) -> str:
    def ref(m: re.Match[str]) -> str:
        db, _, name = m.groups()
        return f"{{{{ source('raw', '{name}') }}}}" if db == "raw" else f"{{{{ ref('{name}') }}}}"

    return _COUNT.sub(r"cast(\1 as varchar)", _RELATION.sub(ref, sql))


def write_project(dest: Path, models: int, seed: int = 7) -> Path:
    """Write the dbt project (and raw.duckdb with its empty source tables) into `dest`."""
    import duckdb

    with tempfile.TemporaryDirectory() as scratch:
        arts = lineage_gen.generate(Path(scratch), models, seed=seed)
        manifest = json.loads((arts / "manifest.json").read_text())
        catalog = json.loads((arts / "catalog.json").read_text())
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(arts / "truth.json", dest / "truth.json")
    (dest / "dbt_project.yml").write_text(PROJECT)
    (dest / "profiles.yml").write_text(PROFILES)
    (dest / "macros").mkdir(exist_ok=True)
    (dest / "macros" / "generate_schema_name.sql").write_text(SCHEMA_NAME)
    for node in manifest["nodes"].values():
        folder = dest / "models" / node["schema"]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{node['name']}.sql").write_text(_templated(node["compiled_code"]))
    tables = sorted(s["name"] for s in manifest["sources"].values())
    (dest / "models" / "sources.yml").write_text(
        "version: 2\nsources:\n  - name: raw\n    database: raw\n    schema: src\n    tables:\n"
        + "".join(f"      - name: {t}\n" for t in tables)
    )
    raw = dest / "raw.duckdb"
    raw.unlink(missing_ok=True)
    with duckdb.connect(str(raw)) as con:
        con.execute("create schema src")
        for uid, entry in catalog["sources"].items():
            cols = ", ".join(f'"{c["name"]}" {c["type"]}' for c in entry["columns"].values())
            con.execute(f"create table src.{uid.rsplit('.', 1)[1]} ({cols})")
    return dest


if __name__ == "__main__":
    write_project(Path(sys.argv[1]), int(sys.argv[2]))
