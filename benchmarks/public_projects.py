"""Column lineage on a public dbt-duckdb project nobody here wrote: coverage, and rules for
UNPIVOT, PIVOT and COLUMNS()/EXCLUDE/REPLACE whose truth comes from DuckDB, not from the engine.

Give it a checkout of any dbt-duckdb project (`--project DIR`: the folder holding
dbt_project.yml). The project's own code is read where it is and never copied into this repo; the
script works in a temporary copy, where it writes a profiles.yml (DuckDB, a scratch file), then:

1. `dbt compile` (no data is needed: the compiled SQL is what dbt-oml analyses), or with
   `--build`: `dbt build` (seeds, models, tests) and `dbt docs generate`, so the catalog exists;
   `--rows NAME` first gives the sources rows (`public_rows.py`: the SQL is theirs, the rows
   ours) and `--package DIR` puts a dbt package checkout in `dbt_packages/` (no `dbt deps`:
   no network here);
2. `dbt-oml lineage --json` (every model; without `--build` no catalog.json, so a relation's
   columns come from the analysed SQL of the models that build it, as in a pod's first run);
3. coverage: SQL models with column lineage, and each opaque model's reason;
4. rules, each scoring dbt-oml's column edges (precision, recall, F1, every false or missing edge):
   - UNPIVOT (regular expressions, no build needed): every model whose compiled SQL has the
     shape `WITH x AS (UNPIVOT <relation> ON c1, c2, ... INTO NAME n VALUE v) SELECT ... FROM x`
     (items that are a column, `cast(col as type) as col`, or `ROW_NUMBER() OVER () as id`):
     v reads every cN, n nothing, a passed-through column itself, ROW_NUMBER() nothing;
   - PIVOT (`--build`): every `PIVOT <relation> ON col USING agg(v) [GROUP BY ...]` with no IN
     list, alone or in a CTE: DuckDB's DESCRIBE of that statement on the built database gives
     its columns; each pivoted one reads v (DIRECT). A model output is scored when it is such a
     column, or the SQL's one `col AS output` of it; the keys too when the model is the PIVOT
     alone. The ON column must be among the model's row inputs (INDIRECT, as in section 8);
   - COLUMNS()/EXCLUDE/REPLACE (`--build`): a model with `COLUMNS(`, `* EXCLUDE` or
     `* REPLACE` over exactly one relation: DESCRIBE of the built model gives the columns that
     came out, DESCRIBE of the relation (a source's `external_location` too) the ones that went
     in; each output that the input has reads that column.

    .venv/bin/python benchmarks/public_projects.py --project /path/to/checkout/projects/x/dbt
    .venv/bin/python benchmarks/public_projects.py --project /tmp/expat/dbt --build \
        --rows expat --package /tmp/dbt-utils

Results: benchmarks/README.md, section 9 (with the repository and commit measured).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import string
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import duckdb
import yaml
from public_rows import WRITERS

BIN = Path(sys.executable).parent
_UNPIVOT = re.compile(
    r"with\s+(?P<cte>\w+)\s+as\s*\(\s*unpivot\s+(?P<rel>[\w\".]+)\s+on\s+(?P<on>.+?)\s+into\s+"
    r"name\s+(?P<name>\w+)\s+value\s+(?P<value>\w+)\s*\)\s*select\s+(?P<items>.+?)\s+from\s+"
    r"(?P=cte)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_CAST = re.compile(r"cast\(\s*(\w+)\s+as\s+\w+\s*\)\s+as\s+(\w+)$", re.IGNORECASE)
_ROW_NUMBER = re.compile(r"row_number\(\)\s+over\s*\(\s*\)\s+as\s+(\w+)$", re.IGNORECASE)
_PIVOT = re.compile(
    r"\bpivot\s+(?P<rel>[\w\".]+)\s+on\s+(?P<on>[\w\"]+)\s+using\s+\w+\(\s*(?P<arg>[\w\"]+)\s*\)"
    r"(?:\s+group\s+by\s+(?P<group>[\w\",\s]+?))?\s*(?=\)|;|$)",
    re.IGNORECASE,
)
_RENAME = re.compile(r"([\w\"]+)\s+as\s+([\w\"]+)", re.IGNORECASE)
_STAR_SETS = re.compile(r"columns\s*\(|\*\s*(?:exclude|replace)\b", re.IGNORECASE)

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


def engine_rows(document: dict, model: str) -> set[tuple[str, str]]:
    nodes = {n["id"]: n for n in document["graph"]["nodes"]}
    return {
        (nodes[r["from"][0]]["relation"].lower(), r["from"][1].lower())
        for r in document["graph"]["rows"]
        if r["to"] == model
    }


def score(
    document: dict, expected: dict[str, set[Edge]], outputs: dict[str, set[str]] | None = None
) -> Scored:
    """Engine edges against `expected`, per model; only on `outputs[model]` when given."""
    true, false, missing = 0, [], []
    for model, want in sorted(expected.items()):
        found = engine_edges(document, model)
        if outputs is not None:
            found = {e for e in found if e[0] in outputs[model]}
        true += len(found & want)
        false += [(model, e) for e in sorted(found - want)]
        missing += [(model, e) for e in sorted(want - found)]
    return Scored(len(expected), true, false, missing)


def _relation(text: str) -> str:
    return ".".join(_unquote(p) for p in text.split(".")).lower()


def _describe(con: duckdb.DuckDBPyConnection, query: str) -> list[str]:
    return [row[0] for row in con.execute(f"describe {query}").fetchall()]


def pivot_truth(
    con: duckdb.DuckDBPyConnection, sql: str, outputs: list[str]
) -> tuple[set[Edge], tuple[str, str]] | None:
    """The PIVOT rule's edges for a model's built `outputs`, and the ON column it must have among
    its row inputs; None when the SQL has no data-defined PIVOT of the shape the rule reads."""
    match = _PIVOT.search(sql)
    if match is None:
        return None
    relation, on, arg = _relation(match["rel"]), _unquote(match["on"]), _unquote(match["arg"])
    columns = {c.lower() for c in _describe(con, match[0])}
    if match["group"]:
        keys = {_unquote(k).lower() for k in match["group"].split(",")}
    else:
        keys = {c.lower() for c in _describe(con, match["rel"])} - {on.lower(), arg.lower()}
    pivoted = columns - keys
    renames = Counter((_unquote(b).lower(), _unquote(a).lower()) for a, b in _RENAME.findall(sql))
    alone = sql.strip().rstrip(";").strip().lower() == match[0].strip().lower()
    edges: set[Edge] = set()
    for output in (o.lower() for o in outputs):
        named = [a for (b, a) in renames if b == output and a in pivoted]
        source = output if output in pivoted else (named[0] if len(named) == 1 else None)
        if source is not None:
            edges.add((output, relation, arg.lower()))
        elif alone and output in keys:
            edges.add((output, relation, output))
    return edges, (relation, on.lower())


def star_set_truth(
    con: duckdb.DuckDBPyConnection, node: dict, upstream: dict, outputs: list[str], relation: str
) -> set[Edge] | None:
    """The COLUMNS()/EXCLUDE/REPLACE rule's edges: each output the one input (`relation`, as
    the document names it: a source's dataset, not its files) has reads it."""
    if not _STAR_SETS.search(node.get("compiled_code") or ""):
        return None
    location = upstream.get("meta", {}).get("external_location")
    if location:  # dbt-duckdb's formatters, as it renders the source
        fields = {k: upstream[k] for k in ("name", "identifier", "schema", "database")}
        formatter = upstream["meta"].get("formatter", "newstyle")
        if formatter == "oldstyle":
            location = location % fields
        elif formatter == "template":
            location = string.Template(location).substitute(fields)
        else:
            location = location.format(**fields)
        inputs = _describe(con, f"select * from {location}")
    else:
        inputs = _describe(con, upstream["relation_name"])
    taken = {c.lower() for c in inputs}
    return {(o.lower(), relation.lower(), o.lower()) for o in outputs if o.lower() in taken}


