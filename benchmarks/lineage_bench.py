"""Column-lineage engine benchmark: cold, warm, one model changed; naive lineage(); openlineage-sql.

`make bench-lineage` runs it. Each measurement runs in its own process (so peak RSS is per phase),
with the pure-Python sqlglot of .venv and the compiled sqlglot[c] of benchmarks/.venv side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / ".work" / "lineage"
PURE = ROOT / ".venv" / "bin" / "python"
COMPILED = ROOT / "benchmarks" / ".venv-c" / "bin" / "python"
OPENLINEAGE = ROOT / "benchmarks" / ".venv" / "bin" / "python"
sys.path.insert(0, str(ROOT / "benchmarks"))


def _truth_score(models: dict, truth: dict) -> tuple[int, int]:
    exact = 0
    for uid, want in truth.items():
        lin = models.get(uid)
        if lin is None:
            continue
        got = {
            e.output: sorted([s.catalog, s.schema, s.table, s.column] for s, _ in e.inputs)
            for e in lin.columns
        }
        if got == {k: sorted(v) for k, v in want.items()}:
            exact += 1
    return exact, len(truth)


def phase(directory: Path, name: str) -> dict:
    from dbt_oml.artifacts import read_artifacts
    from dbt_oml.lineage.batch import analyse_models
    from dbt_oml.lineage.cache import DiskCache

    cache_dir = directory / "cache"
    if name == "cold":
        shutil.rmtree(cache_dir, ignore_errors=True)
    if name == "changed":
        results = json.loads((directory / "run_results.json").read_text())
        manifest = json.loads((directory / "manifest.json").read_text())
        uid = "model.synth.stg_0000"
        manifest["nodes"][uid]["compiled_code"] += f"\n-- changed {time.time()}\n"
        (directory / "manifest.json").write_text(json.dumps(manifest))
        del results
    start = time.perf_counter()
    arts = read_artifacts(directory)
    read_s = time.perf_counter() - start
    wanted = set(arts.manifest.nodes)
    start = time.perf_counter()
    report = analyse_models(
        arts,
        wanted=wanted,
        dialect="duckdb",
        cache=DiskCache(cache_dir),
        workers=os.cpu_count() or 1,
    )
    seconds = time.perf_counter() - start
    exact, total = _truth_score(report.models, json.loads((directory / "truth.json").read_text()))
    return {
        "seconds": seconds,
        "read_s": read_s,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "analysed": report.analysed,
        "hits": report.cache_hits,
        "opaque": len(report.opaque),
        "exact": exact,
        "total": total,
    }


def naive(directory: Path, sample: int) -> dict:
    """Seed 000's loop: sqlglot.lineage.lineage() once per column, on a sample of models."""
    import sqlglot.lineage

    manifest = json.loads((directory / "manifest.json").read_text())
    catalog = json.loads((directory / "catalog.json").read_text())
    rels = {**manifest["nodes"], **manifest["sources"]}
    schema: dict = {}
    for section in ("nodes", "sources"):
        for uid, entry in catalog[section].items():
            n = rels[uid]
            table = n.get("alias") or n.get("identifier")
            schema.setdefault(n["database"], {}).setdefault(n["schema"], {})[table] = {
                c: v["type"] for c, v in entry["columns"].items()
            }
    models = sorted(manifest["nodes"])[:: max(1, len(manifest["nodes"]) // sample)][:sample]
    columns_done, total_columns = (
        0,
        sum(len(catalog["nodes"][m]["columns"]) for m in manifest["nodes"]),
    )
    start = time.perf_counter()
    for uid in models:
        for column in catalog["nodes"][uid]["columns"]:
            with contextlib.suppress(Exception):  # count the attempt either way
                sqlglot.lineage.lineage(
                    column, manifest["nodes"][uid]["compiled_code"], schema=schema, dialect="duckdb"
                )
            columns_done += 1
    seconds = time.perf_counter() - start
    return {
        "seconds_sample": seconds,
        "columns_sample": columns_done,
        "columns_total": total_columns,
        "seconds_extrapolated": seconds / max(columns_done, 1) * total_columns,
    }


def ol_sql(directory: Path) -> dict:
    """dbt-ol's engine (openlineage-sql): time and recall of one-hop column edges."""
    import openlineage_sql

    manifest = json.loads((directory / "manifest.json").read_text())
    truth = json.loads((directory / "truth.json").read_text())
    found = total = 0
    start = time.perf_counter()
    for uid, node in manifest["nodes"].items():
        meta = openlineage_sql.parse([node["compiled_code"]], dialect="duckdb")
        got = set()
        for cl in meta.column_lineage:
            for src in cl.lineage:
                table = src.origin.name if src.origin else ""
                got.add((cl.descendant.name, table.split(".")[-1], src.name))
        for output, inputs in truth[uid].items():
            for _, _, table, column in inputs:
                total += 1
                found += (output, table, column) in got
    return {"seconds": time.perf_counter() - start, "recall": found / max(total, 1), "edges": total}


def run(python: Path, *args: str) -> dict:
    out = subprocess.run([str(python), __file__, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,500,2000")
    parser.add_argument("--phase")
    parser.add_argument("--dir")
    parser.add_argument("--sample", type=int, default=10)
    args = parser.parse_args()
    if args.phase:
        directory = Path(args.dir)
        result = {
            "naive": lambda: naive(directory, args.sample),
            "olsql": lambda: ol_sql(directory),
        }.get(args.phase, lambda: phase(directory, args.phase))()
        print(json.dumps(result))
        return
    from lineage_gen import generate

    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        base = WORK / f"synth-{size}"
        shutil.rmtree(base, ignore_errors=True)
        generate(base, size)
        for label, python in (("pure", PURE), ("sqlglot[c]", COMPILED)):
            work = WORK / f"synth-{size}-{label.replace('[', '').replace(']', '')}"
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work)
            cold = run(python, "--phase", "cold", "--dir", str(work))
            warm = run(python, "--phase", "warm", "--dir", str(work))
            changed = run(python, "--phase", "changed", "--dir", str(work))
            rows.append(
                f"| {size} | {label} | {cold['seconds']:.2f} | {warm['seconds']:.2f} | {changed['seconds']:.2f} "
                f"| {changed['analysed']} | {cold['exact']}/{cold['total']} | {cold['rss_mb']:.0f} | {cold['read_s']:.2f} |"
            )
            print(
                f"  {size} {label}: cold {cold['seconds']:.2f}s warm {warm['seconds']:.2f}s",
                file=sys.stderr,
            )
        naive_r = run(PURE, "--phase", "naive", "--dir", str(base), "--sample", str(args.sample))
        ol = run(OPENLINEAGE, "--phase", "olsql", "--dir", str(base))
        rows.append(
            f"| {size} | naive lineage() per column (pure, extrapolated from {naive_r['columns_sample']} columns) "
            f"| {naive_r['seconds_extrapolated']:.1f} | | | | | | |"
        )
        rows.append(
            f"| {size} | openlineage-sql (dbt-ol) | {ol['seconds']:.2f} | | | | recall {ol['recall']:.1%} of {ol['edges']} edges | | |"
        )
    print(
        "| models | engine | cold s | warm s | one changed s | re-analysed | exact models "
        "| peak RSS MiB (cold, main process) | artifact read s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
