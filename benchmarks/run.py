"""Side-by-side wall time and peak memory: dbt, dbt-oml and dbt-ol on the same projects.

Run with `make bench` (it installs openlineage-dbt into benchmarks/.venv only). Every variant runs
in a fresh copy of the project (a new pod), variants are interleaved, and each cell is the median
of the repeats. Peak memory is the largest resident set of any process of the run (os.wait4).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / ".work"
BIN = Path(sys.executable).parent


def generate(dest: Path, models: int) -> Path:
    """The bundled project plus `models` generated views in a tree of CTEs, joins and windows."""
    shutil.copytree(
        ROOT / "integration_project",
        dest,
        ignore=shutil.ignore_patterns("target*", "logs", "*.duckdb", "*.wal"),
    )
    gen = dest / "models" / "generated"
    gen.mkdir(parents=True)
    for i in range(models):
        parent = "stg_orders" if i == 0 else f"gen_{(i - 1) // 2:04d}"
        (gen / f"gen_{i:04d}.sql").write_text(
            "{{ config(materialized='view', schema='generated') }}\n"
            f"with src as (select * from {{{{ ref('{parent}') }}}}),\n"
            "cust as (select * from {{ ref('stg_customers') }})\n"
            "select src.order_id, src.customer_id, src.order_date, src.status,\n"
            f"    src.amount * {i % 7 + 1} as amount,\n"
            "    case when src.status = 'returned' then 0 else 1 end as kept,\n"
            "    row_number() over (partition by src.customer_id order by src.order_date) as seq,\n"
            "    cust.country_code\n"
            "from src left join cust on src.customer_id = cust.customer_id\n"
        )
    return dest


def measure(commands: list[list[str]], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of commands run one after the other."""
    wall, peak = 0.0, 0.0
    for command in commands:
        start = time.perf_counter()
        proc = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall += time.perf_counter() - start
        peak = max(peak, usage.ru_maxrss / 1024)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(
                f"{command} failed in {cwd}:\n{proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
            )
    return wall, peak


#: plain dbt with dbt-oml hidden from dbt's plugin discovery: "dbt-oml not installed"
HIDDEN = (
    "import pkgutil, sys\n"
    "found = pkgutil.iter_modules\n"
    "pkgutil.iter_modules = lambda *a, **k: (m for m in found(*a, **k) if m.name != 'dbt_oml')\n"
    "from dbt.cli.main import cli\n"
    "sys.argv[0] = 'dbt'\n"
    "cli()\n"
)
#: variants run with the dbt plugin switched on
PLUGIN_ON = {"dbt build, dbt-oml plugin on"}


def variants() -> dict[str, list[list[str]]]:
    dbt, oml, ol = str(BIN / "dbt"), str(BIN / "dbt-oml"), str(BIN / "dbt-ol")
    return {
        "dbt build": [[dbt, "build", "--profiles-dir", "."]],
        "dbt build, dbt-oml not installed": [
            [str(BIN / "python"), "-c", HIDDEN, "build", "--profiles-dir", "."]
        ],
        "dbt build, dbt-oml plugin on": [[dbt, "build", "--profiles-dir", "."]],
        "dbt build + dbt docs generate": [
            [dbt, "build", "--profiles-dir", "."],
            [dbt, "docs", "generate", "--profiles-dir", "."],
        ],
        "dbt-oml build": [[oml, "build", "--profiles-dir", "."]],
        "dbt-oml build --no-docs-generate": [
            [oml, "build", "--profiles-dir", ".", "--no-docs-generate"]
        ],
        "dbt-oml build --no-docs-generate --no-column-lineage": [
            [oml, "build", "--profiles-dir", ".", "--no-docs-generate", "--no-column-lineage"]
        ],
        "dbt-ol build": [[ol, "build", "--profiles-dir", "."]],
    }


#: What each variant's own cost is measured against: the same dbt work without lineage.
BASELINE = {
    "dbt-oml build": "dbt build + dbt docs generate",
    "dbt build": "dbt build, dbt-oml not installed",
}


def bench(name: str, models: int, repeats: int) -> list[str]:
    samples: dict[str, list[tuple[float, float]]] = {v: [] for v in variants()}
    for r in range(repeats):
        for variant, commands in variants().items():
            cwd = generate(
                WORK / f"{name}-{r}-{len(samples[variant])}-{abs(hash(variant))}", models
            )
            env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENLINEAGE", "DBT_"))}
            env["DO_NOT_TRACK"] = "1"
            env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # dbt-ol runs `dbt` from PATH
            if variant in PLUGIN_ON:
                env["DBT_OML_PLUGIN"] = "1"
            if variant.startswith("dbt-ol"):
                env |= {
                    "OPENLINEAGE__TRANSPORT__TYPE": "file",
                    "OPENLINEAGE__TRANSPORT__LOG_FILE_PATH": str(cwd / "ol-events.jsonl"),
                    "OPENLINEAGE__TRANSPORT__APPEND": "true",
                }
            samples[variant].append(measure(commands, cwd, env))
            shutil.rmtree(cwd)
            print(f"  {name} {variant} #{r + 1}: {samples[variant][-1][0]:.2f}s", file=sys.stderr)
    med = {
        v: (statistics.median(w for w, _ in s), statistics.median(m for _, m in s))
        for v, s in samples.items()
    }
    base = med["dbt build"][0]
    rows = []
    for variant, (wall, mem) in med.items():
        ref = med[BASELINE.get(variant, "dbt build")][0]
        rows.append(
            f"| {name} | {variant} | {wall:.2f} | {wall / base:.2f} | {wall - ref:+.2f} | {mem:.0f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    rows = bench("bundled (14 nodes + 19 tests)", 0, args.repeats)
    rows += bench(f"generated (+{args.models} models)", args.models, max(2, args.repeats - 1))
    print(
        "| project | variant | wall s (median) | x dbt build | overhead s (vs same dbt work) | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