def _run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:2])} failed in {cwd}:\n{done.stdout[-2000:]}{done.stderr}")
    return done.stdout


def _report(name: str, result: Scored) -> None:
    found = result.true + len(result.false)
    wanted = result.true + len(result.missing)
    precision = result.true / found if found else 1.0
    recall = result.true / wanted if wanted else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    print(
        f"{name} rule: {result.models} models, {wanted} expected edges; P {precision:.3f} "
        f"R {recall:.3f} F1 {f1:.3f}; false {len(result.false)}, missing {len(result.missing)}"
    )
    for model, edge in result.false[:20]:
        print(f"  false   {model}: {edge}")
    for model, edge in result.missing[:20]:
        print(f"  missing {model}: {edge}")


def _prepare(copy: Path, *, rows: str | None, packages: list[Path]) -> None:
    for package in packages:
        name = yaml.safe_load((package / "dbt_project.yml").read_text())["name"]
        shutil.copytree(package, copy / "dbt_packages" / name)
    attach = WRITERS[rows](copy) if rows else []
    profile = _profile_name(copy / "dbt_project.yml")
    (copy / "profiles.yml").write_text(
        f"{profile}:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n"
        "      path: scratch.duckdb\n      threads: 2\n"
        + "".join(f"      attach:\n        - path: {p.name}\n" for p in attach[:1])
        + "".join(f"        - path: {p.name}\n" for p in attach[1:])
    )


