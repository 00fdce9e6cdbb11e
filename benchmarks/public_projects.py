"""Column lineage on a public dbt-duckdb project nobody here wrote: coverage, and the UNPIVOT rule.

Give it a checkout of any dbt-duckdb project (`--project DIR`: the folder holding
dbt_project.yml). The project's own code is read where it is and never copied; the script writes
only a profiles.yml (DuckDB, a scratch file) in a temporary copy of it, then:

1. `dbt compile` (no data is needed: the compiled SQL is what dbt-oml analyses);
2. `dbt-oml lineage --json` (every model; no catalog.json, so a relation's columns come from the
   analysed SQL of the models that build it, as in a pod's first run);
3. coverage: SQL models with column lineage, and each opaque model's reason;
4. the UNPIVOT rule, checked without sqlglot: every model whose compiled SQL has the simple
   shape `WITH x AS (UNPIVOT <relation> ON c1, c2, ... INTO NAME n VALUE v) SELECT ... FROM x`
   (items that are a column, `cast(col as type) as col`, or `ROW_NUMBER() OVER () as id`) gets
   its expected edges from DuckDB's semantics, read by regular expressions: v reads every cN,
   n reads nothing, a passed-through column reads itself, ROW_NUMBER() nothing. Precision,
   recall and F1 of dbt-oml's column edges against that, and every false or missing edge.

    .venv/bin/python benchmarks/public_projects.py --project /path/to/checkout/projects/x/dbt

Results: benchmarks/README.md, section 9 (with the repository and commit measured).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

BIN = Path(sys.executable).parent
_UNPIVOT = re.compile(
    r"with\s+(?P<cte>\w+)\s+as\s*\(\s*unpivot\s+(?P<rel>[\w\".]+)\s+on\s+(?P<on>.+?)\s+into\s+"
    r"name\s+(?P<name>\w+)\s+value\s+(?P<value>\w+)\s*\)\s*select\s+(?P<items>.+?)\s+from\s+"
    r"(?P=cte)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_CAST = re.compile(r"cast\(\s*(\w+)\s+as\s+\w+\s*\)\s+as\s+(\w+)$", re.IGNORECASE)
_ROW_NUMBER = re.compile(r"row_number\(\)\s+over\s*\(\s*\)\s+as\s+(\w+)$", re.IGNORECASE)

Edge = tuple[str, str, str]
"""(output column, input relation, input column), names lower-cased as DuckDB compares them."""


@dataclass(frozen=True)
class Scored:
    models: int
    true: int
    false: list[tuple[str, Edge]]
    missing: list[tuple[str, Edge]]


def _unquote(name: str) -> str:
    name = name.strip()
    return name[1:-1] if name[:1] in {'"', "'"} and name[-1:] == name[:1] else name


def expected_edges(sql: str) -> set[Edge] | None:
    """The edges DuckDB's UNPIVOT semantics give this SQL, or None when it has another shape."""
    match = _UNPIVOT.search(sql.strip())
    if match is None:
        return None
    relation = ".".join(_unquote(p) for p in match["rel"].split(".")).lower()
    unpivoted = [_unquote(c).lower() for c in match["on"].split(",")]
    name, value = match["name"].lower(), match["value"].lower()
    edges: set[Edge] = set()
    for item in (i.strip() for i in match["items"].split(",")):
        if _ROW_NUMBER.match(item):
            continue
        cast = _CAST.match(item)
        source, output = (cast[1], cast[2]) if cast else (item, item)
        source, output = _unquote(source).lower(), _unquote(output).lower()
        if not re.fullmatch(r"\w+", source):
            return None  # an expression this rule does not read
        if source == value:
            edges |= {(output, relation, c) for c in unpivoted}
        elif source != name:
            edges.add((output, relation, source))
    return edges


def engine_edges(document: dict, model: str) -> set[Edge]:
    nodes = {n["id"]: n for n in document["graph"]["nodes"]}
    return {
        (e["to"][1].lower(), nodes[e["from"][0]]["relation"].lower(), e["from"][1].lower())
        for e in document["graph"]["edges"]
        if e["to"][0] == model
    }


def score(document: dict, compiled: dict[str, str]) -> Scored:
    true, false, missing, models = 0, [], [], 0
    for model, sql in sorted(compiled.items()):
        expected = expected_edges(sql)
        if expected is None:
            continue
        models += 1
        found = engine_edges(document, model)
        true += len(found & expected)
        false += [(model, e) for e in sorted(found - expected)]
        missing += [(model, e) for e in sorted(expected - found)]
    return Scored(models, true, false, missing)


def _run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:2])} failed in {cwd}:\n{done.stdout[-2000:]}{done.stderr}")
    return done.stdout


def measure(project: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="dbt-oml-public-") as scratch:
        copy = Path(scratch) / project.name
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns("target", "dbt_packages"))
        profile = _profile_name(copy / "dbt_project.yml")
        (copy / "profiles.yml").write_text(
            f"{profile}:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
            "      path: scratch.duckdb\n      threads: 2\n"
        )
        _run([str(BIN / "dbt"), "compile", "--profiles-dir", "."], copy)
        document = json.loads(
            _run([str(BIN / "dbt-oml"), "lineage", "--json", "--profiles-dir", "."], copy)
        )
        manifest = json.loads((copy / "target" / "manifest.json").read_text())
    models = {
        uid: node
        for uid, node in manifest["nodes"].items()
        if node["resource_type"] == "model"
        and node.get("language", "sql") == "sql"
        and node["config"].get("materialized") != "ephemeral"
    }
    graph = {n["id"]: n for n in document["graph"]["nodes"]}
    opaque = {uid: graph[uid]["opaque"] for uid in models if graph.get(uid, {}).get("opaque")}
    print(f"SQL models: {len(models)}; with column lineage: {len(models) - len(opaque)}")
    for reason, count in Counter(opaque.values()).most_common():
        print(f"  opaque ({count}): {reason}")
    compiled = {uid: node.get("compiled_code") or "" for uid, node in models.items()}
    result = score(document, compiled)
    found = result.true + len(result.false)
    wanted = result.true + len(result.missing)
    precision = result.true / found if found else 1.0
    recall = result.true / wanted if wanted else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    print(
        f"UNPIVOT rule: {result.models} models, {wanted} expected edges; P {precision:.3f} "
        f"R {recall:.3f} F1 {f1:.3f}; false {len(result.false)}, missing {len(result.missing)}"
    )
    for model, edge in result.false[:20]:
        print(f"  false   {model}: {edge}")
    for model, edge in result.missing[:20]:
        print(f"  missing {model}: {edge}")


def _profile_name(project_file: Path) -> str:
    match = re.search(r"^profile:\s*['\"]?([\w-]+)", project_file.read_text(), re.MULTILINE)
    return match[1] if match else "default"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--project", type=Path, required=True, help="the dbt project's folder")
    measure(parser.parse_args().project.resolve())


if __name__ == "__main__":
    main()