def _built_truth(copy: Path, manifest: dict, models: dict[str, dict], document: dict) -> None:
    """The PIVOT and COLUMNS()/EXCLUDE/REPLACE rules, on the database `dbt build` left."""
    nodes = {**manifest["nodes"], **manifest["sources"]}
    graph = {n["id"]: n for n in document["graph"]["nodes"]}
    pivots: dict[str, set[Edge]] = {}
    sets: dict[str, set[Edge]] = {}
    outputs: dict[str, set[str]] = {}
    on_found = 0
    con = duckdb.connect(str(copy / "scratch.duckdb"), read_only=True)
    for path in copy.glob("*.duckdb"):
        if path.name != "scratch.duckdb":
            con.execute(f"attach '{path}' (read_only)")
    with contextlib.chdir(copy):
        for uid, node in sorted(models.items()):
            built = _describe(con, node["relation_name"])
            sql = node.get("compiled_code") or ""
            pivot = pivot_truth(con, sql, built)
            if pivot is not None and pivot[0]:
                pivots[uid] = pivot[0]
                outputs[uid] = {e[0] for e in pivot[0]}
                on_found += pivot[1] in engine_rows(document, uid)
            upstream = node["depends_on"]["nodes"]
            if len(upstream) == 1:
                relation = graph[upstream[0]]["relation"]
                edges = star_set_truth(con, node, nodes[upstream[0]], built, relation)
                if edges:
                    sets[uid] = edges
                    outputs[uid] = {o.lower() for o in built}
    con.close()
    _report("PIVOT", score(document, pivots, outputs))
    print(f"  ON column among the model's row inputs: {on_found}/{len(pivots)}")
    _report("COLUMNS()/EXCLUDE/REPLACE", score(document, sets, outputs))


def measure(project: Path, *, build: bool, rows: str | None, packages: list[Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="dbt-oml-public-") as scratch:
        copy = Path(scratch) / project.name
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns("target", "dbt_packages"))
        _prepare(copy, rows=rows, packages=packages)
        dbt = [str(BIN / "dbt")]
        if build:
            _run([*dbt, "build", "--profiles-dir", "."], copy)
            _run([*dbt, "docs", "generate", "--profiles-dir", "."], copy)
        else:
            _run([*dbt, "compile", "--profiles-dir", "."], copy)
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
        unpivots = {
            uid: edges
            for uid, node in models.items()
            if (edges := expected_edges(node.get("compiled_code") or "")) is not None
        }
        _report("UNPIVOT", score(document, unpivots))
        if build:
            _built_truth(copy, manifest, models, document)


def _profile_name(project_file: Path) -> str:
    match = re.search(r"^profile:\s*['\"]?([\w-]+)", project_file.read_text(), re.MULTILINE)
    return match[1] if match else "default"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--project", type=Path, required=True, help="the dbt project's folder")
    parser.add_argument("--build", action="store_true", help="dbt build + docs generate first")
    parser.add_argument("--rows", choices=sorted(WRITERS), help="our rows for its sources")
    parser.add_argument(
        "--package", type=Path, action="append", default=[], help="a dbt package checkout"
    )
    args = parser.parse_args()
    measure(
        args.project.resolve(),
        build=args.build,
        rows=args.rows,
        packages=[p.resolve() for p in args.package],
    )


if __name__ == "__main__":
    main()
